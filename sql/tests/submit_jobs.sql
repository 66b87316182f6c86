-- jobctl.submit_jobs: a JSON array of jobs, all or nothing, rows in input order, errors naming
-- jobs[i].field, in-batch dedup. Tenants tap_batch_*, queues tap_batch_*.
begin;
select plan(62);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'submit_jobs', array['jsonb'], 'submit_jobs(jobs jsonb) exists');

-- a mixed batch
create temp table b_mixed as
select
    r.job_id,
    r.duplicate,
    r.ord
from jobctl.submit_jobs($$[
    {"tenant_id": "tap_batch_t1", "queue": "tap_batch_q", "payload": {"i": 0}},
    {"tenant_id": "tap_batch_t1", "queue": "tap_batch_q", "payload": {"i": 1}, "priority": 5, "max_attempts": 7},
    {"tenant_id": "tap_batch_t2", "queue": "tap_batch_q2", "payload": {"i": 2}, "run_at": "2030-01-01T00:00:00Z"},
    {"tenant_id": "tap_batch_t1", "queue": "tap_batch_q", "payload": {"i": 3}, "timeout": 30,
     "backoff": {"strategy": "fixed", "base": "10 seconds", "jitter": false}},
    {"tenant_id": "tap_batch_t1", "queue": "tap_batch_q", "payload": {"i": 4}, "timeout": "2 minutes",
     "priority": null, "max_attempts": null, "backoff": null, "run_at": null}
]$$) with ordinality as r (job_id, duplicate, ord);

-- the submitted jobs with their input position
create temp view v_mixed as
select
    j.*,
    b.ord
from b_mixed as b
inner join jobctl.job as j on b.job_id = j.job_id;

select is((select count(*) from b_mixed), 5::bigint, 'one row per element');
select is((select count(*) filter (where not duplicate) from b_mixed), 5::bigint, 'all new: duplicate = false');
select is(
    (select array_agg((payload ->> 'i')::integer order by ord) from v_mixed),
    array[0, 1, 2, 3, 4],
    'rows come back in input order'
);
select results_eq(
    $$select tenant_id, queue, priority::integer, max_attempts, state from v_mixed order by ord$$,
    $$values ('tap_batch_t1', 'tap_batch_q', 0, 3, 'pending'), ('tap_batch_t1', 'tap_batch_q', 5, 7, 'pending'),
        ('tap_batch_t2', 'tap_batch_q2', 0, 3, 'pending'), ('tap_batch_t1', 'tap_batch_q', 0, 3, 'pending'),
        ('tap_batch_t1', 'tap_batch_q', 0, 3, 'pending')$$,
    'tenant, queue, priority (default 0) and max_attempts (default 3) are stored per element'
);
select results_eq(
    $$select run_at from v_mixed where ord = 3$$,
    $$values ('2030-01-01T00:00:00Z'::timestamptz)$$,
    'run_at is parsed from ISO 8601'
);
select results_eq(
    $$select v.ord from v_mixed as v join jobctl._delayed as d using (job_id)$$,
    $$values (3::bigint)$$,
    'a future run_at puts the job in jobctl._delayed'
);
select results_eq(
    $$select v.ord from v_mixed as v join jobctl._ready as r using (job_id) order by 1$$,
    $$values (1::bigint), (2), (4), (5)$$,
    'the four due jobs are in jobctl._ready'
);
select results_eq(
    $$select run_at = now() from v_mixed where ord = 5$$, $$values (true)$$, 'run_at null means due now'
);
select results_eq(
    $$select timeout from v_mixed where ord = 4$$, $$values ('30 seconds'::interval)$$,
    'timeout as a number is seconds'
);
select results_eq(
    $$select timeout from v_mixed where ord = 5$$, $$values ('2 minutes'::interval)$$,
    'timeout as a string is an interval'
);
select results_eq(
    $$select backoff from v_mixed where ord = 4$$,
    $$select jsonb_build_object(
        'strategy', 'fixed', 'base', interval '10 seconds'::text, 'max', interval '1 hour'::text, 'jitter', false)$$,
    'backoff is stored normalized'
);
select results_eq(
    $$select backoff from v_mixed where ord = 5$$, $$values (null::jsonb)$$,
    'backoff null means the defaults (stored as NULL)'
);
select results_eq(
    $$select tenant_id, weight from jobctl.tenant where tenant_id in ('tap_batch_t1', 'tap_batch_t2') order by 1$$,
    $$values ('tap_batch_t1', 1), ('tap_batch_t2', 1)$$,
    'every new tenant in the batch is registered with the defaults'
);

