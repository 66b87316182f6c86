-- jobctl._archive_lease and jobctl._archive_release: the archive exporter's lease,
-- one run at a time, that no login but the schema owner can take or see. The exporter's use of it
-- (two runs, a run killed, the old advisory key held): tests/test_archive.py.
begin;
select plan(15);

select is((select count(*)::integer from jobctl._archive_lease), 1, 'one lease row');
select is((select holder from jobctl._archive_lease), null, 'free to begin with');

select ok(jobctl._archive_lease('00000000-0000-0000-0000-00000000000a', 60), 'a run takes the free lease');
select results_eq(
    $$select holder_pid = pg_backend_pid(), expires_at > clock_timestamp() + interval '50 seconds'
      from jobctl._archive_lease$$,
    $$values (true, true)$$,
    'the lease records the taker''s backend and its expiry'
);
select ok(jobctl._archive_lease('00000000-0000-0000-0000-00000000000a', 600), 'its holder renews it');
select ok(not jobctl._archive_lease('00000000-0000-0000-0000-00000000000b', 60), 'another run does not take a held lease');
select ok(not jobctl._archive_release('00000000-0000-0000-0000-00000000000b'), 'nor give it up');

update jobctl._archive_lease set expires_at = clock_timestamp() - interval '1 second';
select ok(jobctl._archive_lease('00000000-0000-0000-0000-00000000000b', 60), 'an expired lease is taken over');
select ok(not jobctl._archive_lease('00000000-0000-0000-0000-00000000000a', 60), 'and its former holder''s renewal fails');

-- a run killed with its connection: its backend is gone (no pid is above 2^22 on Linux)
update jobctl._archive_lease set holder_pid = 2147483647;
select ok(jobctl._archive_lease('00000000-0000-0000-0000-00000000000a', 60), 'the lease of a backend that is gone is taken');

select ok(jobctl._archive_release('00000000-0000-0000-0000-00000000000a'), 'its holder gives it up');
select is((select holder from jobctl._archive_lease), null, 'and it is free');

select throws_ok(
    $$select jobctl._archive_lease('00000000-0000-0000-0000-00000000000a', 3601)$$,
    'JC001', 'the archive lease needs a holder and 1 to 3600 seconds', 'a lease is 1 to 3600 seconds'
);

select is_empty(
    $$select r.rolname from pg_catalog.pg_roles as r
      where r.rolname like 'jobctl\_%' and (
          has_table_privilege(r.oid, 'jobctl._archive_lease', 'SELECT, UPDATE')
          or has_function_privilege(r.oid, 'jobctl._archive_lease(uuid, integer)', 'EXECUTE')
          or has_function_privilege(r.oid, 'jobctl._archive_release(uuid)', 'EXECUTE'))
      union all
      select 'public' where has_function_privilege('public', 'jobctl._archive_lease(uuid, integer)', 'EXECUTE')$$,
    'no role but the owner may see, take or give up the lease'
);
select isnt(obj_description('jobctl._archive_lease'::regclass), null, 'the lease table has a comment');

select * from finish();
rollback;
