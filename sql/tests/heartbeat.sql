-- jobctl.heartbeat: ok (lease extended) / lost (epoch no longer current) / cancelled, argument
-- errors, and progress (stored by the heartbeat's own HOT update, fenced, bounded, kept by the job
-- when the attempt ends). Tenant tap_hb_t, queues tap_hb_*; every claim names its queue.
begin;
select plan(89);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function(
    'jobctl', 'heartbeat', array['bigint', 'bigint', 'interval', 'jsonb'], 'heartbeat(job_id, lease_epoch, extend, progress)'
);
select hasnt_function(
    'jobctl', 'heartbeat', array['bigint', 'bigint', 'interval'], 'the three-argument overload is gone (no ambiguous calls)'
);

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

-- ---------------------------------------------------------------- progress
create function pg_temp.progress_of(p_job_id bigint) returns jsonb
language sql as $$
    select g.progress from jobctl.get_job(p_job_id) as g
$$;
create function pg_temp.stored_progress(p_job_id bigint) returns jsonb
language sql as $$
    select r.progress from jobctl._running as r where r.job_id = p_job_id
$$;
-- this transaction's updates and HOT updates of _running's partitions, and the row's place
create function pg_temp.running_updates() returns bigint[]
language sql as $$
    select array[sum(pg_stat_get_xact_tuples_updated(i.inhrelid)), sum(pg_stat_get_xact_tuples_hot_updated(i.inhrelid))]::bigint[]
    from pg_inherits as i where i.inhparent = 'jobctl._running'::regclass
$$;
create function pg_temp.place_of(p_job_id bigint) returns text
language sql as $$
    select r.tableoid::regclass::text || ' page ' || (r.ctid::text::point)[0]
    from jobctl._running as r where r.job_id = p_job_id
$$;

create temp table j6 as
select * from jobctl.submit_job('tap_hb_t', 'tap_hb_q6', '{}');
create temp table c6 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q6'], 1, '10 seconds');
select is((select pg_temp.progress_of(job_id) from c6), null, 'a job just claimed shows no progress');

-- row versions: a heartbeat with progress is one HOT update, as a plain one is
create temp table v0 as select
    pg_temp.running_updates() as n,
    (select pg_temp.place_of(job_id) from c6) as place;
select is((select jobctl.heartbeat(job_id, lease_epoch, '1 minute') from c6), 'ok', 'a plain heartbeat: ok');
create temp table v1 as select pg_temp.running_updates() as n;
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"done": 40, "total": 100}') from c6), 'ok',
    'a heartbeat with progress: ok'
);
create temp table v2 as select
    pg_temp.running_updates() as n,
    (select pg_temp.place_of(job_id) from c6) as place;
select is((select v1.n[1] - v0.n[1] from v0, v1), 1::bigint, 'a plain heartbeat updates one row');
select is((select v1.n[2] - v0.n[2] from v0, v1), 1::bigint, '... as a HOT update');
select is((select v2.n[1] - v1.n[1] from v1, v2), 1::bigint, 'a heartbeat with progress updates one row too');
select is((select v2.n[2] - v1.n[2] from v1, v2), 1::bigint, '... as a HOT update too');
select is((select place from v2), (select place from v0), 'the row version stays on its page');
select is((select pg_temp.stored_progress(job_id) from c6), '{"done": 40, "total": 100}'::jsonb, 'progress is stored');
select is((select pg_temp.progress_of(job_id) from c6), '{"done": 40, "total": 100}'::jsonb, 'get_job shows it');
select is(
    (select l.progress from c6 cross join jobctl.list_jobs('tap_hb_t', queue => 'tap_hb_q6') as l),
    '{"done": 40, "total": 100}'::jsonb, 'list_jobs shows it'
);
select is(
    (
        select a.attname::text from pg_attribute as a
        where
            a.attrelid = 'jobctl.job_info'::regclass and a.attnum > 0 and not a.attisdropped
            and a.attnum > (
                select f.attnum from pg_attribute as f
                where f.attrelid = 'jobctl.job_info'::regclass and f.attname = 'fire_time'
            )
        order by a.attnum limit 1
    ),
    'progress', 'progress is job_info''s column after fire_time (once the last column)'
);

