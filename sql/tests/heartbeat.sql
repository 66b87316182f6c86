-- jobctl.heartbeat: ok (lease extended) / lost (epoch no longer current) / cancelled, and argument
-- errors. Tenant tap_hb_t, queues tap_hb_*; every claim names its queue.
begin;
select plan(30);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'heartbeat', array['bigint', 'bigint', 'interval'], 'heartbeat(job_id, lease_epoch, extend)');

-- the reaper runs alone: wait for any other run (pg_cron's ticker) to finish and keep it out of
-- this transaction, so reap_expired_leases() below does the work here
-- wait for any other reaper (pg_cron's tick) to finish and keep it out of this transaction
select name from jobctl._lock
where name = 'reap' and bucket = 0 for update;

create function pg_temp.lease_of(p_job_id bigint) returns timestamptz
language sql as $$
    select lease_expires_at from jobctl._running where job_id = p_job_id
$$;

-- a running job, lease 10 s
create temp table j1 as
select * from jobctl.submit_job('tap_hb_t', 'tap_hb_q1', '{}');
create temp table c1 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q1'], 1, '10 seconds');

create temp table hb1 as
select
    clock_timestamp() as t0,
    jobctl.heartbeat(c1.job_id, c1.lease_epoch, '1 hour') as answer,
    clock_timestamp() as t1
from c1;
select is((select answer from hb1), 'ok', 'heartbeat under the current epoch: ok');
select ok(
    (select pg_temp.lease_of(c1.job_id) between hb1.t0 + interval '1 hour' and hb1.t1 + interval '1 hour' from c1, hb1),
    'the lease now expires extend after the heartbeat (database clock)'
);
select is(
    (select g.lease_expires_at from c1 cross join jobctl.get_job(c1.job_id) as g),
    (select pg_temp.lease_of(job_id) from c1),
    'get_job shows the extended lease'
);

create temp table hb2 as
select
    clock_timestamp() as t0,
    jobctl.heartbeat(c1.job_id, c1.lease_epoch) as answer,
    clock_timestamp() as t1
from c1;
select is((select answer from hb2), 'ok', 'heartbeat with the default extend: ok');
select ok(
    (
        select pg_temp.lease_of(c1.job_id) between hb2.t0 + interval '30 seconds' and hb2.t1 + interval '30 seconds'
        from c1, hb2
    ),
    'the default extend is 30 seconds'
);

-- an expired lease that nobody has taken over is still current
update jobctl._running set lease_expires_at = now() - interval '1 minute'
where job_id = (select job_id from c1);
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute') from c1), 'ok',
    'an expired lease not yet reaped: ok'
);
select ok((select pg_temp.lease_of(job_id) > clock_timestamp() from c1), 'and the lease is current again');

-- wrong epochs and unknown jobs
select is((select jobctl.heartbeat(job_id, lease_epoch + 1) from c1), 'lost', 'a newer epoch than the lease: lost');
select is((select jobctl.heartbeat(job_id, lease_epoch - 1) from c1), 'lost', 'an older epoch: lost');
select is(jobctl.heartbeat(-1, 1), 'lost', 'an unknown job: lost');
select is(
    (select j.state from c1 cross join jobctl.get_job(c1.job_id) as j), 'running',
    'a lost heartbeat changes nothing'
);

-- completed: lost
select ok((select jobctl.complete_job(job_id, lease_epoch) from c1), 'the job completes');
select is((select jobctl.heartbeat(job_id, lease_epoch) from c1), 'lost', 'heartbeat after completion: lost');

-- failed by the worker: lost
create temp table j2 as
select * from jobctl.submit_job('tap_hb_t', 'tap_hb_q2', '{}');
create temp table c2 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q2']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c2), 'failed', 'the job fails');
select is((select jobctl.heartbeat(job_id, lease_epoch) from c2), 'lost', 'heartbeat after fail_job: lost');

-- cancelled while running: cancelled
create temp table j3 as
select * from jobctl.submit_job('tap_hb_t', 'tap_hb_q3', '{}');
create temp table c3 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q3']);
select is((select jobctl.cancel_job(job_id) from c3), 'cancelled', 'the running job is cancelled');
select is((select jobctl.heartbeat(job_id, lease_epoch) from c3), 'cancelled', 'heartbeat after cancel: cancelled');
select is((select jobctl.heartbeat(job_id, lease_epoch + 1) from c3), 'lost', 'with another epoch: lost');

-- reaped, then claimed by another worker: the old epoch is lost, the new one ok
create temp table j4 as
select * from jobctl.submit_job('tap_hb_t', 'tap_hb_q4', '{}');
create temp table c4 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q4']);
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from c4);
select cmp_ok(jobctl.reap_expired_leases(), '>=', 1, 'the expired lease is reaped');
select is((select jobctl.heartbeat(job_id, lease_epoch) from c4), 'lost', 'heartbeat after the reap: lost');
create temp table c4b as
select * from jobctl.claim_job('tap_hb_w2', array['tap_hb_q4']);
select is((select jobctl.heartbeat(job_id, lease_epoch) from c4b), 'ok', 'the new claim''s heartbeat: ok');
select is((select jobctl.heartbeat(job_id, lease_epoch) from c4), 'lost', 'the old epoch stays lost');

-- reaped (lease revoked), then cancelled while failed: the epoch was not current when the job was cancelled
create temp table j5 as
select * from jobctl.submit_job('tap_hb_t', 'tap_hb_q5', '{}');
create temp table c5 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q5']);
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from c5);
select cmp_ok(jobctl.reap_expired_leases(), '>=', 1, 'the second expired lease is reaped');
select is((select jobctl.cancel_job(job_id) from c5), 'cancelled', 'the reaped (failed) job is cancelled');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch) from c5), 'lost',
    'an epoch revoked by the reaper before the job was cancelled: lost (contract: cancelled only while running under it)'
);

-- argument errors
select throws_ok(
    $$select jobctl.heartbeat(null, 1)$$, 'JC001', 'job_id and lease_epoch must not be NULL', 'NULL job_id: JC001'
);
select throws_ok(
    $$select jobctl.heartbeat(1, null)$$, 'JC001', 'job_id and lease_epoch must not be NULL', 'NULL lease_epoch: JC001'
);
select throws_ok(
    $$select jobctl.heartbeat(1, 1, '0 seconds')$$, 'JC001', 'extend must be positive and at most 1 day', 'extend 0: JC001'
);
select throws_ok(
    $$select jobctl.heartbeat(1, 1, '2 days')$$, 'JC001', 'extend must be positive and at most 1 day',
    'extend over a day: JC001'
);

select * from finish();
rollback;
