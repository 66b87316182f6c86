-- jobctl.submit_job: validation (SQLSTATE and message naming the field), defaults, delayed jobs,
-- backoff normalisation, dedup. Tenants tap_submit_*, queues tap_submit_*.
-- JC006 (dedup_key under REPEATABLE READ) needs its own transaction: submit_job_repeatable_read.sql.
begin;
select plan(87);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

create function pg_temp.n_ready(p_tenant_id text) returns bigint
language sql as $$
    select count(*) from jobctl._ready where tenant_id = p_tenant_id
$$;
create function pg_temp.n_tenants(p_tenant_id text) returns bigint
language sql as $$
    select count(*) from jobctl.tenant where tenant_id = p_tenant_id
$$;

select has_function(
    'jobctl', 'submit_job',
    array[
        'text', 'text', 'jsonb', 'integer', 'timestamp with time zone', 'text', 'integer', 'jsonb', 'interval', 'text', 'text',
        'text', 'bigint[]', 'text', 'text[]', 'interval', 'text'
    ],
    'submit_job(tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, subject_key,'
    || ' concurrency_key, traceparent, depends_on, on_parent_failure, dedup_states, dedup_period, dedup_mode) exists'
);

-- a plain job: due now, defaults
create temp table s_plain as
select * from jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{"n": 1}');

select is((select count(*) from s_plain), 1::bigint, 'one row is returned');
select ok((select job_id > 0 and not duplicate from s_plain), 'a new job: positive id, duplicate = false');
select results_eq(
    $$select state, tenant_id, queue, priority::integer, attempt, max_attempts, run_at = now(), payload,
        dedup_key, backoff, timeout, lease_epoch, finished_at
      from jobctl.job where job_id = (select job_id from s_plain)$$,
    $$values ('pending', 'tap_submit_t1', 'tap_submit_q', 0, 0, 3, true, '{"n": 1}'::jsonb,
        null::text, null::jsonb, null::interval, null::bigint, null::timestamptz)$$,
    'the job is pending, due now, priority 0, attempt 0, max_attempts NULL -> 3, no backoff/timeout/dedup'
);
select results_eq(
    $$select queue, tenant_id, priority::integer, run_at = now() from jobctl._ready
      where job_id = (select job_id from s_plain)$$,
    $$values ('tap_submit_q', 'tap_submit_t1', 0, true)$$,
    'a job due now sits in jobctl._ready'
);
select is_empty(
    $$select 1 from jobctl._delayed where job_id = (select job_id from s_plain)$$,
    'a job due now is not in jobctl._delayed'
);
select results_eq(
    $$select weight, max_pending, max_running, submit_rate, submit_burst, claim_rate, claim_burst, paused
      from jobctl.tenant where tenant_id = 'tap_submit_t1'$$,
    $$values (1, null::bigint, null::integer, null::numeric, null::integer, null::numeric, null::integer, false)$$,
    'a tenant first seen in a submit is registered with the defaults'
);

-- a tenant registered by put_tenant keeps its settings when it submits
do $do$ begin perform jobctl.put_tenant('tap_submit_t2', weight => 7, max_running => 3); end $do$;
select lives_ok(
    $$select jobctl.submit_job('tap_submit_t2', 'tap_submit_q', '{}')$$,
    'a known tenant can submit'
);
select results_eq(
    $$select weight, max_running from jobctl.tenant where tenant_id = 'tap_submit_t2'$$,
    $$values (7, 3)$$,
    'submitting does not reset a known tenant''s settings'
);