-- empty array
select is_empty($$select * from jobctl.submit_jobs('[]')$$, 'an empty array submits nothing and returns no row');

-- in-batch and existing duplicates
create temp table b_dup as
select
    r.job_id,
    r.duplicate,
    r.ord
from jobctl.submit_jobs($$[
    {"tenant_id": "tap_batch_t3", "queue": "tap_batch_q", "payload": {"i": 0}, "dedup_key": "a"},
    {"tenant_id": "tap_batch_t3", "queue": "tap_batch_q", "payload": {"i": 1}, "dedup_key": "b"},
    {"tenant_id": "tap_batch_t3", "queue": "tap_batch_q", "payload": {"i": 2}, "dedup_key": "a"},
    {"tenant_id": "tap_batch_t4", "queue": "tap_batch_q", "payload": {"i": 3}, "dedup_key": "a"},
    {"tenant_id": "tap_batch_t3", "queue": "tap_batch_q", "payload": {"i": 4}}
]$$) with ordinality as r (job_id, duplicate, ord);
select is(
    (select array_agg(duplicate order by ord) from b_dup), array[false, false, true, false, false],
    'an in-batch repeat of a dedup_key is marked duplicate; another tenant''s same key is not'
);
select results_eq(
    $$select job_id from b_dup where ord = 3$$, $$select job_id from b_dup where ord = 1$$,
    'the in-batch repeat returns the first element''s job id'
);
select is(pg_temp.n_jobs('tap_batch_t3'), 3::bigint, 'the in-batch repeat writes no job');
select results_eq(
    $$select j.payload from jobctl.job as j join b_dup as b using (job_id) where b.ord = 1$$,
    $$values ('{"i": 0}'::jsonb)$$,
    'the first element wins'
);
create temp table b_dup2 as
select
    r.job_id,
    r.duplicate,
    r.ord
from jobctl.submit_jobs($$[
    {"tenant_id": "tap_batch_t3", "queue": "tap_batch_q", "payload": {}, "dedup_key": "b"},
    {"tenant_id": "tap_batch_t3", "queue": "tap_batch_q", "payload": {}, "dedup_key": "c"}
]$$) with ordinality as r (job_id, duplicate, ord);
select results_eq(
    $$select job_id, duplicate from b_dup2 order by ord$$,
    $$select (select job_id from b_dup where ord = 2), true
      union all
      select (select job_id from b_dup2 where ord = 2), false$$,
    'a key already held by a job returns that job (duplicate = true); a new key is a new job'
);
select is(pg_temp.n_jobs('tap_batch_t3'), 4::bigint, 'only the new key wrote a job');

