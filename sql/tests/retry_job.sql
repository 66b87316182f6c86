-- jobctl.retry_job: failed, dead and cancelled jobs become pending and due now; attempt kept,
-- max_attempts raised to at least attempt + 1; other states JC010, unknown ids P0002.
-- Tenant tap_retry_t, queues tap_retry_*; every claim names its queue.
begin;
select plan(41);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'retry_job', array['bigint'], 'retry_job(job_id) exists');

-- the error retry_job raises for a job, as 'SQLSTATE: message'
create function pg_temp.retry_error(p_job_id bigint) returns text
language plpgsql as $$
begin
    perform jobctl.retry_job(p_job_id);
    return 'no error';
exception when others then
    return sqlstate || ': ' || sqlerrm;
end
$$;

-- failed, waiting an hour for its retry
create temp table s_failed as
select * from jobctl.submit_job(
    'tap_retry_t', 'tap_retry_failed', '{}', backoff => '{"strategy": "fixed", "base": "1 hour", "jitter": false}'
);
create temp table c_failed as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_failed']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c_failed), 'failed', 'a job fails');
select is((select pg_temp.queued(job_id) from c_failed), 'delayed', 'and waits an hour');
create temp table t_failed as
select
    clock_timestamp() as t0,
    jobctl.retry_job(job_id) as answer,
    clock_timestamp() as t1
from s_failed;
select is((select answer from t_failed), 'pending', 'retry a failed job: pending');
select results_eq(
    $$select j.state, j.attempt, j.max_attempts, j.finished_at, j.last_error
      from s_failed as s cross join pg_temp.job(s.job_id) as j$$,
    $$values ('pending', 1, 3, null::timestamptz, 'boom')$$,
    'pending, attempt kept, max_attempts already above it, last_error kept'
);
select ok(
    (select j.run_at between t.t0 and t.t1 from s_failed as s cross join pg_temp.job(s.job_id) as j, t_failed as t),
    'due now (run_at = the retry time)'
);
select is((select pg_temp.queued(job_id) from s_failed), 'ready', 'it moved from jobctl._delayed to jobctl._ready');
create temp table c_failed2 as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_failed']);
select results_eq(
    $$select c2.job_id, c2.attempt, c2.lease_epoch > c1.lease_epoch from c_failed2 as c2, c_failed as c1$$,
    $$select job_id, 2, true from s_failed$$,
    'it is claimed at once: attempt 2, a greater epoch'
);

-- dead after its last attempt: max_attempts is raised
create temp table s_dead as
select * from jobctl.submit_job('tap_retry_t', 'tap_retry_dead', '{}', max_attempts => 1);
create temp table c_dead as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_dead']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c_dead), 'dead', 'a job dies on its only attempt');
select is((select jobctl.retry_job(job_id) from s_dead), 'pending', 'retry a dead job: pending');
select results_eq(
    $$select j.state, j.attempt, j.max_attempts, j.finished_at from s_dead as s cross join pg_temp.job(s.job_id) as j$$,
    $$values ('pending', 1, 2, null::timestamptz)$$,
    'attempt 1 kept, max_attempts raised from 1 to 2, no longer finished'
);
select is((select pg_temp.queued(job_id) from s_dead), 'ready', 'it is ready');
create temp table c_dead2 as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_dead']);
select results_eq(
    $$select job_id, attempt, max_attempts from c_dead2$$,
    $$select job_id, 2, 2 from s_dead$$,
    'claimed again: attempt 2 of 2'
);
select is((select jobctl.fail_job(job_id, lease_epoch, 'again') from c_dead2), 'dead', 'failing that attempt: dead again');
select results_eq(
    $$select h.event, h.attempt, h.detail from s_dead as s cross join jobctl.job_history(s.job_id) as h$$,
    $$values ('submitted', 0, null::text), ('claimed', 1, null), ('dead', 1, 'boom'),
        ('retried', 1, 'manual retry of a dead job'), ('claimed', 2, null), ('dead', 2, 'again')$$,
    'history: submitted, claimed, dead, retried, claimed, dead'
);

-- dead because not retryable: max_attempts already above attempt, kept
create temp table s_nr as
select * from jobctl.submit_job('tap_retry_t', 'tap_retry_nr', '{}', max_attempts => 5);
create temp table c_nr as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_nr']);
select is(
    (select jobctl.fail_job(job_id, lease_epoch, 'bad input', false) from c_nr), 'dead', 'a non-retryable failure: dead'
);
select is((select jobctl.retry_job(job_id) from s_nr), 'pending', 'retry it: pending');
select results_eq(
    $$select j.attempt, j.max_attempts from s_nr as s cross join pg_temp.job(s.job_id) as j$$,
    $$values (1, 5)$$,
    'max_attempts stays 5'
);

