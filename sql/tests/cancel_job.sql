-- jobctl.cancel_job: pending, delayed, failed and running jobs become cancelled and leave their
-- queue; finished jobs raise JC010, unknown ids P0002. Tenant tap_cancel_t, queues tap_cancel_*.
begin;
select plan(42);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'cancel_job', array['bigint'], 'cancel_job(job_id) exists');

-- the error cancel_job raises for a job, as 'SQLSTATE: message'
create function pg_temp.cancel_error(p_job_id bigint) returns text
language plpgsql as $$
begin
    perform jobctl.cancel_job(p_job_id);
    return 'no error';
exception when others then
    return sqlstate || ': ' || sqlerrm;
end
$$;

-- pending, due now
create temp table s_pending as
select * from jobctl.submit_job('tap_cancel_t', 'tap_cancel_pending', '{}');
select is((select pg_temp.queued(job_id) from s_pending), 'ready', 'a pending job is ready');
select is((select jobctl.cancel_job(job_id) from s_pending), 'cancelled', 'cancel a pending job: cancelled');
select results_eq(
    $$select j.state, j.finished_at is not null, j.attempt from s_pending as s cross join pg_temp.job(s.job_id) as j$$,
    $$values ('cancelled', true, 0)$$,
    'the job is cancelled and finished'
);
select is(
    (select j.last_error from s_pending as s cross join pg_temp.job(s.job_id) as j), 'cancelled: on request',
    'its last_error says it was cancelled on request'
);
select is((select pg_temp.queued(job_id) from s_pending), 'nowhere', 'it left jobctl._ready');
select is_empty(
    $$select * from jobctl.claim_job('tap_cancel_w', array['tap_cancel_pending'])$$, 'a cancelled job is not claimed'
);
select results_eq(
    $$select h.event, h.attempt from s_pending as s cross join jobctl.job_history(s.job_id) as h$$,
    $$values ('submitted', 0), ('cancelled', 0)$$,
    'history: submitted, cancelled'
);
select is(
    (
        select h.detail from s_pending as s cross join jobctl.job_history(s.job_id) as h
        where h.event = 'cancelled'
    ),
    'cancelled: on request',
    'the cancelled event says so too'
);

-- pending, delayed
create temp table s_delayed as
select * from jobctl.submit_job('tap_cancel_t', 'tap_cancel_delayed', '{}', run_at => now() + interval '1 day');
select is((select pg_temp.queued(job_id) from s_delayed), 'delayed', 'a delayed job waits in jobctl._delayed');
select is((select jobctl.cancel_job(job_id) from s_delayed), 'cancelled', 'cancel a delayed job: cancelled');
select is((select j.state from s_delayed as s cross join pg_temp.job(s.job_id) as j), 'cancelled', 'it is cancelled');
select is((select pg_temp.queued(job_id) from s_delayed), 'nowhere', 'it left jobctl._delayed');

-- running
create temp table s_running as
select * from jobctl.submit_job('tap_cancel_t', 'tap_cancel_running', '{}');
create temp table c_running as
select * from jobctl.claim_job('tap_cancel_w', array['tap_cancel_running']);
select is((select jobctl.cancel_job(job_id) from c_running), 'cancelled', 'cancel a running job: cancelled');
select results_eq(
    $$select j.state, j.finished_at is not null, j.attempt, j.lease_epoch
      from c_running as c cross join pg_temp.job(c.job_id) as j$$,
    $$select 'cancelled', true, 1, lease_epoch from c_running$$,
    'the job is cancelled; attempt and epoch are kept'
);
select is((select pg_temp.queued(job_id) from c_running), 'nowhere', 'its lease is revoked (gone from _running)');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch) from c_running), 'cancelled', 'the worker''s heartbeat: cancelled'
);
select is((select jobctl.complete_job(job_id, lease_epoch) from c_running), false, 'its completion is fenced');
select is((select jobctl.fail_job(job_id, lease_epoch, 'x') from c_running), null, 'so is its failure');
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id from c_running as c cross join jobctl.job_history(c.job_id) as h$$,
    $$select 'submitted', 0, null::bigint, null::text
      union all select 'claimed', 1, lease_epoch, 'tap_cancel_w' from c_running
      union all select 'cancelled', 1, lease_epoch, 'tap_cancel_w' from c_running$$,
    'history: submitted, claimed, cancelled (with the attempt, epoch and worker)'
);

