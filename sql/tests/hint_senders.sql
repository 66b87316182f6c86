-- jobctl.hint_senders: the process ids of the sessions whose wake-up hints count (sessions of
-- jobctl's roles, superusers, the schema owner); granted to jobctl_worker only. The sessions of
-- other logins are checked with real logins in tests/test_worker_hostile.py (a session's role in
-- pg_stat_activity is its login's, which SET SESSION AUTHORIZATION does not change).
begin;
select plan(6);

select has_function('jobctl', 'hint_senders', array[]::text[], 'hint_senders() exists');
select ok(pg_backend_pid() = any(jobctl.hint_senders()), 'a superuser''s session counts');
select is(
    (select array_agg(p order by p) from (select distinct unnest(jobctl.hint_senders()) as p) as d),
    jobctl.hint_senders(), 'each process once, in order'
);
select ok(
    not (
        select bool_or(a.pid = any(jobctl.hint_senders()))
        from pg_stat_activity as a
        where a.usesysid is null
    ),
    'a backend with no role (checkpointer, WAL writer) does not count'
);
select ok(has_function_privilege('jobctl_worker', 'jobctl.hint_senders()', 'execute'), 'granted to jobctl_worker');
select ok(not has_function_privilege('public', 'jobctl.hint_senders()', 'execute'), 'not to PUBLIC');

select * from finish();
rollback;
