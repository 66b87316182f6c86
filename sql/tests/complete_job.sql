-- jobctl.complete_job: true and completed under the current epoch; false (fenced) and nothing
-- changed otherwise. Tenant tap_complete_t, queues tap_complete_*; every claim names its queue.
begin;
select plan(35);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', 'complete_job', array['bigint', 'bigint', 'jsonb'], 'complete_job(job_id, lease_epoch, result) exists'
);
select function_returns('jobctl', 'complete_job', array['bigint', 'bigint', 'jsonb'], 'boolean', 'it returns boolean');

-- wait for any other reaper (pg_cron's tick) to finish and keep it out of this transaction
select name from jobctl._lock
where name = 'reap' and bucket = 0 for update;

-- the happy path
create temp table j1 as
select * from jobctl.submit_job('tap_complete_t', 'tap_complete_q1', '{}');
create temp table c1 as
select * from jobctl.claim_job('tap_complete_w', array['tap_complete_q1']);
select is(
    (select jobctl.complete_job(job_id, lease_epoch, '{"answer": 42}') from c1), true,
    'complete_job under the current epoch: true'
);
select results_eq(
    $$select j.state, j.result, j.finished_at >= j.started_at, j.last_error, j.attempt, j.lease_epoch
      from c1 cross join pg_temp.job(c1.job_id) as j$$,
    $$select 'completed', '{"answer": 42}'::jsonb, true, null::text, 1, lease_epoch from c1$$,
    'the job is completed with its result and finish time'
);
select is_empty(
    $$select 1 from jobctl._running where job_id = (select job_id from c1)$$, 'its lease is gone from jobctl._running'
);
select is(
    (select g.lease_expires_at from c1 cross join jobctl.get_job(c1.job_id) as g), null,
    'get_job shows no lease'
);

-- a second completion is fenced and changes nothing
create temp table done1 as
select j.*
from c1 cross join pg_temp.job(c1.job_id) as j;
select is((select jobctl.complete_job(job_id, lease_epoch, '{"answer": 0}') from c1), false, 'completing twice: false');
select results_eq(
    $$select j.state, j.result, j.finished_at from c1 cross join pg_temp.job(c1.job_id) as j$$,
    $$select state, result, finished_at from done1$$,
    'the second completion changed nothing'
);

-- wrong epochs on a running job
create temp table j2 as
select * from jobctl.submit_job('tap_complete_t', 'tap_complete_q2', '{}');
create temp table c2 as
select * from jobctl.claim_job('tap_complete_w', array['tap_complete_q2']);
select is((select jobctl.complete_job(job_id, lease_epoch + 1, '{}') from c2), false, 'a newer epoch: false');
select is((select jobctl.complete_job(job_id, lease_epoch - 1, '{}') from c2), false, 'an older epoch: false');
select is((select jobctl.complete_job(job_id, null, '{}') from c2), false, 'a NULL epoch: false');
select results_eq(
    $$select j.state, j.result, j.finished_at, j.lease_epoch, r.lease_epoch
      from c2 cross join pg_temp.job(c2.job_id) as j inner join jobctl._running as r on r.job_id = c2.job_id$$,
    $$select 'running', null::jsonb, null::timestamptz, lease_epoch, lease_epoch from c2$$,
    'a fenced completion leaves the job running under its lease'
);
select is(jobctl.complete_job(-1, 1), false, 'an unknown job: false');

-- an expired lease nobody took over may still complete; the result defaults to NULL
update jobctl._running set lease_expires_at = now() - interval '1 minute'
where job_id = (select job_id from c2);
select is((select jobctl.complete_job(job_id, lease_epoch) from c2), true, 'an expired lease not yet reaped: true');
select results_eq(
    $$select j.state, j.result from c2 cross join pg_temp.job(c2.job_id) as j$$,
    $$values ('completed', null::jsonb)$$,
    'completed, with a NULL result by default'
);

-- reaped: the old epoch is fenced; after a re-claim the new one completes
create temp table j3 as
select * from jobctl.submit_job('tap_complete_t', 'tap_complete_q3', '{}');
create temp table c3 as
select * from jobctl.claim_job('tap_complete_w', array['tap_complete_q3']);
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from c3);
select cmp_ok(jobctl.reap_expired_leases(), '>=', 1, 'the expired lease is reaped');
select is((select jobctl.complete_job(job_id, lease_epoch) from c3), false, 'completing a reaped lease: false');
select is((select j.state from c3 cross join pg_temp.job(c3.job_id) as j), 'failed', 'the reaped job stays failed');
create temp table c3b as
select * from jobctl.claim_job('tap_complete_w2', array['tap_complete_q3']);
select is((select count(*) from c3b), 1::bigint, 'the reaped job is claimed again');
select is((select jobctl.complete_job(job_id, lease_epoch) from c3), false, 'the old epoch is still fenced');
select is((select jobctl.complete_job(job_id, lease_epoch, '"ok"') from c3b), true, 'the new epoch completes');
select results_eq(
    $$select j.state, j.attempt, j.worker_id, j.result from c3b cross join pg_temp.job(c3b.job_id) as j$$,
    $$values ('completed', 2, 'tap_complete_w2', '"ok"'::jsonb)$$,
    'completed by the second worker on attempt 2'
);