-- every field set
create temp table s_full as
select * from jobctl.submit_job(
    'tap_submit_t1', 'tap_submit_q', '{"full": true}', priority => 7, max_attempts => 5, timeout => '90 seconds',
    backoff => '{"strategy": "linear", "base": "2 seconds"}'
);
select results_eq(
    $$select priority::integer, max_attempts, timeout from jobctl.job where job_id = (select job_id from s_full)$$,
    $$values (7, 5, '90 seconds'::interval)$$,
    'priority, max_attempts and timeout are stored'
);
select is(
    (select backoff from pg_temp.job((select job_id from s_full))),
    jsonb_build_object(
        'strategy', 'linear', 'base', interval '2 seconds'::text, 'max', interval '1 hour'::text, 'jitter', true
    ),
    'backoff is stored normalized: missing max and jitter get their defaults (1 hour, true)'
);

-- delayed and back-dated jobs
create temp table s_delayed as
select * from jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', run_at => now() + interval '1 hour');
select results_eq(
    $$select state, run_at = now() + interval '1 hour' from jobctl.job where job_id = (select job_id from s_delayed)$$,
    $$values ('pending', true)$$,
    'a job with a future run_at is pending with that run_at'
);
select results_eq(
    $$select run_at = now() + interval '1 hour', queue, tenant_id from jobctl._delayed
      where job_id = (select job_id from s_delayed)$$,
    $$values (true, 'tap_submit_q', 'tap_submit_t1')$$,
    'a job with a future run_at sits in jobctl._delayed'
);
select is_empty(
    $$select 1 from jobctl._ready where job_id = (select job_id from s_delayed)$$,
    'a job with a future run_at is not in jobctl._ready'
);
create temp table s_past as
select * from jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', run_at => now() - interval '1 hour');
select results_eq(
    $$select run_at = now() - interval '1 hour' from jobctl._ready where job_id = (select job_id from s_past)$$,
    $$values (true)$$,
    'a job with a past run_at is due at once (in jobctl._ready, run_at kept)'
);

-- boundaries accepted
select lives_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', priority => 100)$$, 'priority 100 is accepted'
);
select lives_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', priority => -100)$$, 'priority -100 is accepted'
);
select lives_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', max_attempts => 1)$$, 'max_attempts 1 is accepted'
);
select lives_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', max_attempts => 1000)$$,
    'max_attempts 1000 is accepted'
);
select lives_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', jsonb_build_object('x', repeat('a', 65527)))$$,
    'a payload of exactly 65536 bytes is accepted'
);
select lives_ok(
    $$select jobctl.submit_job(repeat('t', 200), 'tap_submit_q', '{}')$$, 'a tenant_id of 200 characters is accepted'
);

-- bad input: SQLSTATE and a message naming the field
select throws_ok(
    $$select jobctl.submit_job(null, 'tap_submit_q', '{}')$$,
    'JC001', 'tenant_id must be a non-empty string', 'NULL tenant_id: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('', 'tap_submit_q', '{}')$$,
    'JC001', 'tenant_id must be a non-empty string', 'empty tenant_id: JC001'
);
select throws_ok(
    $$select jobctl.submit_job(repeat('t', 201), 'tap_submit_q', '{}')$$,
    'JC001', 'tenant_id must be at most 200 characters', 'tenant_id over 200 characters: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', null, '{}')$$,
    'JC001', 'queue must be a non-empty string', 'NULL queue: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', '', '{}')$$,
    'JC001', 'queue must be a non-empty string', 'empty queue: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', repeat('q', 201), '{}')$$,
    'JC001', 'queue must be at most 200 characters', 'queue over 200 characters: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', null)$$,
    'JC001', 'payload must not be NULL (use {} for none)', 'NULL payload: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', jsonb_build_object('x', repeat('a', 65528)))$$,
    'JC002', 'payload is 65537 bytes; the limit is 65536', 'payload of 65537 bytes: JC002'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', priority => 101)$$,
    'JC001', 'priority must be an integer from -100 to 100, not 101', 'priority 101: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', priority => -101)$$,
    'JC001', 'priority must be an integer from -100 to 100, not -101', 'priority -101: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', priority => 40000)$$,
    'JC001', 'priority must be an integer from -100 to 100, not 40000', 'priority beyond smallint: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', priority => null)$$,
    'JC001', 'priority must be an integer from -100 to 100, not NULL', 'explicit NULL priority: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', max_attempts => 0)$$,
    'JC001', 'max_attempts must be from 1 to 1000, not 0', 'max_attempts 0: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', max_attempts => 1001)$$,
    'JC001', 'max_attempts must be from 1 to 1000, not 1001', 'max_attempts 1001: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', timeout => '0 seconds')$$,
    'JC001', 'timeout must be positive and at most 30 days', 'timeout 0: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', timeout => '-5 seconds')$$,
    'JC001', 'timeout must be positive and at most 30 days', 'negative timeout: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', dedup_key => '')$$,
    'JC001', 'dedup_key must be NULL or a string of 1 to 500 characters', 'empty dedup_key: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', dedup_key => repeat('k', 501))$$,
    'JC001', 'dedup_key must be NULL or a string of 1 to 500 characters', 'dedup_key over 500 characters: JC001'
);