-- failed, waiting for its retry
create temp table s_failed as
select * from jobctl.submit_job(
    'tap_cancel_t', 'tap_cancel_failed', '{}', backoff => '{"strategy": "fixed", "base": "1 hour", "jitter": false}'
);
create temp table c_failed as
select * from jobctl.claim_job('tap_cancel_w', array['tap_cancel_failed']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c_failed), 'failed', 'a job fails');
select is((select pg_temp.queued(job_id) from c_failed), 'delayed', 'and waits an hour for its retry');
select is((select jobctl.cancel_job(job_id) from c_failed), 'cancelled', 'cancel a failed job: cancelled');
select is((select pg_temp.queued(job_id) from c_failed), 'nowhere', 'it left jobctl._delayed');
select results_eq(
    $$select j.state, j.last_error from c_failed as c cross join pg_temp.job(c.job_id) as j$$,
    $$values ('cancelled', 'cancelled: on request')$$,
    'it is cancelled; last_error says so (it once kept boom)'
);
select is(
    (
        select string_agg(h.event || ': ' || h.detail, '; ' order by h.at)
        from c_failed as c cross join jobctl.job_history(c.job_id) as h
        where h.detail is not null
    ),
    'failed: boom; cancelled: cancelled: on request',
    'the attempt''s error stays in its history'
);

-- failed, then cancelled in bulk (cancel_jobs runs the same jobctl._cancel)
create temp table s_bulk as
select * from jobctl.submit_job(
    'tap_cancel_t', 'tap_cancel_bulk', '{}', backoff => '{"strategy": "fixed", "base": "1 hour", "jitter": false}'
);
select is(
    (
        select jobctl.fail_job(c.job_id, c.lease_epoch, 'bulk boom')
        from jobctl.claim_job('tap_cancel_w', array['tap_cancel_bulk']) as c
    ),
    'failed',
    'another job fails'
);
select is(
    (
        select j.last_error
        from s_bulk as s
        cross join jobctl.cancel_jobs(jsonb_build_object('job_ids', jsonb_build_array(s.job_id))) as b
        cross join pg_temp.job(s.job_id) as j
        where b.acted = 1
    ),
    'cancelled: on request',
    'cancel_jobs: its last_error says it was cancelled on request'
);

-- failed and due at once (no backoff)
create temp table s_failed_due as
select * from jobctl.submit_job(
    'tap_cancel_t', 'tap_cancel_failed_due', '{}', backoff => '{"strategy": "fixed", "base": "0 seconds"}'
);
create temp table c_failed_due as
select * from jobctl.claim_job('tap_cancel_w', array['tap_cancel_failed_due']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c_failed_due), 'failed', 'a job fails, due at once');
select is((select pg_temp.queued(job_id) from c_failed_due), 'ready', 'it is ready');
select is((select jobctl.cancel_job(job_id) from c_failed_due), 'cancelled', 'cancel it: cancelled');
select is((select pg_temp.queued(job_id) from c_failed_due), 'nowhere', 'it left jobctl._ready');

-- finished jobs: JC010, nothing changed
create temp table s_done as
select * from jobctl.submit_job('tap_cancel_t', 'tap_cancel_done', '{}');
create temp table c_done as
select * from jobctl.claim_job('tap_cancel_w', array['tap_cancel_done']);
select ok((select jobctl.complete_job(job_id, lease_epoch) from c_done), 'a job completes');
select throws_ok(
    (select format('select jobctl.cancel_job(%s)', job_id) from s_done),
    'JC010', (select format('job %s is completed; only pending, failed or running jobs can be cancelled', job_id) from s_done),
    'cancel a completed job: JC010'
);
select is((select j.state from s_done as s cross join pg_temp.job(s.job_id) as j), 'completed', 'it stays completed');

create temp table s_dead as
select * from jobctl.submit_job('tap_cancel_t', 'tap_cancel_dead', '{}', max_attempts => 1);
create temp table c_dead as
select * from jobctl.claim_job('tap_cancel_w', array['tap_cancel_dead']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c_dead), 'dead', 'a job dies');
select is(
    (select pg_temp.cancel_error(job_id) from s_dead),
    (select format('JC010: job %s is dead; only pending, failed or running jobs can be cancelled', job_id) from s_dead),
    'cancel a dead job: JC010'
);
select is(
    (select pg_temp.cancel_error(job_id) from s_pending),
    (select format('JC010: job %s is cancelled; only pending, failed or running jobs can be cancelled', job_id) from s_pending),
    'cancel a cancelled job: JC010'
);
select results_eq(
    $$select h.event from s_pending as s cross join jobctl.job_history(s.job_id) as h$$,
    $$values ('submitted'), ('cancelled')$$,
    'a refused cancel records nothing'
);

-- unknown id
select throws_ok($$select jobctl.cancel_job(-1)$$, 'P0002', 'job -1 not found', 'an unknown job: P0002');
select throws_ok($$select jobctl.cancel_job(null)$$, 'P0002', null, 'a NULL job id: P0002');

select isnt(obj_description('jobctl.cancel_job(bigint)'::regprocedure), null, 'cancel_job has a comment');

select * from finish();
rollback;
