-- Concurrency keys: submit_job(..., concurrency_key), jobctl.put_concurrency_limit,
-- jobctl.list_concurrency_limits and jobctl._admit: a limited key's due jobs wait in _held and are
-- admitted in run_at order while the key has room; every end of an attempt that gives up a place
-- admits the next. (Under concurrent claimers: tests/test_concurrency_keys.py.) Tenants tap_key_*,
-- queue tap_key_q.
begin;
select plan(34);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'put_concurrency_limit', array['text', 'text', 'integer'], 'put_concurrency_limit exists');
select has_function('jobctl', 'list_concurrency_limits', array['text'], 'list_concurrency_limits exists');
select has_function('jobctl', '_admit', array['text[]', 'text[]'], '_admit exists');
select isnt(obj_description('jobctl.put_concurrency_limit(text, text, integer)'::regprocedure), null, 'it has a comment');

select jobctl.put_tenant('tap_key_t');

-- bounds
select throws_ok(
    $$select jobctl.put_concurrency_limit('tap_key_t', '', 1)$$, 'JC001',
    'concurrency_key must be NULL or a string of 1 to 200 characters', 'an empty key'
);
select throws_ok(
    $$select jobctl.put_concurrency_limit('tap_key_t', repeat('k', 201), 1)$$, 'JC001',
    'concurrency_key must be NULL or a string of 1 to 200 characters', 'a key of 201 characters'
);
select lives_ok(
    $$select jobctl.put_concurrency_limit('tap_key_t', repeat('k', 200), 100000)$$,
    'a key of 200 characters, a limit of 100000'
);
select throws_ok(
    $$select jobctl.put_concurrency_limit('tap_key_t', 'k', 100001)$$, 'JC001',
    'max_running must be NULL or from 0 to 100000, not 100001', 'a limit over 100000'
);
select throws_ok(
    $$select jobctl.put_concurrency_limit('tap_key_t', 'k', -1)$$, 'JC001',
    'max_running must be NULL or from 0 to 100000, not -1', 'a negative limit'
);
select throws_ok(
    $$select jobctl.put_concurrency_limit('tap_key_nobody', 'k', 1)$$, 'P0002',
    'no tenant tap_key_nobody', 'an unknown tenant'
);
select throws_ok(
    $$select jobctl.submit_job('tap_key_t', 'tap_key_q', '{}', concurrency_key => repeat('k', 201))$$, 'JC001',
    'concurrency_key must be NULL or a string of 1 to 200 characters', 'submit: a key of 201 characters'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_key_t", "queue": "tap_key_q", "payload": {}, "concurrency_key": ""}]')$$,
    'JC001', 'jobs[0].concurrency_key must be NULL or a string of 1 to 200 characters', 'submit_jobs: an empty key'
);

-- a mutex: one of the key's jobs due at a time, the others wait in run_at order
select jobctl.put_concurrency_limit('tap_key_t', 'm', 1);
create temp table s as
select
    g.g as n,
    x.job_id
from generate_series(1, 3) as g (g)
cross join lateral jobctl.submit_job('tap_key_t', 'tap_key_q', jsonb_build_object('n', g.g), concurrency_key => 'm') as x;
select is(
    (select string_agg(pg_temp.queued(job_id), ',' order by n) from s), 'ready,nowhere,nowhere',
    'limit 1: the first job is due, the other two wait'
);
select is((
    select count(*)::integer from jobctl._held
    where concurrency_key = 'm'
), 2, 'in _held');
select is((
    select state from jobctl.job
    where job_id = (
        select s.job_id from s
        where s.n = 2
    )
), 'pending', 'and are pending');
create temp table c1 as select * from jobctl.claim_job('tap_key_w', array['tap_key_q'], 10);
select is((select count(*)::integer from c1), 1, 'a claim of 10 gets the one');
select is(pg_temp.queued((
    select job_id from s
    where n = 2
)), 'nowhere', 'the next still waits while it runs');
select jobctl.complete_job(job_id, lease_epoch) from c1;
select is(pg_temp.queued((
    select job_id from s
    where n = 2
)), 'ready', 'its completion admits the next, in run_at order');

-- failure with a backoff gives the place up; the retry waits behind the key's other jobs
create temp table c2 as select * from jobctl.claim_job('tap_key_w', array['tap_key_q'], 10);
select jobctl.fail_job(job_id, lease_epoch, 'boom') from c2;
select is(pg_temp.queued((
    select job_id from s
    where n = 2
)), 'delayed', 'a failed job waits for its backoff');
select is(pg_temp.queued((
    select job_id from s
    where n = 3
)), 'ready', 'and the key''s next job is admitted');
select pg_temp.make_due((
    select job_id from s
    where n = 2
));
-- wait for pg_cron's tick, if one runs, and keep it out (the lock is re-entrant for this session)
lock table jobctl_owner._tick_lock in exclusive mode;
select jobctl.tick(false);
select is(pg_temp.queued((
    select job_id from s
    where n = 2
)), 'nowhere', 'promoted, the retry waits for the key''s place');