-- NULL progress keeps the stored one (and still extends the lease)
update jobctl._running set lease_expires_at = now()
where job_id = (select job_id from c6);
select is((select jobctl.heartbeat(job_id, lease_epoch, '1 hour', null) from c6), 'ok', 'a heartbeat with NULL progress: ok');
select is(
    (select pg_temp.stored_progress(job_id) from c6), '{"done": 40, "total": 100}'::jsonb,
    'NULL progress keeps the stored one'
);
select ok((select pg_temp.lease_of(job_id) > clock_timestamp() + interval '50 minutes' from c6), 'and extends the lease');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, progress => '{"percent": 55.5}') from c6), 'ok',
    'progress by name, extend by default'
);
select is((select pg_temp.progress_of(job_id) from c6), '{"percent": 55.5}'::jsonb, 'the latest progress wins');

-- fenced: under a stale epoch nothing is stored, and the answer is as without progress
select is(
    (select jobctl.heartbeat(job_id, lease_epoch + 1, '1 minute', '{"zombie": true}') from c6), 'lost',
    'progress under a newer epoch: lost'
);
select is(
    (select jobctl.heartbeat(job_id, lease_epoch - 1, '1 minute', '{"zombie": true}') from c6), 'lost',
    'progress under an older epoch: lost'
);
select is((select pg_temp.progress_of(job_id) from c6), '{"percent": 55.5}'::jsonb, 'a stale epoch stores nothing');

-- the bound: 2,000 bytes as jsonb (pg_column_size), at it and one past it; depth 100
-- a progress of p_bytes bytes as jsonb: {"s": "xx...x"}
create function pg_temp.sized(p_bytes integer) returns jsonb
language sql as $$
    select jsonb_build_object('s', repeat('x', p_bytes - 17))
$$;
select is(pg_column_size(pg_temp.sized(2000)), 2000, 'the test value at the bound is 2,000 bytes');
select is(pg_column_size(pg_temp.sized(2001)), 2001, 'and the one past it 2,001');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', pg_temp.sized(2000)) from c6), 'ok',
    'progress of 2,000 bytes: ok'
);
select is((select pg_temp.stored_progress(job_id) from c6), pg_temp.sized(2000), 'it is stored whole');
update jobctl._running set lease_expires_at = now() + interval '5 minutes'
where job_id = (select job_id from c6);
select throws_ok(
    $$select jobctl.heartbeat(job_id, lease_epoch, '1 hour', pg_temp.sized(2001)) from c6$$,
    'JC001', 'progress must be at most 2000 bytes as jsonb, not 2001', 'progress of 2,001 bytes: JC001'
);
select is((select pg_temp.stored_progress(job_id) from c6), pg_temp.sized(2000), 'nothing was written: the progress stays');
select ok(
    (select pg_temp.lease_of(job_id) < clock_timestamp() + interval '6 minutes' from c6),
    'nothing was written: the lease was not extended'
);
do $$
begin
    perform jobctl.heartbeat(job_id, lease_epoch, '1 hour', pg_temp.sized(2001)) from c6;
exception when sqlstate 'JC001' then
    declare
        v_detail text;
        v_hint text;
    begin
        get stacked diagnostics v_detail = pg_exception_detail, v_hint = pg_exception_hint;
        create temp table progress_error as select v_detail as detail, v_hint as hint;
    end;
end
$$;
select is((select detail from progress_error), 'field: progress', 'its DETAIL names the field');
select matches((select hint from progress_error), '^Nothing was written', 'its HINT says nothing was written');
select throws_ok(
    $$select jobctl.heartbeat(job_id, lease_epoch, '1 minute', (select jsonb_agg(1) from generate_series(1, 500))) from c6$$,
    'JC001', 'progress must be at most 2000 bytes as jsonb, not 6008',
    'the bound is the stored size: 500 small numbers, 1,500 characters of JSON text, are 6,008 bytes'
);
select throws_ok(
    $$select jobctl.heartbeat(job_id, lease_epoch, '1 minute', (repeat('[', 101) || repeat(']', 101))::jsonb) from c6$$,
    'JC001', 'progress must not nest arrays and objects more than 100 levels deep', 'progress 101 levels deep: JC001'
);
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', (repeat('[', 100) || repeat(']', 100))::jsonb) from c6),
    'ok', 'progress 100 levels deep: ok'
);
select throws_ok(
    $$select jobctl.heartbeat(-1, 1, '1 minute', (repeat('[', 101) || repeat(']', 101))::jsonb)$$,
    'JC001', null, 'bad progress is refused before the lease is looked up (an unknown job too)'
);

