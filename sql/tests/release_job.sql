-- jobctl.release_job: a worker gives back a running job's lease without finishing it. The job is
-- pending again, due now, in jobctl._ready; the interrupted attempt does not count; the released
-- epoch is fenced. Wrong epoch, finished job or unknown id: false, nothing changed; NULL: JC001.
-- Tenant tap_release_t, queues tap_release_*; every claim names its queue.
begin;
select plan(47);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'release_job', array['bigint', 'bigint'], 'release_job(job_id, lease_epoch) exists');
select function_returns('jobctl', 'release_job', array['bigint', 'bigint'], 'boolean', 'it returns boolean');

-- the job row, the queue row and the events of a job, as one text: "nothing changed" compares it
create function pg_temp.snapshot(p_job_id bigint) returns text
language sql as $$
    select concat_ws(' | ',
        (select j::text from jobctl.job as j where j.job_id = p_job_id),
        (select r::text from jobctl._running as r where r.job_id = p_job_id),
        (select r::text from jobctl._ready as r where r.job_id = p_job_id),
        (select r::text from jobctl._delayed as r where r.job_id = p_job_id),
        (select string_agg(e::text, ';' order by e.at, e.event) from jobctl._event as e where e.job_id = p_job_id)
    )
$$;

-- a running job, released under its epoch
create temp table s1 as
select * from jobctl.submit_job('tap_release_t', 'tap_release_q1', '{"n": 1}', priority => 7);
select is((select j.attempt from s1 cross join pg_temp.job(s1.job_id) as j), 0, 'before its claim: attempt 0');
create temp table c1 as
select * from jobctl.claim_job('tap_release_w1', array['tap_release_q1']);
select results_eq(
    $$select job_id, attempt from c1$$, $$select job_id, 1 from s1$$, 'it is claimed: attempt 1'
);
create temp table t1 as
select clock_timestamp() as before_release;
select is((select jobctl.release_job(job_id, lease_epoch) from c1), true, 'release under its epoch: true');
create temp table t1b as
select clock_timestamp() as after_release;
select results_eq(
    $$select j.state, j.attempt, j.finished_at, j.last_error from c1 cross join pg_temp.job(c1.job_id) as j$$,
    $$values ('pending', 0, null::timestamptz, null::text)$$,
    'the job is pending again, attempt back to 0 (the attempt does not count), not finished, no error'
);
select ok(
    (
        select j.run_at between t1.before_release and t1b.after_release
        from c1 cross join pg_temp.job(c1.job_id) as j cross join t1 cross join t1b
    ),
    'its run_at is the release time: due now'
);
select is((select pg_temp.queued(job_id) from c1), 'ready', 'its lease is gone and it is back in jobctl._ready');
select results_eq(
    $$select r.queue, r.tenant_id, r.priority::integer, r.run_at, r.created_at
      from c1 inner join jobctl._ready as r on c1.job_id = r.job_id$$,
    $$select j.queue, j.tenant_id, 7, j.run_at, j.created_at from c1 cross join pg_temp.job(c1.job_id) as j$$,
    'the _ready row has the job''s queue, tenant, priority, run_at and created_at'
);
select results_eq(
    $$select g.state, g.lease_expires_at from c1 cross join jobctl.get_job(c1.job_id) as g$$,
    $$values ('pending', null::timestamptz)$$,
    'get_job: pending, no lease'
);