-- cancelled before it ever ran
create temp table s_cancelled as
select * from jobctl.submit_job('tap_retry_t', 'tap_retry_cancelled', '{}', run_at => now() + interval '1 day');
select is((select jobctl.cancel_job(job_id) from s_cancelled), 'cancelled', 'a delayed job is cancelled');
select is((select jobctl.retry_job(job_id) from s_cancelled), 'pending', 'retry a cancelled job: pending');
select results_eq(
    $$select j.state, j.attempt, j.max_attempts, j.run_at <= clock_timestamp()
      from s_cancelled as s cross join pg_temp.job(s.job_id) as j$$,
    $$values ('pending', 0, 3, true)$$,
    'pending and due now (not at its old run_at), attempt 0, max_attempts 3'
);
select is((select pg_temp.queued(job_id) from s_cancelled), 'ready', 'it is ready');

-- cancelled while running: the retried job gets a new, greater epoch
create temp table s_cr as
select * from jobctl.submit_job('tap_retry_t', 'tap_retry_cr', '{}');
create temp table c_cr as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_cr']);
select is((select jobctl.cancel_job(job_id) from c_cr), 'cancelled', 'a running job is cancelled');
select is((select jobctl.retry_job(job_id) from s_cr), 'pending', 'and retried: pending');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch) from c_cr), 'cancelled',
    'the old epoch''s heartbeat still says cancelled: that lease was ended by the cancel'
);
create temp table c_cr2 as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_cr']);
select ok(
    (select c2.lease_epoch > c1.lease_epoch and c2.attempt = 2 from c_cr2 as c2, c_cr as c1),
    're-claimed with a greater epoch, attempt 2'
);
select is((select jobctl.complete_job(job_id, lease_epoch) from c_cr), false, 'the old epoch cannot complete it');
select is((select jobctl.complete_job(job_id, lease_epoch) from c_cr2), true, 'the new one can');

-- other states: JC010, nothing changed
create temp table s_pending as
select * from jobctl.submit_job('tap_retry_t', 'tap_retry_pending', '{}');
select throws_ok(
    (select format('select jobctl.retry_job(%s)', job_id) from s_pending),
    'JC010', (select format('job %s is pending; only failed, dead or cancelled jobs can be retried', job_id) from s_pending),
    'retry a pending job: JC010'
);
select is((select pg_temp.queued(job_id) from s_pending), 'ready', 'it stays ready, once');
create temp table c_pending as
select * from jobctl.claim_job('tap_retry_w', array['tap_retry_pending']);
select is(
    (select pg_temp.retry_error(job_id) from c_pending),
    (select format('JC010: job %s is running; only failed, dead or cancelled jobs can be retried', job_id) from c_pending),
    'retry a running job: JC010'
);
select is((select jobctl.heartbeat(job_id, lease_epoch) from c_pending), 'ok', 'its lease is untouched');
select ok((select jobctl.complete_job(job_id, lease_epoch) from c_pending), 'it completes');
select is(
    (select pg_temp.retry_error(job_id) from c_pending),
    (select format('JC010: job %s is completed; only failed, dead or cancelled jobs can be retried', job_id) from c_pending),
    'retry a completed job: JC010'
);
select is(
    (select j.state from c_pending as c cross join pg_temp.job(c.job_id) as j), 'completed', 'it stays completed'
);

-- unknown id
select throws_ok($$select jobctl.retry_job(-1)$$, 'P0002', 'job -1 not found', 'an unknown job: P0002');
select throws_ok($$select jobctl.retry_job(null)$$, 'P0002', null, 'a NULL job id: P0002');

-- a retry is a resubmission: max_pending and the submit rate hold (a probe: cancel, resubmit,
-- then retry the cancelled jobs took a tenant to twice its max_pending)
select jobctl.put_tenant('tap_retry_quota', max_pending => 2);
create temp table q_jobs as
select (jobctl.submit_job('tap_retry_quota', 'tap_retry_q', jsonb_build_object('g', g))).job_id from generate_series(1, 2) as g;
select jobctl.cancel_job(job_id) from q_jobs;
select jobctl.submit_job('tap_retry_quota', 'tap_retry_q', '{}') from generate_series(1, 2);
select throws_ok(
    format('select jobctl.retry_job(%s)', (select min(job_id) from q_jobs)),
    'JC004', 'tenant tap_retry_quota is over its max_pending (2 unfinished + 1 retried > 2)',
    'retrying a cancelled job of a tenant at its max_pending: JC004'
);
select is(
    (select j.state from pg_temp.job((select min(job_id) from q_jobs)) as j), 'cancelled', 'the job stays cancelled'
);
select jobctl.put_tenant('tap_retry_rate', submit_rate => 0.001, submit_burst => 1);
create temp table r_job as select s.job_id from jobctl.submit_job('tap_retry_rate', 'tap_retry_q', '{}') as s;
select jobctl.cancel_job(job_id) from r_job;
select throws_ok(
    format('select jobctl.retry_job(%s)', (select job_id from r_job)),
    'JC005', 'tenant tap_retry_rate is over its submit rate (0.001 a second)',
    'retrying with the submit bucket empty: JC005'
);

select isnt(obj_description('jobctl.retry_job(bigint)'::regprocedure), null, 'retry_job has a comment');

select * from finish();
rollback;