-- cancelled while running: fenced
create temp table j4 as
select * from jobctl.submit_job('tap_complete_t', 'tap_complete_q4', '{}');
create temp table c4 as
select * from jobctl.claim_job('tap_complete_w', array['tap_complete_q4']);
select is((select jobctl.cancel_job(job_id) from c4), 'cancelled', 'the running job is cancelled');
select is((select jobctl.complete_job(job_id, lease_epoch) from c4), false, 'completing a cancelled job: false');
select results_eq(
    $$select j.state, j.result from c4 cross join pg_temp.job(c4.job_id) as j$$,
    $$values ('cancelled', null::jsonb)$$,
    'it stays cancelled'
);

-- failed by the worker: fenced
create temp table j5 as
select * from jobctl.submit_job('tap_complete_t', 'tap_complete_q5', '{}');
create temp table c5 as
select * from jobctl.claim_job('tap_complete_w', array['tap_complete_q5']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c5), 'failed', 'the job fails');
select is((select jobctl.complete_job(job_id, lease_epoch) from c5), false, 'completing after fail_job: false');
select is((select j.state from c5 cross join pg_temp.job(c5.job_id) as j), 'failed', 'it stays failed');

-- exactly-once with the caller's own writes: a completion rolled back with them leaves the job running
create temp table side_effect (job_id bigint);
create temp table j6 as
select * from jobctl.submit_job('tap_complete_t', 'tap_complete_q6', '{}');
create temp table c6 as
select * from jobctl.claim_job('tap_complete_w', array['tap_complete_q6']);
-- the caller writes, completes, then fails: its (sub)transaction rolls back
do $do$
begin
    insert into side_effect
    select job_id from c6;
    if not (select jobctl.complete_job(job_id, lease_epoch) from c6) then
        raise exception 'complete_job returned false';
    end if;
    raise exception using errcode = 'TAP01', message = 'the caller fails after completing';
exception when sqlstate 'TAP01' then
    null;
end
$do$;
select is_empty($$select 1 from side_effect$$, 'the caller''s write was rolled back');
select is(
    (select j.state from c6 cross join pg_temp.job(c6.job_id) as j), 'running',
    'and so was the completion: the job is still running'
);
select is((select jobctl.complete_job(job_id, lease_epoch) from c6), true, 'and its lease can still complete it');

-- a result is bounded like a payload: 100 levels deep at most (docs/security.md, Bounds)
select jobctl.submit_job('tap_complete_t', 'tap_complete_deep', '{}');
create temp table c_deep as select * from jobctl.claim_job('tap_complete_w', array['tap_complete_deep']);
select throws_ok(
    format(
        'select jobctl.complete_job(%s, %s, %L::jsonb)', (select job_id from c_deep), (select lease_epoch from c_deep),
        repeat('[', 300) || repeat(']', 300)
    ),
    'JC001', format('the result of job %s is nested more than 100 levels deep', (select job_id from c_deep)),
    'a result 300 levels deep: JC001'
);
select throws_ok(
    format(
        'select jobctl.complete_job(%s, %s, %L::jsonb)', (select job_id from c_deep), (select lease_epoch from c_deep),
        repeat('{"a": ', 101) || '1' || repeat('}', 101)
    ),
    'JC001', format('the result of job %s is nested more than 100 levels deep', (select job_id from c_deep)),
    'an object 101 levels deep: JC001 (the bound, from above)'
);
select ok(
    jobctl.complete_job(
        (select job_id from c_deep), (select lease_epoch from c_deep),
        (repeat('[', 100) || repeat(']', 100))::jsonb
    ),
    'one 100 levels deep completes the job'
);

select isnt(
    obj_description('jobctl.complete_job(bigint, bigint, jsonb)'::regprocedure), null, 'complete_job has a comment'
);

select * from finish();
rollback;