-- malformed backoff: JC003
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '[1]')$$,
    'JC003', 'backoff must be a JSON object', 'backoff not an object: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"factor": 2}')$$,
    'JC003', 'backoff has an unknown key: factor', 'backoff with an unknown key: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"strategy": "random"}')$$,
    'JC003', 'backoff.strategy must be exponential, linear or fixed, not random', 'unknown backoff strategy: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"base": "soon"}')$$,
    'JC003',
    'backoff.base must be an interval of at most 30 days (a string such as ''30 seconds'' or a number of seconds), not "soon"',
    'unparsable backoff.base: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"base": true}')$$,
    'JC003',
    'backoff.base must be an interval of at most 30 days (a string such as ''30 seconds'' or a number of seconds), not true',
    'backoff.base of a wrong type: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"max": "eventually"}')$$,
    'JC003',
    'backoff.max must be an interval of at most 30 days (a string such as ''30 seconds'' or a number of seconds), '
    || 'not "eventually"',
    'unparsable backoff.max: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"base": "-1 second"}')$$,
    'JC003', 'backoff.base must not be negative', 'negative backoff.base: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}',
        backoff => '{"base": "10 seconds", "max": "5 seconds"}')$$,
    'JC003', 'backoff.max must be at least the base', 'backoff.max below base: JC003'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"jitter": "yes"}')$$,
    'JC003', 'backoff.jitter must be true or false', 'non-boolean backoff.jitter: JC003'
);

-- backoff normalisation
create temp table s_bo_default as
select * from jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{}');
create temp table s_bo_numeric as
select * from jobctl.submit_job(
    'tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"strategy": "fixed", "base": 3, "max": "1 minute", "jitter": false}'
);
select is(
    (select backoff from pg_temp.job((select job_id from s_bo_default))),
    jsonb_build_object(
        'strategy', 'exponential', 'base', interval '5 seconds'::text, 'max', interval '1 hour'::text, 'jitter', true
    ),
    'backoff {} is stored with every default: exponential, 5 seconds, 1 hour, jitter'
);
select is(
    (select backoff from pg_temp.job((select job_id from s_bo_numeric))),
    jsonb_build_object(
        'strategy', 'fixed', 'base', interval '3 seconds'::text, 'max', interval '1 minute'::text, 'jitter', false
    ),
    'backoff base given as a number of seconds is stored as an interval'
);

-- nothing is written on error, not even the tenant
select throws_ok(
    $$select jobctl.submit_job('tap_submit_bad', 'tap_submit_q', '{}', priority => 1000)$$,
    'JC001', null, 'a rejected submit raises'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_bad', 'tap_submit_q', '{}', backoff => '{"strategy": "x"}')$$,
    'JC003', null, 'a submit with a bad backoff raises'
);
select is(
    pg_temp.n_jobs('tap_submit_bad'), 0::bigint, 'a rejected submit writes no job'
);
select is(
    pg_temp.n_tenants('tap_submit_bad'), 0::bigint,
    'a rejected submit registers no tenant'
);