-- the released epoch is no longer current
select is((select jobctl.heartbeat(job_id, lease_epoch) from c1), 'lost', 'the released epoch''s heartbeat: lost');
select is((select jobctl.complete_job(job_id, lease_epoch) from c1), false, 'its completion is fenced: false');
select is((select jobctl.fail_job(job_id, lease_epoch, 'x') from c1), null, 'its failure is fenced: NULL');
select is((select jobctl.release_job(job_id, lease_epoch) from c1), false, 'releasing it again: false');
select results_eq(
    $$select j.state, j.attempt from c1 cross join pg_temp.job(c1.job_id) as j$$,
    $$values ('pending', 0)$$,
    'the fenced calls changed nothing: still pending, attempt 0'
);
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id, h.detail from c1 cross join jobctl.job_history(c1.job_id) as h$$,
    $$select 'submitted', 0, null::bigint, null::text, null::text
      union all select 'claimed', 1, lease_epoch, 'tap_release_w1', null from c1
      union all select 'released', 1, lease_epoch, 'tap_release_w1', null from c1$$,
    'history: submitted, claimed, released (with the attempt, epoch and worker)'
);
select results_eq(
    $$select h.at from c1 cross join jobctl.job_history(c1.job_id) as h where h.event in ('claimed', 'released')$$,
    $$select lease_expires_at - interval '30 seconds' from c1
      union all select j.run_at from c1 cross join pg_temp.job(c1.job_id) as j$$,
    'the claimed event is at the claim time, the released event at the release time'
);

-- claimable again, under a greater epoch, as the same attempt number
create temp table c1b as
select * from jobctl.claim_job('tap_release_w2', array['tap_release_q1']);
select results_eq(
    $$select job_id, attempt, payload from c1b$$, $$select job_id, 1, '{"n": 1}'::jsonb from s1$$,
    'the released job is claimed again: attempt 0 + 1'
);
select cmp_ok(
    (select lease_epoch from c1b), '>', (select lease_epoch from c1), 'under a strictly greater lease_epoch'
);
select is((select jobctl.release_job(c1.job_id, c1.lease_epoch) from c1), false, 'the old epoch cannot release it');
select is((select jobctl.heartbeat(job_id, lease_epoch) from c1b), 'ok', 'the new lease is current');
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id from c1 cross join jobctl.job_history(c1.job_id) as h$$,
    $$select 'submitted', 0, null::bigint, null::text
      union all select 'claimed', 1, lease_epoch, 'tap_release_w1' from c1
      union all select 'released', 1, lease_epoch, 'tap_release_w1' from c1
      union all select 'claimed', 1, lease_epoch, 'tap_release_w2' from c1b$$,
    'history: submitted, claimed, released, claimed again'
);

-- a completed job: false, nothing changed
select ok((select jobctl.complete_job(job_id, lease_epoch, '{"ok": true}') from c1b), 'the second claim completes');
create temp table snap_done as
select pg_temp.snapshot(job_id) as snap from c1b;
select is((select jobctl.release_job(job_id, lease_epoch) from c1b), false, 'releasing a completed job: false');
select is(
    (select pg_temp.snapshot(job_id) from c1b), (select snap from snap_done), 'the completed job is unchanged'
);
select results_eq(
    $$select j.state, j.result from c1b cross join pg_temp.job(c1b.job_id) as j$$,
    $$values ('completed', '{"ok": true}'::jsonb)$$,
    'it stays completed with its result'
);

-- wrong epochs on a running job: false, nothing changed
create temp table s2 as
select * from jobctl.submit_job('tap_release_t', 'tap_release_q2', '{}');
create temp table c2 as
select * from jobctl.claim_job('tap_release_w1', array['tap_release_q2']);
create temp table snap2 as
select pg_temp.snapshot(job_id) as snap from c2;
select is((select jobctl.release_job(job_id, lease_epoch + 1) from c2), false, 'a newer epoch: false');
select is((select jobctl.release_job(job_id, lease_epoch - 1) from c2), false, 'an older epoch: false');
select is((select pg_temp.snapshot(job_id) from c2), (select snap from snap2), 'the running job is unchanged');
select is((select pg_temp.queued(job_id) from c2), 'running', 'it still holds its lease');
select is((select jobctl.heartbeat(job_id, lease_epoch) from c2), 'ok', 'and its epoch is current');
-- (the heartbeat moved lease_expires_at: take the snapshot again)
truncate snap2;
insert into snap2
select pg_temp.snapshot(job_id) from c2;