-- a reaped lease keeps its place (due at once); cancel gives it up
create temp table c3 as select * from jobctl.claim_job('tap_key_w', array['tap_key_q'], 10);
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from c3);
select jobctl.reap_expired_leases();
select is(
    (
        select pg_temp.queued(job_id) from s
        where n = 3) || '/' || (
        select pg_temp.queued(job_id) from s
        where n = 2
    ),
    'ready/nowhere', 'a reaped job is due again at once, keeping its place'
);
select jobctl.cancel_job((
    select job_id from s
    where n = 3
));
select is(pg_temp.queued((
    select job_id from s
    where n = 2
)), 'ready', 'cancelling it admits the next');
select jobctl.cancel_job((
    select job_id from s
    where n = 2
));

-- limit 0 holds everything; raising a limit admits at once; the tenant's default covers other keys
select jobctl.put_concurrency_limit('tap_key_t', 'z', 0);
create temp table z as
select x.job_id from generate_series(1, 3) as g (g)
cross join lateral jobctl.submit_job('tap_key_t', 'tap_key_q', jsonb_build_object('z', g.g), concurrency_key => 'z') as x;
select is((
    select count(*)::integer from jobctl._held
    where concurrency_key = 'z'
), 3, 'limit 0: every job waits');
select jobctl.put_concurrency_limit('tap_key_t', 'z', 2);
select is((
    select count(*)::integer from jobctl._ready
    where concurrency_key = 'z'
), 2, 'raised to 2: two admitted at once');
select jobctl.put_concurrency_limit('tap_key_t', null, 1);
create temp table d as
select x.job_id from generate_series(1, 2) as g (g)
cross join lateral jobctl.submit_job('tap_key_t', 'tap_key_q', '{}', concurrency_key => 'customer-' || g.g) as x;
select jobctl.submit_job('tap_key_t', 'tap_key_q', '{}', concurrency_key => 'customer-1');
select is(
    (
        select count(*)::integer from jobctl._held
        where concurrency_key like 'customer-%'
    ), 1,
    'the tenant''s default limit 1 holds each key without its own: one job of customer-1 waits'
);
select results_eq(
    $$select concurrency_key, max_running, active, waiting from jobctl.list_concurrency_limits('tap_key_t')
      where concurrency_key is null or concurrency_key in ('m', 'z')$$,
    $$values (null::text, 1, null::bigint, 1::bigint), ('m', 1, 0::bigint, 0::bigint), ('z', 2, 2::bigint, 1::bigint)$$,
    'list_concurrency_limits: the default first, then each key with its active and waiting jobs'
);
select jobctl.put_concurrency_limit('tap_key_t', null, null);
select is(
    (
        select count(*)::integer from jobctl._held
        where concurrency_key like 'customer-%'
    ), 0,
    'removing the default admits the keys that had only it'
);

-- a key without any limit passes straight through; a delayed job waits in _delayed, not _held
select jobctl.put_tenant('tap_key_free');
create temp table f as
select x.job_id from generate_series(1, 3) as g (g)
cross join lateral jobctl.submit_job('tap_key_free', 'tap_key_q', jsonb_build_object('g', g.g), concurrency_key => 'k') as x;
select is((
    select count(*)::integer from jobctl._ready
    where tenant_id = 'tap_key_free'
), 3, 'an unlimited key: all due at once');
select jobctl.put_concurrency_limit('tap_key_free', 'k', 1);
create temp table later as
select * from jobctl.submit_job('tap_key_free', 'tap_key_q', '{}', run_at => now() + interval '1 hour', concurrency_key => 'k');
select is(pg_temp.queued((select job_id from later)), 'delayed', 'a keyed job due later waits in _delayed');

-- submit_jobs carries the key; retry of a dead keyed job waits like any other
select jobctl.put_concurrency_limit('tap_key_t', 'r', 1);
create temp table b as
select * from jobctl.submit_jobs('[{"tenant_id": "tap_key_t", "queue": "tap_key_r", "payload": {}, "concurrency_key": "r"},
                                   {"tenant_id": "tap_key_t", "queue": "tap_key_r", "payload": {}, "concurrency_key": "r"}]');
select is((
    select count(*)::integer from jobctl._held
    where concurrency_key = 'r'
), 1, 'submit_jobs: the second waits');
create temp table c4 as select * from jobctl.claim_job('tap_key_w', array['tap_key_r']);
select jobctl.fail_job(job_id, lease_epoch, 'fatal', false) from c4;
select jobctl.claim_job('tap_key_w', array['tap_key_r']);
select is(jobctl.retry_job((select job_id from c4)), 'pending', 'a dead keyed job is retried');
select is(pg_temp.queued((select job_id from c4)), 'nowhere', 'and waits while the key''s other job runs');
select is(
    (
        select count(*)::integer from jobctl.audit_log
        where action = 'put_concurrency_limit' and tenant_id = 'tap_key_t'
    ),
    7, 'every put_concurrency_limit is audited'
);

select * from finish();
rollback;