-- errors: all or nothing, the element named
select throws_ok(
    $$select jobctl.submit_jobs(null)$$, 'JC001', 'jobs must be a JSON array of job objects', 'NULL: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('{"tenant_id": "tap_batch_bad"}')$$,
    'JC001', 'jobs must be a JSON array of job objects', 'an object instead of an array: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}}, 42]')$$,
    'JC001', 'jobs[1] must be an object', 'an element that is not an object: JC001 naming jobs[1]'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "tenant": "x"}]')$$,
    'JC001', 'jobs[0] has an unknown key: tenant', 'an unknown key: JC001 naming it'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}},
        {"tenant_id": "tap_batch_bad", "queue": "", "payload": {}}]')$$,
    'JC001', 'jobs[1].queue must be a non-empty string', 'a bad element after a good one: JC001 naming jobs[1].queue'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q"}]')$$,
    'JC001', 'jobs[0].payload must not be NULL (use {} for none)', 'a missing payload: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "priority": "high"}]')$$,
    'JC001', 'jobs[0].priority must be an integer, not "high"', 'a non-integer priority: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "priority": 1.5}]')$$,
    'JC001', 'jobs[0].priority must be an integer, not 1.5', 'a fractional priority: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "priority": 101}]')$$,
    'JC001', 'jobs[0].priority must be an integer from -100 to 100, not 101', 'priority out of range: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "run_at": "soon"}]')$$,
    'JC001',
    'jobs[0].run_at must be an ISO 8601 timestamp such as 2026-12-01T09:30:00Z, not "soon"',
    'an unparsable run_at: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "run_at": 5}]')$$,
    'JC001', 'jobs[0].run_at must be an ISO 8601 timestamp such as 2026-12-01T09:30:00Z, not 5', 'a numeric run_at: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "timeout": "ages"}]')$$,
    'JC001',
    'jobs[0].timeout must be an interval of at most 30 days (a string such as ''30 seconds'' or a number of seconds), not "ages"',
    'an unparsable timeout: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {}, "timeout": -1}]')$$,
    'JC001', 'jobs[0].timeout must be positive and at most 30 days', 'a negative timeout: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_batch_bad", "queue": "tap_batch_q", "payload": {},
        "backoff": {"strategy": "sometimes"}}]')$$,
    'JC003', 'jobs[0].backoff.strategy must be exponential, linear or fixed, not sometimes', 'a bad backoff: JC003'
);
select throws_ok(
    format(
        'select jobctl.submit_jobs(%L)',
        jsonb_build_array(
            jsonb_build_object('tenant_id', 'tap_batch_bad', 'queue', 'tap_batch_q', 'payload', '{}'::jsonb),
            jsonb_build_object(
                'tenant_id', 'tap_batch_bad', 'queue', 'tap_batch_q', 'payload',
                jsonb_build_object('x', repeat('a', 65528))
            )
        )
    ),
    'JC002', 'jobs[1].payload is 65537 bytes; the limit is 65536', 'an oversized payload: JC002'
);
select is(pg_temp.n_jobs('tap_batch_bad'), 0::bigint, 'no rejected batch wrote any job');
select is_empty(
    $$select 1 from jobctl.tenant where tenant_id = 'tap_batch_bad'$$,
    'no rejected batch registered its tenant'
);

-- a batch that fails late leaves nothing behind, not even the jobs before the bad one
select throws_ok(
    $$select jobctl.submit_jobs(
        (select jsonb_agg(jsonb_build_object('tenant_id', 'tap_batch_t5', 'queue', 'tap_batch_q', 'payload', '{}'::jsonb,
            'priority', case when g = 500 then 1000 else 0 end))
         from generate_series(1, 600) as g))$$,
    'JC001', 'jobs[499].priority must be an integer from -100 to 100, not 1000',
    'element 500 of 600 bad: the error names jobs[499]'
);
select is(pg_temp.n_jobs('tap_batch_t5'), 0::bigint, 'and not one of the 600 jobs is written');

-- 10,000 jobs in one call
create temp table big as
select jsonb_agg(jsonb_build_object('tenant_id', 'tap_batch_big', 'queue', 'tap_batch_big_q', 'payload', g)) as jobs
from generate_series(1, 10000) as g;
select is(
    (select count(*) from big cross join jobctl.submit_jobs(big.jobs)),
    10000::bigint,
    'a batch of 10,000 jobs is accepted'
);
select results_eq(
    $$select count(*) from jobctl._ready where tenant_id = 'tap_batch_big'$$, $$values (10000::bigint)$$,
    'and all 10,000 are queued'
);