-- unknown id, and a pending job that was never claimed
select is(jobctl.release_job(-1, 1), false, 'an unknown job: false');
create temp table s3 as
select * from jobctl.submit_job('tap_release_t', 'tap_release_q3', '{}');
create temp table snap3 as
select pg_temp.snapshot(job_id) as snap from s3;
select is(
    (select jobctl.release_job(s3.job_id, c2.lease_epoch) from s3 cross join c2), false,
    'a pending job never claimed: false'
);
select is((select pg_temp.snapshot(job_id) from s3), (select snap from snap3), 'the pending job is unchanged');

-- a cancelled job: false, it stays cancelled
create temp table s4 as
select * from jobctl.submit_job('tap_release_t', 'tap_release_q4', '{}');
create temp table c4 as
select * from jobctl.claim_job('tap_release_w1', array['tap_release_q4']);
select is((select jobctl.cancel_job(job_id) from c4), 'cancelled', 'a running job is cancelled');
select is((select jobctl.release_job(job_id, lease_epoch) from c4), false, 'releasing the cancelled job: false');
select results_eq(
    $$select j.state, pg_temp.queued(j.job_id) from c4 cross join pg_temp.job(c4.job_id) as j$$,
    $$values ('cancelled', 'nowhere')$$,
    'it stays cancelled and in no queue'
);

-- a later attempt: attempt goes back to the previous attempt's number, not to 0
create temp table s5 as
select * from jobctl.submit_job(
    'tap_release_t', 'tap_release_q5', '{}', max_attempts => 2,
    backoff => '{"strategy": "fixed", "base": "0 seconds", "jitter": false}'
);
create temp table c5a as
select * from jobctl.claim_job('tap_release_w1', array['tap_release_q5']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c5a), 'failed', 'attempt 1 of 2 fails');
create temp table c5b as
select * from jobctl.claim_job('tap_release_w1', array['tap_release_q5']);
select is((select attempt from c5b), 2, 'attempt 2 (the last) is claimed');
select is((select jobctl.release_job(job_id, lease_epoch) from c5b), true, 'it is released');
select results_eq(
    $$select j.state, j.attempt, j.last_error from c5b cross join pg_temp.job(c5b.job_id) as j$$,
    $$values ('pending', 1, 'boom')$$,
    'pending, attempt back to 1 (last_error of attempt 1 kept)'
);
create temp table c5c as
select * from jobctl.claim_job('tap_release_w1', array['tap_release_q5']);
select results_eq(
    $$select job_id, attempt, max_attempts from c5c$$, $$select job_id, 2, 2 from s5$$,
    'the released last attempt runs again as attempt 2 of 2 (the release did not use it up)'
);
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch from c5c cross join jobctl.job_history(c5c.job_id) as h$$,
    $$select 'submitted', 0, null::bigint
      union all select 'claimed', 1, lease_epoch from c5a
      union all select 'failed', 1, lease_epoch from c5a
      union all select 'claimed', 2, lease_epoch from c5b
      union all select 'released', 2, lease_epoch from c5b
      union all select 'claimed', 2, lease_epoch from c5c$$,
    'history: submitted, claimed, failed, claimed, released, claimed'
);

-- argument errors
select throws_ok(
    $$select jobctl.release_job(null, 1)$$, 'JC001', 'job_id and lease_epoch must not be NULL', 'NULL job_id: JC001'
);
select throws_ok(
    (select format('select jobctl.release_job(%s, null)', job_id) from c2),
    'JC001', 'job_id and lease_epoch must not be NULL', 'NULL lease_epoch: JC001'
);
select is((select pg_temp.snapshot(job_id) from c2), (select snap from snap2), 'argument errors change nothing');

select isnt(obj_description('jobctl.release_job(bigint, bigint)'::regprocedure), null, 'release_job has a comment');

select * from finish();
rollback;
