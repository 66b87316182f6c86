-- jobctl's locks (jobctl._try_lock, jobctl._wait_lock): rows of
-- jobctl._lock and jobctl._tenant_lock that only the owner can lock, every bucket a key can hash to
-- has its row, and no function of the schema takes an advisory lock (any login can take those).
-- That another login cannot hold them up with its own locks: tests/test_hostile.py.
begin;
select plan(11);

select results_eq(
    $$select l.name, count(*)::integer, min(l.bucket), max(l.bucket)
      from jobctl._lock as l group by l.name order by l.name$$,
    $$values ('hint', 4096, 0, 4095), ('hint-busy', 1, 0, 0), ('lanes', 1024, 0, 1023),
        ('maintain', 1, 0, 0), ('reap', 1, 0, 0), ('rotate', 1, 0, 0)$$,
    'each shared lock has its buckets, 0 to n - 1'
);

select is(
    (
        select count(*)::integer
        from (values ('hint'), ('lanes')) as n (name)
        cross join generate_series(1, 20000) as g (i)
        where not exists (
            select from jobctl._lock as l
            where l.name = n.name and l.bucket = jobctl._lock_bucket(n.name, 'k' || g.i)
        )
    ),
    0, 'every key hashes to a bucket that has its row'
);

select is(jobctl._lock_bucket('reap', null), 0, 'a singleton is bucket 0');

select is(
    (
        select count(*)::integer
        from pg_catalog.pg_proc as p
        where p.pronamespace = 'jobctl'::regnamespace and p.prosrc ~ 'pg_(try_)?advisory'
    ),
    0, 'no jobctl function takes an advisory lock'
);

select is(
    (
        select count(*)::integer
        from (values ('jobctl._lock'), ('jobctl._tenant_lock'), ('jobctl_owner._tick_lock'), ('jobctl._hint_key')) as t (tbl)
        cross join (
            values ('public'), ('jobctl_reader'), ('jobctl_writer'), ('jobctl_worker'), ('jobctl_api'),
            ('jobctl_admin')
        ) as r (role)
        cross join (values ('SELECT'), ('UPDATE'), ('INSERT'), ('DELETE'), ('TRUNCATE'), ('REFERENCES')) as v (priv)
        where has_table_privilege(r.role, t.tbl, v.priv)
    ),
    0, 'no role but the owner has a privilege on the lock tables or the hint secret'
);
select is(
    (
        select count(*)::integer
        from (
            values ('public'), ('jobctl_reader'), ('jobctl_writer'), ('jobctl_worker'), ('jobctl_api'),
            ('jobctl_admin')
        ) as r (role)
        where has_schema_privilege(r.role, 'jobctl_owner', 'USAGE')
    ),
    0, 'no role but the owner may use schema jobctl_owner (a parsed query locks tables before its privilege check)'
);

select ok(jobctl._try_lock('hint', 'tap_locks_q'), 'a try-lock is taken');
select ok(jobctl._try_lock('hint', 'tap_locks_q'), 'and taken again by the same transaction');
select lives_ok(
    $$select jobctl._wait_lock('key', array['tap_locks_t', 'tap_locks_t', 'tap_locks_t', 'tap_locks_u'],
        array['a', 'b', 'a', null])$$,
    'a wait-lock takes several keys, repeats and NULLs included'
);
select results_eq(
    $$select tenant_id, count(*)::integer from jobctl._tenant_lock where tenant_id like 'tap_locks%' group by 1$$,
    $$values ('tap_locks_t', 2)$$,
    'its rows are the tenant''s, one a bucket, made on first use'
);

select isnt(
    jobctl.hint_tags(array['tap_locks_q1', 'tap_locks_q2']),
    array['tap_locks_q1', 'tap_locks_q2'],
    'a hint tag does not name its queue'
);

select * from finish();
rollback;