-- the end of the attempt: the job keeps its last progress (written by the update that ends it)
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"done": 7, "total": 8}') from c6), 'ok',
    'progress before completing'
);
select ok((select jobctl.complete_job(job_id, lease_epoch, '{"r": 1}') from c6), 'the job completes');
select is((select pg_temp.progress_of(job_id) from c6), '{"done": 7, "total": 8}'::jsonb, 'completed: the job keeps it');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"late": true}') from c6), 'lost',
    'progress after completion: lost'
);
select is((select pg_temp.progress_of(job_id) from c6), '{"done": 7, "total": 8}'::jsonb, '... and changes nothing');

-- fail_job keeps it; the next attempt starts without, and its own replaces the job's at its end
create temp table j7 as
select *
from jobctl.submit_job('tap_hb_t', 'tap_hb_q7', '{}', max_attempts => 3, backoff => '{"strategy": "fixed", "base": "0 seconds"}');
create temp table c7 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q7']);
select is((select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"step": "upload"}') from c7), 'ok', 'attempt 1 reports');
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c7), 'failed', 'attempt 1 fails');
select is((select pg_temp.progress_of(job_id) from c7), '{"step": "upload"}'::jsonb, 'failed: the job keeps it');
create temp table c7b as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q7']);
select is((select attempt from c7b), 2, 'attempt 2 is claimed');
select is((select pg_temp.progress_of(job_id) from c7b), null, 'a new attempt shows no progress until it reports');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"old": true}') from c7), 'lost',
    'attempt 1''s epoch reports again: lost'
);
select is((select pg_temp.stored_progress(job_id) from c7b), null, 'attempt 1''s report is not stored on attempt 2''s lease');
select is((select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"step": "verify"}') from c7b), 'ok', 'attempt 2 reports');

-- reaped: the job keeps it; a zombie (the reaped lease) reporting after a new claim changes nothing
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from c7b);
select cmp_ok(jobctl.reap_expired_leases(), '>=', 1, 'attempt 2''s expired lease is reaped');
select is((select pg_temp.progress_of(job_id) from c7b), '{"step": "verify"}'::jsonb, 'reaped: the job keeps it');
create temp table c7c as
select * from jobctl.claim_job('tap_hb_w2', array['tap_hb_q7']);
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"zombie": true}') from c7b), 'lost',
    'the reaped lease reports: lost'
);
select is((select pg_temp.progress_of(job_id) from c7c), null, 'the zombie''s report is not stored');
select is((select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"step": "third"}') from c7c), 'ok', 'attempt 3 reports');

-- cancelled while running: the job keeps it
select is((select jobctl.cancel_job(job_id) from c7c), 'cancelled', 'the running job is cancelled');
select is((select pg_temp.progress_of(job_id) from c7c), '{"step": "third"}'::jsonb, 'cancelled: the job keeps it');
select is(
    (select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '{"late": true}') from c7c), 'cancelled',
    'progress after the cancel: cancelled, as without'
);
select is((select pg_temp.progress_of(job_id) from c7c), '{"step": "third"}'::jsonb, '... and nothing is stored');

-- given back (release_job): the job keeps it
create temp table j8 as
select * from jobctl.submit_job('tap_hb_t', 'tap_hb_q8', '{}');
create temp table c8 as
select * from jobctl.claim_job('tap_hb_w', array['tap_hb_q8']);
select is((select jobctl.heartbeat(job_id, lease_epoch, '1 minute', '[1, 2]') from c8), 'ok', 'any JSON value is progress');
select ok((select jobctl.release_job(job_id, lease_epoch) from c8), 'the job is given back');
select is((select pg_temp.progress_of(job_id) from c8), '[1, 2]'::jsonb, 'released: the job keeps it');

select * from finish();
rollback;
