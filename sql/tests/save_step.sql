-- jobctl.save_step and jobctl.job_steps: a running job's steps, the first save of each winning,
-- fenced by the lease epoch (an old epoch's or another tenant's save writes nothing), each bound at
-- its limit and one past it, kept across a release and read back only by the job's tenants.
-- Tenants tap_step_t and tap_step_o, queue tap_step_q.
begin;
select plan(26);
set local jit = off;

select has_function('jobctl', 'save_step', array['bigint', 'bigint', 'text', 'jsonb'], 'save_step exists');
select has_function('jobctl', 'job_steps', array['bigint'], 'job_steps(job_id) exists');

create temp table s1 as select * from jobctl.submit_job('tap_step_t', 'tap_step_q', '{}');
create temp table c1 as select * from jobctl.claim_job('tap_step_w', array['tap_step_q']);

select is(
    (select jobctl.save_step(job_id, lease_epoch, 'charge', '{"id": "ch_1"}') from c1), true, 'a save under the lease: true'
);
select is((select jobctl.save_step(job_id, lease_epoch, 'charge', '{"id": "ch_2"}') from c1), true, 'the same step again: true');
select results_eq(
    $$select s.step, s.result, s.attempt from c1 cross join jobctl.job_steps(c1.job_id) as s$$,
    $$values ('charge', '{"id": "ch_1"}'::jsonb, 1)$$,
    'the first save wins: one step, its first result, the attempt that saved it'
);
select is((select jobctl.save_step(job_id, lease_epoch, 'empty') from c1), true, 'a step with no result (NULL)');
select is((select jobctl.save_step(job_id, lease_epoch + 1000, 'other', '1') from c1), false, 'another epoch: false');
select
    is((
        select count(*)::int from c1 cross join jobctl.job_steps(c1.job_id) as s
        where s.step = 'other'
    ), 0, 'and nothing written');

-- the epoch released (a worker shutting down) and claimed again: the old one is fenced, the steps stay
select is((select jobctl.release_job(job_id, lease_epoch) from c1), true, 'the lease released');
select is((select jobctl.save_step(job_id, lease_epoch, 'late', '1') from c1), false, 'the released epoch''s save: false');
create temp table c2 as select * from jobctl.claim_job('tap_step_w', array['tap_step_q']);
select results_eq(
    $$select step from c2 cross join jobctl.job_steps(c2.job_id) order by step$$,
    $$values ('charge'), ('empty')$$,
    'the next attempt reads the steps saved before, and none of the fenced saves'
);

-- bounds
select is((select jobctl.save_step(job_id, lease_epoch, repeat('s', 200)) from c2), true, 'a step name of 200 characters');
select throws_ok(
    $$select jobctl.save_step(job_id, lease_epoch, repeat('s', 201)) from c2$$, 'JC001',
    'step must be 1 to 200 printable characters, not starting with "event:"', 'a step name of 201 characters: JC001'
);
select throws_ok(
    $$select jobctl.save_step(job_id, lease_epoch, '') from c2$$, 'JC001', null, 'an empty step name: JC001'
);
select throws_ok(
    $$select jobctl.save_step(job_id, lease_epoch, E'a\u202eb') from c2$$, 'JC001', null, 'an unprintable step name: JC001'
);
select throws_ok(
    $$select jobctl.save_step(job_id, lease_epoch, 'event:x') from c2$$, 'JC001', null,
    'a name in the await_event outcomes'' space (event:): JC001'
);
select is(
    (select jobctl.save_step(job_id, lease_epoch, 'big', to_jsonb(repeat('x', 262142))) from c2), true,
    'a result of 262144 bytes as text'
);
select throws_ok(
    $$select jobctl.save_step(job_id, lease_epoch, 'bigger', to_jsonb(repeat('x', 262143))) from c2$$, 'JC001',
    'result is 262145 bytes or nests over 100 levels; the limits are 262144 bytes and 100 levels',
    'a result of 262145 bytes: JC001'
);
select is(
    (select jobctl.save_step(job_id, lease_epoch, 'deep', (repeat('[', 100) || repeat(']', 100))::jsonb) from c2), true,
    'a result 100 levels deep'
);
select throws_ok(
    $$select jobctl.save_step(job_id, lease_epoch, 'deeper', (repeat('[', 101) || repeat(']', 101))::jsonb) from c2$$,
    'JC001', null, 'a result 101 levels deep: JC001'
);
select throws_ok(
    $$select jobctl.save_step(null, 1, 'x')$$, 'JC001', 'job_id and lease_epoch must not be NULL', 'NULL job_id: JC001'
);

-- 1000 steps a job: the 1001st is refused, a step it has saves again
select is(
    (
        select count(*)::int from c2 cross join generate_series(1, 995) as g
        where jobctl.save_step(c2.job_id, c2.lease_epoch, 'n' || g, to_jsonb(g))
    ),
    995, '995 more steps: 1000 in all'
);
select throws_ok(
    $$select jobctl.save_step(job_id, lease_epoch, 'one more') from c2$$, 'JC001',
    format('job %s has 1000 steps, the limit', (select job_id from c2)), 'the 1001st step: JC001'
);
select is((select jobctl.save_step(job_id, lease_epoch, 'n7', '0') from c2), true, 'at the limit, a saved step saves again');

-- tenants: another tenant's worker is fenced, and reads no steps
create role tap_step_other nologin;
grant jobctl_worker to tap_step_other;
grant jobctl_reader to tap_step_other;
select jobctl.grant_tenant('tap_step_other', 'tap_step_o');
create temp table ids as select
    job_id,
    lease_epoch
from c2;
grant select on ids to tap_step_other;
set local session authorization tap_step_other;
select is((select jobctl.save_step(job_id, lease_epoch, 'theirs') from ids), false, 'another tenant''s save: fenced');
select is((select count(*)::int from ids cross join jobctl.job_steps(ids.job_id)), 0, 'another tenant reads no steps');
reset session authorization;

select * from finish();
rollback;