-- values that parse but make no sense: a job that is never due, a JSON null payload
select throws_ok(
    $$select * from jobctl.submit_jobs('[{"tenant_id": "tap_sj_inf", "queue": "q", "payload": {}, "run_at": "infinity"}]')$$,
    'JC001', 'jobs[0].run_at must be from 1970-01-01 to 10 years from now', 'run_at infinity: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_job('tap_sj_inf', 'q', '{}', run_at => '-infinity')$$,
    'JC001', 'run_at must be from 1970-01-01 to 10 years from now', 'submit_job run_at -infinity: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_jobs('[{"tenant_id": "tap_sj_inf", "queue": "q", "payload": null}]')$$,
    'JC001', 'jobs[0].payload must not be NULL (use {} for none)', 'a JSON null payload: JC001'
);
select is(pg_temp.n_jobs('tap_sj_inf'), 0::bigint, 'nothing was written by the refused submits');

-- the documented bounds (docs/security.md, Bounds), at the bound and one past it
select lives_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', (repeat('[', 100) || repeat(']', 100))::jsonb)$$,
    'a payload 100 levels deep is taken'
);
select throws_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', (repeat('[', 101) || repeat(']', 101))::jsonb)$$,
    'JC001', 'payload is nested more than 100 levels deep', 'one 101 levels deep is not'
);
select lives_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', (repeat('{"a": ', 99) || '{}' || repeat('}', 99))::jsonb)$$,
    'an object 100 levels deep is taken'
);
select throws_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', (repeat('{"a": ', 100) || '{}' || repeat('}', 100))::jsonb)$$,
    'JC001', 'payload is nested more than 100 levels deep', 'an object 101 levels deep is not'
);
select throws_ok(
    $$select * from jobctl.submit_jobs(jsonb_build_array(jsonb_build_object('tenant_id', 'tap_sj_bound', 'queue', 'q',
        'payload', (repeat('{"a":', 2999) || '{}' || repeat('}', 2999))::jsonb)))$$,
    'JC001', 'jobs[0].payload is nested more than 100 levels deep', 'nor an object 3,000 deep in a batch'
);
select throws_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', '{}', run_at => '294276-01-01')$$,
    'JC001', 'run_at must be from 1970-01-01 to 10 years from now', 'run_at in year 294276: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', '{}', run_at => '4713-01-01 BC')$$,
    'JC001', 'run_at must be from 1970-01-01 to 10 years from now', 'run_at in 4713 BC: JC001'
);
select lives_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', '{}', run_at => now() + interval '10 years' - interval '1 minute')$$,
    'run_at just within 10 years is taken'
);
select throws_ok(
    $$select * from jobctl.submit_jobs((select jsonb_agg(jsonb_build_object('tenant_id', 'tap_sj_bound', 'queue', 'q',
        'payload', '{}'::jsonb)) from generate_series(1, 10001)))$$,
    'JC001', 'jobs holds 10001 jobs; at most 10000 may be submitted at once', 'a batch of 10,001: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_jobs('[{"tenant_id": {"a": 1}, "queue": "q", "payload": {}}]')$$,
    'JC001', 'jobs[0].tenant_id must be a string', 'a tenant_id that is an object: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_jobs('[{"tenant_id": "tap_sj_bound", "queue": "q", "payload": {}, "concurrency_key": 7}]')$$,
    'JC001', 'jobs[0].concurrency_key must be a string', 'a concurrency_key that is a number: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', E'q\x1b[31m', '{}')$$,
    'JC001', 'queue must not contain control characters', 'a queue with an escape sequence: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_job(E'tap_sj_bound\u202e', 'q', '{}')$$,
    'JC001', 'tenant_id must not contain control characters', 'a tenant with a bidirectional override: JC001'
);
select throws_ok(
    $$select * from jobctl.submit_job('tap_sj_bound', 'q', '{}', dedup_key => E'a\nb')$$,
    'JC001', 'dedup_key must not contain control characters', 'a dedup_key with a newline: JC001'
);
select is(pg_temp.n_jobs('tap_sj_bound'), 3::bigint, 'only the three jobs within the bounds were written');

select isnt(obj_description('jobctl.submit_jobs(jsonb)'::regprocedure), null, 'submit_jobs has a comment');

select * from finish();
rollback;
