-- jobctl.await_job: a running job spawns a child for its step once, is parked as waiting until the
-- child ends (its completion, death or cancellation releases it), then reads the child's end, saved as
-- the step; another epoch is fenced and writes nothing; a cancel of the parent cancels the child
-- unless cancel_with_parent is false. Tenant tap_aj_t, queues tap_aj_p (parents) and tap_aj_c (children).
begin;
select plan(23);
set local jit = off;
\ir helpers.psql
-- the child every await_job call below names (the first call of a step submits it)
create function pg_temp.child() returns jsonb
language sql as $$ select '{"queue": "tap_aj_c", "payload": {}}'::jsonb $$;

select has_function('jobctl', 'await_job', array['bigint', 'bigint', 'text', 'jsonb', 'boolean'], 'await_job exists');

create temp table p1 as select * from jobctl.submit_job('tap_aj_t', 'tap_aj_p', '{}');
create temp table c1 as select * from jobctl.claim_job('tap_aj_w', array['tap_aj_p']);
select results_eq(
    $$select a.outcome from c1 cross join jobctl.await_job(c1.job_id, c1.lease_epoch + 1000, 'spawn:a', pg_temp.child()) as a$$,
    $$values ('fenced')$$, 'another epoch: fenced'
);
select
    is((
        select count(*)::int from jobctl.job
        where tenant_id = 'tap_aj_t' and queue = 'tap_aj_c'
    ), 0, 'and no child submitted');
create temp table a1 as
select a.*
from c1
cross join jobctl.await_job(c1.job_id, c1.lease_epoch, 'spawn:a', '{"queue": "tap_aj_c", "payload": {"n": 1}}') as a;
select results_eq($$select outcome, state from a1$$, $$values ('suspended', 'pending')$$, 'the child is submitted: suspended');
select results_eq(
    $$select j.tenant_id, j.queue, j.payload from a1 cross join pg_temp.job(a1.child_id) as j$$,
    $$values ('tap_aj_t', 'tap_aj_c', '{"n": 1}'::jsonb)$$, 'the child: the parent''s tenant, its queue and payload'
);
select results_eq(
    $$select j.state, j.attempt from c1 cross join pg_temp.job(c1.job_id) as j$$,
    $$values ('waiting', 0)$$, 'the parent is waiting, its attempt not counted'
);
select
    is((
        select count(*)::int
        from jobctl._edge as e
        inner join a1 on e.parent_id = a1.child_id
        inner join c1 on e.child_id = c1.job_id
        where e.on_end
    ), 1, 'an on_end edge from the child');
select results_eq(
    $$select f.job_id, f.parked, f.awaiting from jobctl.find_jobs('{"tenant_id": "tap_aj_t", "parked": "job"}') as f$$,
    $$select c1.job_id, 'job', a1.child_id::text from c1 cross join a1$$, 'find_jobs: parked job, awaiting its child'
);
select results_eq(
    $$select a.outcome from c1 cross join jobctl.await_job(c1.job_id, c1.lease_epoch, 'spawn:a', pg_temp.child()) as a$$,
    $$values ('fenced')$$, 'the parked epoch is fenced'
);

-- the child completes: the parent is due, and reads the child's end; no second child
create temp table k1 as select * from jobctl.claim_job('tap_aj_w', array['tap_aj_c']);
select results_eq($$select job_id from k1$$, $$select child_id from a1$$, 'the child is claimed');
select is((select jobctl.complete_job(job_id, lease_epoch, '{"size": 3}') from k1), true, 'and completes');
select is((select pg_temp.queued(job_id) from c1), 'ready', 'its parent is due');
create temp table c2 as select * from jobctl.claim_job('tap_aj_w', array['tap_aj_p']);
select results_eq($$select job_id, attempt from c2$$, $$select job_id, 1 from c1$$, 'the parent is claimed, attempt 1 again');
select results_eq(
    $$select a.outcome, a.child_id, a.state, a.result
      from c2 cross join jobctl.await_job(c2.job_id, c2.lease_epoch, 'spawn:a', pg_temp.child()) as a$$,
    $$select 'ended', child_id, 'completed', '{"size": 3}'::jsonb from a1$$, 'resumed: ended, the child''s result'
);
select is((
    select count(*)::int from jobctl.job
    where tenant_id = 'tap_aj_t' and queue = 'tap_aj_c'
), 1, 'one child in all');
select results_eq(
    $$select s.step, s.result ->> 'state' from c2 cross join jobctl.job_steps(c2.job_id) as s$$,
    $$values ('spawn:a', 'completed')$$, 'the end is the step spawn:a'
);

-- a child that dies releases its parent too, which reads its error
create temp table a2 as
select a.*
from c2
cross join jobctl.await_job(c2.job_id, c2.lease_epoch, 'spawn:b', '{"queue": "tap_aj_c", "payload": {}, "max_attempts": 1}') as a;
create temp table k2 as select * from jobctl.claim_job('tap_aj_w', array['tap_aj_c']);
select jobctl.fail_job(job_id, lease_epoch, 'boom') from k2;
create temp table c3 as select * from jobctl.claim_job('tap_aj_w', array['tap_aj_p']);
select results_eq(
    $$select a.outcome, a.state, a.error
      from c3 cross join jobctl.await_job(c3.job_id, c3.lease_epoch, 'spawn:b', pg_temp.child()) as a$$,
    $$values ('ended', 'dead', 'boom')$$, 'a dead child: ended, dead, its error'
);

-- a cancel of the waiting parent cancels its child; with cancel_with_parent false it does not
create temp table a3 as
select a.* from c3 cross join jobctl.await_job(c3.job_id, c3.lease_epoch, 'spawn:c', '{"queue": "tap_aj_c", "payload": {}}') as a;
select is((select jobctl.cancel_job(job_id) from c3), 'cancelled', 'the waiting parent is cancelled');
select is((select j.state from a3 cross join pg_temp.job(a3.child_id) as j), 'cancelled', 'and its child with it');
create temp table p4 as select * from jobctl.submit_job('tap_aj_t', 'tap_aj_p', '{}');
create temp table c4 as select * from jobctl.claim_job('tap_aj_w', array['tap_aj_p']);
create temp table a4 as
select a.*
from c4
cross join jobctl.await_job(c4.job_id, c4.lease_epoch, 'spawn:d', '{"queue": "tap_aj_c", "payload": {}}', false) as a;
select is((select jobctl.cancel_job(job_id) from c4), 'cancelled', 'a parent with cancel_with_parent false is cancelled');
select is((select j.state from a4 cross join pg_temp.job(a4.child_id) as j), 'pending', 'its child stays');

-- bounds
select throws_ok(
    $$select * from jobctl.await_job(1, 1, 'x', '{"queue": "q", "payload": {}, "tenant_id": "other"}')$$, 'JC001', null,
    'a child naming a tenant: JC001'
);
select throws_ok($$select * from jobctl.await_job(1, 1, 'event:x', '{}')$$, 'JC001', null, 'a step named event:...: JC001');

select * from finish();
rollback;
