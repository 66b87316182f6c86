-- jobctl.get_job: one job as jobctl.job_info with its live lease; zero rows for an unknown id.
-- Tenant tap_get_t, queues tap_get_*; every claim names its queue.
begin;
select plan(16);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'get_job', array['bigint'], 'get_job(job_id) exists');
select function_returns('jobctl', 'get_job', array['bigint'], 'setof jobctl.job_info', 'it returns setof jobctl.job_info');

-- jobctl.job_info has at least the contract's columns, with their types
select is_empty(
    $$select name, type from (values
        ('job_id', 'bigint'), ('tenant_id', 'text'), ('queue', 'text'), ('state', 'text'), ('priority', 'integer'),
        ('payload', 'jsonb'), ('run_at', 'timestamp with time zone'), ('attempt', 'integer'),
        ('max_attempts', 'integer'), ('dedup_key', 'text'), ('created_at', 'timestamp with time zone'),
        ('started_at', 'timestamp with time zone'), ('finished_at', 'timestamp with time zone'),
        ('last_error', 'text'), ('result', 'jsonb'), ('worker_id', 'text'),
        ('lease_expires_at', 'timestamp with time zone')
      ) as c (name, type)
      except
      select a.attname::text, format_type(a.atttypid, a.atttypmod)
      from pg_attribute as a
      where a.attrelid = 'jobctl.job_info'::regclass and a.attnum > 0 and not a.attisdropped$$,
    'jobctl.job_info has every column of the contract, with its type'
);

select is_empty($$select * from jobctl.get_job(-1)$$, 'an unknown id: zero rows');
select is_empty($$select * from jobctl.get_job(null)$$, 'a NULL id: zero rows');

-- pending
create temp table s1 as
select * from jobctl.submit_job(
    'tap_get_t', 'tap_get_q1', '{"k": "v"}', priority => -4, run_at => now() - interval '5 minutes',
    dedup_key => 'tap-get-1', max_attempts => 6, timeout => '2 minutes',
    backoff => '{"strategy": "linear", "base": "7 seconds", "max": "1 minute", "jitter": false}'
);
select results_eq(
    $$select g.job_id, g.tenant_id, g.queue, g.state, g.priority, g.payload, g.run_at, g.attempt, g.max_attempts,
        g.dedup_key, g.created_at, g.started_at, g.finished_at, g.last_error, g.result, g.worker_id,
        g.lease_expires_at, g.lease_epoch, g.timeout, g.backoff
      from s1 cross join jobctl.get_job(s1.job_id) as g$$,
    $$select s1.job_id, 'tap_get_t', 'tap_get_q1', 'pending', -4, '{"k": "v"}'::jsonb, now() - interval '5 minutes', 0, 6,
        'tap-get-1', now(), null::timestamptz, null::timestamptz, null::text, null::jsonb, null::text,
        null::timestamptz, null::bigint, '2 minutes'::interval,
        jsonb_build_object('strategy', 'linear', 'base', interval '7 seconds'::text, 'max', interval '1 minute'::text,
            'jitter', false)
      from s1$$,
    'a pending job: every field as submitted, no lease'
);
select is((select count(*) from s1 cross join jobctl.get_job(s1.job_id)), 1::bigint, 'exactly one row');

-- running
create temp table c1 as
select * from jobctl.claim_job('tap_get_w', array['tap_get_q1'], 1, '40 seconds');
select results_eq(
    $$select g.state, g.attempt, g.worker_id, g.lease_epoch, g.lease_expires_at, g.started_at is not null
      from c1 cross join jobctl.get_job(c1.job_id) as g$$,
    $$select 'running', 1, 'tap_get_w', c1.lease_epoch, c1.lease_expires_at, true from c1$$,
    'a running job: attempt, worker, epoch and the lease''s expiry'
);
select is((select jobctl.heartbeat(job_id, lease_epoch, '5 minutes') from c1), 'ok', 'a heartbeat');
select results_eq(
    $$select g.lease_expires_at from c1 cross join jobctl.get_job(c1.job_id) as g$$,
    $$select lease_expires_at from jobctl._running where job_id = (select job_id from c1)$$,
    'get_job shows the extended lease'
);
select cmp_ok(
    (select g.lease_expires_at from c1 cross join jobctl.get_job(c1.job_id) as g),
    '>',
    (select lease_expires_at from c1),
    'later than the claim''s'
);

-- failed
select is((select jobctl.fail_job(job_id, lease_epoch, 'it broke') from c1), 'failed', 'the attempt fails');
select results_eq(
    $$select g.state, g.last_error, g.lease_expires_at, g.run_at > clock_timestamp(), g.finished_at
      from c1 cross join jobctl.get_job(c1.job_id) as g$$,
    $$values ('failed', 'it broke', null::timestamptz, true, null::timestamptz)$$,
    'a failed job: last_error, no lease, run_at in the future, not finished'
);

-- completed
create temp table s2 as
select * from jobctl.submit_job('tap_get_t', 'tap_get_q2', '{}');
create temp table c2 as
select * from jobctl.claim_job('tap_get_w', array['tap_get_q2']);
select ok((select jobctl.complete_job(job_id, lease_epoch, '[1, 2]') from c2), 'a job completes');
select results_eq(
    $$select g.state, g.result, g.lease_expires_at, g.finished_at >= g.started_at, g.worker_id, g.lease_epoch
      from c2 cross join jobctl.get_job(c2.job_id) as g$$,
    $$select 'completed', '[1, 2]'::jsonb, null::timestamptz, true, 'tap_get_w', c2.lease_epoch from c2$$,
    'a completed job: result, finished_at, no lease; worker and epoch of the last attempt'
);

select isnt(obj_description('jobctl.get_job(bigint)'::regprocedure), null, 'get_job has a comment');

select * from finish();
rollback;