-- dedup
create temp table s_dedup1 as
select * from jobctl.submit_job('tap_submit_t3', 'tap_submit_dq', '{"v": 1}', dedup_key => 'k1');
create temp table s_dedup2 as
select * from jobctl.submit_job('tap_submit_t3', 'tap_submit_other', '{"v": 2}', priority => 9, dedup_key => 'k1');
select is((select duplicate from s_dedup1), false, 'first submit with a dedup_key: duplicate = false');
select is((select duplicate from s_dedup2), true, 'repeat with the same dedup_key: duplicate = true');
select is((select job_id from s_dedup2), (select job_id from s_dedup1), 'repeat returns the first job''s id');
select is(
    pg_temp.n_jobs('tap_submit_t3'), 1::bigint, 'repeat writes no second job'
);
select results_eq(
    $$select queue, payload, priority::integer from jobctl.job where job_id = (select job_id from s_dedup1)$$,
    $$values ('tap_submit_dq', '{"v": 1}'::jsonb, 0)$$,
    'repeat changes nothing in the first job'
);
select is(
    pg_temp.n_ready('tap_submit_t3'), 1::bigint,
    'repeat queues nothing'
);
select isnt(
    (select s.job_id from jobctl.submit_job('tap_submit_t4', 'tap_submit_dq', '{}', dedup_key => 'k1') as s),
    (select job_id from s_dedup1),
    'the same dedup_key under another tenant is a different job'
);
select is(
    (select s.duplicate from jobctl.submit_job('tap_submit_t3', 'tap_submit_dq', '{}', dedup_key => 'k2') as s),
    false,
    'another dedup_key of the same tenant is a new job'
);

-- dedup holds after the job finished (hot storage)
create temp table s_claim as
select * from jobctl.claim_job('tap_submit_w', queues => array['tap_submit_dq'], max_jobs => 10);
select is(
    (select count(*) from s_claim as c inner join s_dedup1 as s on c.job_id = s.job_id), 1::bigint,
    'the deduplicated job can be claimed'
);
select ok(
    (select jobctl.complete_job(c.job_id, c.lease_epoch) from s_claim as c inner join s_dedup1 as s on c.job_id = s.job_id),
    'and completed'
);
select results_eq(
    $$select job_id, duplicate from jobctl.submit_job('tap_submit_t3', 'tap_submit_dq', '{"v": 3}', dedup_key => 'k1')$$,
    $$select job_id, true from s_dedup1$$,
    'a repeat after the job completed still returns it with duplicate = true'
);
select is(
    (select state from pg_temp.job((select job_id from s_dedup1))), 'completed',
    'and leaves the completed job as it was'
);

-- bounds that keep lease and backoff arithmetic from overflowing
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', timeout => '31 days')$$,
    'JC001', 'timeout must be positive and at most 30 days', 'a timeout over 30 days: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', backoff => '{"base": "300000 years"}')$$,
    'JC003', null, 'a backoff base over 30 days: JC003'
);

-- the W3C trace context is stored as given and handed to the claimer
select throws_ok(
    $$select jobctl.submit_job('tap_submit_t1', 'tap_submit_q', '{}', traceparent => '00-abc-01')$$,
    'JC001', 'traceparent must be NULL or a W3C traceparent: 2-32-16-2 lowercase hex digits joined by -',
    'a malformed traceparent: JC001 naming the field'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_submit_t1", "queue": "q", "payload": {}, "traceparent": 7}]')$$,
    'JC001', 'jobs[0].traceparent must be a string', 'submit_jobs: a traceparent that is not a string: JC001'
);
select jobctl.submit_job(
    'tap_submit_tp', 'tap_submit_tq', '{}',
    traceparent => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
);
select is(
    (
        select j.traceparent from jobctl.get_job((
            select max(x.job_id) from jobctl.job as x
            where x.tenant_id = 'tap_submit_tp'
        )) as j
    ),
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'submit_job stores the traceparent; get_job shows it'
);
select is(
    (select c.traceparent from jobctl.claim_job('tap_submit_w', array['tap_submit_tq']) as c),
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'claim_job hands the traceparent to the worker'
);

