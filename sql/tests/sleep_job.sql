-- jobctl.sleep_job: a running job ends its attempt without failing it: pending again, due at
-- until, parked in _delayed ('sleep'), the attempt not counted, its steps kept; its tenant's
-- max_running place and its concurrency key's place go to other jobs at once. Fenced: another
-- epoch changes nothing. Bounds on until. Tenant tap_sleep_t (max_running 1), queue tap_sleep_q.
begin;
select plan(24);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'sleep_job', array['bigint', 'bigint', 'timestamp with time zone'], 'sleep_job exists');

select jobctl.put_tenant('tap_sleep_t', max_running => 1);
create temp table s1 as select * from jobctl.submit_job('tap_sleep_t', 'tap_sleep_q', '{"n": 1}');
create temp table s2 as
select *
from jobctl.submit_job('tap_sleep_t', 'tap_sleep_q', '{"n": 2}', run_at => now() + interval '1 minute');
create temp table c1 as select * from jobctl.claim_job('tap_sleep_w', array['tap_sleep_q']);
select is((
    select count(*)::int from c1 cross join s1
    where c1.job_id = s1.job_id
), 1, 'the first job runs');
select is((select jobctl.save_step(job_id, lease_epoch, 'one', '1') from c1), true, 'it saves a step');

select is(
    (select jobctl.sleep_job(job_id, lease_epoch + 1000, now() + interval '1 hour') from c1), false, 'another epoch: false'
);
select is((select pg_temp.queued(job_id) from c1), 'running', 'and nothing changed');
select is(
    (select jobctl.sleep_job(job_id, lease_epoch, now() + interval '1 hour') from c1), true, 'a sleep under the lease: true'
);
select results_eq(
    $$select j.state, j.attempt, j.run_at, j.finished_at from c1 cross join pg_temp.job(c1.job_id) as j$$,
    $$values ('pending', 0, now() + interval '1 hour', null::timestamptz)$$,
    'the job is pending, due at until, its attempt back to 0 (not counted)'
);
select results_eq(
    $$select d.parked, d.retry, d.run_at from c1 join jobctl._delayed as d using (job_id)$$,
    $$values ('sleep', false, now() + interval '1 hour')$$,
    'its token: a _delayed row parked ''sleep'''
);
select is((select pg_temp.queued(job_id) from c1), 'delayed', 'no lease left');
select results_eq(
    $$select g.parked, g.awaiting from c1 cross join jobctl.get_job(c1.job_id) as g$$,
    $$values ('sleep', null::text)$$, 'get_job: parked sleep'
);
select results_eq(
    $$select f.job_id from jobctl.find_jobs('{"tenant_id": "tap_sleep_t", "parked": "sleep"}') as f$$,
    $$select job_id from c1$$, 'find_jobs'' filter parked: sleep finds it, and only it'
);
select throws_ok(
    $$select * from jobctl.find_jobs('{"parked": "nap"}')$$, 'JC001', 'filter.parked must be sleep, event or job',
    'a filter parked nap: JC001'
);
select results_eq(
    $$select h.event, h.attempt, h.detail
      from c1 cross join jobctl.job_history(c1.job_id) as h where h.event in ('claimed', 'slept')$$,
    $$values ('claimed', 1, null::text), ('slept', 1, (now() + interval '1 hour')::text)$$,
    'history: the claim and the sleep, with the wake time'
);
select is((select jobctl.complete_job(job_id, lease_epoch) from c1), false, 'the slept epoch''s completion is fenced');
select is((select jobctl.sleep_job(job_id, lease_epoch, now()) from c1), false, 'so is a second sleep');

-- max_running 1: the sleeper's place is free, the tenant's other job runs
select pg_temp.make_due(job_id) from s2;
create temp table c2 as select * from jobctl.claim_job('tap_sleep_w', array['tap_sleep_q']);
select results_eq($$select job_id from c2$$, $$select job_id from s2$$, 'under max_running 1 the tenant''s other job runs');
select is((select jobctl.complete_job(job_id, lease_epoch) from c2), true, 'and completes');

-- woken at its time: the same job, the same attempt number, its steps kept
select pg_temp.make_due(job_id) from c1;
create temp table c3 as select * from jobctl.claim_job('tap_sleep_w', array['tap_sleep_q']);
select results_eq(
    $$select job_id, attempt from c3$$, $$select job_id, 1 from c1$$, 'due again: claimed with attempt 1 again'
);
select results_eq($$select s.step from c3 cross join jobctl.job_steps(c3.job_id) as s$$, $$values ('one')$$, 'its step is kept');

-- a concurrency key's place goes to the key's next job while the holder sleeps
select jobctl.put_concurrency_limit('tap_sleep_t', 'k', 1);
select jobctl.complete_job(job_id, lease_epoch) from c3;
create temp table k1 as select * from jobctl.submit_job('tap_sleep_t', 'tap_sleep_kq', '{}', concurrency_key => 'k');
create temp table k2 as select * from jobctl.submit_job('tap_sleep_t', 'tap_sleep_kq', '{}', concurrency_key => 'k');
create temp table ck1 as select * from jobctl.claim_job('tap_sleep_w', array['tap_sleep_kq']);
select is((select count(*)::int from jobctl._held inner join k2 on _held.job_id = k2.job_id), 1, 'the key''s second job is held');
select jobctl.sleep_job(job_id, lease_epoch, now() + interval '1 hour') from ck1;
select is((select pg_temp.queued(job_id) from k2), 'ready', 'the holder sleeps: the key''s next job is let in');

-- bounds
select throws_ok(
    $$select jobctl.sleep_job(1, 1, now() + interval '1 year 1 minute')$$, 'JC001', null, 'until over 1 year ahead: JC001'
);
select throws_ok($$select jobctl.sleep_job(1, 1, 'infinity')$$, 'JC001', null, 'until infinity: JC001');
select throws_ok($$select jobctl.sleep_job(1, 1, null)$$, 'JC001', null, 'until NULL: JC001');

select * from finish();
rollback;