-- the plain path: submit_job writes a job without dedup key, parents or concurrency key, of a
-- registered tenant without submit limits or encryption, itself; it writes the rows jobctl._submit
-- (submit_jobs) writes for the same spec (now() is the transaction's: the times are equal too)
set local track_functions = 'all';
create function pg_temp.set_path_calls() returns bigint
language sql as $$
    select coalesce(pg_stat_get_xact_function_calls(
        'jobctl._submit(jobctl._job_spec[], boolean, boolean, boolean, text, timestamptz, text[])'::regprocedure
    ), 0)
$$;
select jobctl.put_tenant('tap_submit_plain');
select jobctl.put_tenant('tap_submit_set');
create temp table s_paths (way text, due boolean, job_id bigint, set_path_calls bigint);
insert into s_paths
select
    'plain' as way,
    true as due,
    s.job_id,
    pg_temp.set_path_calls() as set_path_calls
from jobctl.submit_job(
    'tap_submit_plain', 'tap_submit_paths', '{"a": [1, 2]}', 5, null, null, 4,
    '{"strategy": "fixed", "base": "2 seconds"}', interval '1 minute', 'u1', null,
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
) as s;
insert into s_paths
select
    'plain' as way,
    false as due,
    s.job_id,
    pg_temp.set_path_calls() as set_path_calls
from jobctl.submit_job('tap_submit_plain', 'tap_submit_paths', '{}', run_at => now() + interval '1 hour') as s;
insert into s_paths
select
    'set' as way,
    s.ord = 1 as due,
    s.job_id,
    pg_temp.set_path_calls() as set_path_calls
from jobctl.submit_jobs(jsonb_build_array(
    jsonb_build_object(
        'tenant_id', 'tap_submit_set', 'queue', 'tap_submit_paths', 'payload', '{"a": [1, 2]}'::jsonb, 'priority', 5,
        'max_attempts', 4, 'backoff', '{"strategy": "fixed", "base": "2 seconds"}'::jsonb, 'timeout', '1 minute',
        'subject_key', 'u1', 'traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    ),
    jsonb_build_object(
        'tenant_id', 'tap_submit_set', 'queue', 'tap_submit_paths', 'payload', '{}'::jsonb,
        'run_at', now() + interval '1 hour'
    )
)) with ordinality as s (job_id, duplicate, ord);
select is(
    (
        select array_agg(p.set_path_calls order by p.job_id) from s_paths as p
        where p.way = 'plain'
    ),
    array[0, 0]::bigint[],
    'a plain job (due, or delayed) is written by submit_job itself: jobctl._submit is not called'
);
select ok(
    (
        select max(p.set_path_calls) from s_paths as p
        where p.way = 'set'
    ) > 0,
    'submit_jobs goes through jobctl._submit (the check above can see a call)'
);
create function pg_temp.rows_of(p_way text, p_table text) returns jsonb
language plpgsql as $$
declare
    v jsonb;
begin
    execute format(
        'select jsonb_agg(to_jsonb(r) - ''job_id'' - ''tenant_id'' - ''slot'' order by p.due)
        from s_paths as p inner join %s as r on r.job_id = p.job_id where p.way = $1', p_table
    ) into v using p_way;
    return v;
end
$$;
select is(
    pg_temp.rows_of('plain', 'jobctl.job'), pg_temp.rows_of('set', 'jobctl.job'),
    'the plain path writes the job rows _submit writes'
);
select is(pg_temp.rows_of('plain', 'jobctl._ready'), pg_temp.rows_of('set', 'jobctl._ready'), 'and the same _ready row');
select is(
    pg_temp.rows_of('plain', 'jobctl._delayed'), pg_temp.rows_of('set', 'jobctl._delayed'), 'and the same _delayed row'
);
select ok(
    pg_temp.rows_of('plain', 'jobctl._ready') is not null and pg_temp.rows_of('plain', 'jobctl._delayed') is not null,
    '(one of each)'
);
create function pg_temp.counted(p_tenant_id text) returns text
language sql as $$
    select row(sum(d.submitted), sum(d.pending), sum(d.delayed), sum(d.waiting))::text
    from jobctl._stat_delta as d
    where d.tenant_id = p_tenant_id
$$;
select is(
    pg_temp.counted('tap_submit_plain'), pg_temp.counted('tap_submit_set'),
    'the counters move alike: submitted, pending, delayed, waiting'
);

-- everything else goes through jobctl._submit: an unregistered tenant, a dedup key, a concurrency
-- key, a tenant with a submit rate (one that encrypts its payloads: tests/test_security.py)
select jobctl.put_tenant('tap_submit_rated', submit_rate => 100);
create temp table s_set_calls (what text, calls_before bigint, calls_after bigint);
create function pg_temp.count_set_path(p_what text, p_call text) returns void
language plpgsql as $$
declare
    v_before bigint := pg_temp.set_path_calls();
begin
    execute p_call;
    insert into s_set_calls values (p_what, v_before, pg_temp.set_path_calls());
end
$$;
select pg_temp.count_set_path('new tenant', $$select jobctl.submit_job('tap_submit_unknown', 'q', '{}')$$);
select pg_temp.count_set_path('dedup key', $$select jobctl.submit_job('tap_submit_plain', 'q', '{}', dedup_key => 'k')$$);
select pg_temp.count_set_path(
    'concurrency key', $$select jobctl.submit_job('tap_submit_plain', 'q', '{}', concurrency_key => 'c')$$
);
select pg_temp.count_set_path('submit rate', $$select jobctl.submit_job('tap_submit_rated', 'q', '{}')$$);
select is(
    (
        select array_agg(c.what order by c.what) from s_set_calls as c
        where c.calls_after = c.calls_before + 1
    ),
    array['concurrency key', 'dedup key', 'new tenant', 'submit rate'],
    'a new tenant, a dedup key, a concurrency key and a submit rate each go through jobctl._submit'
);
select is(pg_temp.n_tenants('tap_submit_unknown'), 1::bigint, 'the new tenant was registered');

-- rule 19 (a workflow's edges point at earlier jobs of the call) is a backstop behind _job_specs'
-- own check (workflows.sql): its helper, and the rule through jobctl._spec_fault, directly
select ok(jobctl._points_back(array[1, 2], 3), 'after: places before the spec point back');
select ok(
    not jobctl._points_back(array[3], 3) and not jobctl._points_back(array[0], 2)
    and not jobctl._points_back(array[null]::integer[], 2),
    'after: the spec itself, 0 or NULL do not'
);
select is(
    jobctl._spec_fault(
        row('t', 'q', '{}', 0, null, null, null, null, null, null, null, null, null, array[2], null, null, null, null, null, null)
        ::jobctl._job_spec,
        2, now(), true, true
    ),
    19, 'a spec whose after names itself breaks rule 19'
);
select is(
    jobctl._spec_fault(
        row('t', 'q', '{}', 0, null, null, null, null, null, null, null, null, null, array[1], null, null, null, null, null, null)
        ::jobctl._job_spec,
        2, now(), true, true
    ),
    null, 'and one whose after names an earlier spec none'
);

select has_function('jobctl', 'submit_job', 'submit_job is installed');
select isnt(
    obj_description(
        (
            'jobctl.submit_job(text, text, jsonb, integer, timestamptz, text, integer, jsonb, interval, text, text, text,'
            || ' bigint[], text, text[], interval, text)'
        )::regprocedure
    ),
    null, 'submit_job has a comment'
);

select * from finish();
rollback;
