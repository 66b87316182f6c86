-- jobctl.claimable_weight: the summed weight of the tenants with claimable jobs, by queue filter,
-- without paused tenants, split over a tenant's queues, and only the caller's tenants.
-- Tenants tap_cw_*, queues tap_cw_*; each check names a filter of its own (the lane listing is shared
-- per filter for up to 100 ms).
begin;
select plan(9);
\ir helpers.psql

select has_function('jobctl', 'claimable_weight', array['text[]'], 'claimable_weight(queues) exists');

select jobctl.put_tenant('tap_cw_a', weight => 3);
select jobctl.put_tenant('tap_cw_b', weight => 5);
select jobctl.put_tenant('tap_cw_c', weight => 7);
select jobctl.submit_job('tap_cw_a', 'tap_cw_q1', '{}');
select jobctl.submit_job('tap_cw_b', 'tap_cw_q1', '{}');
select jobctl.submit_job('tap_cw_b', 'tap_cw_q2', '{}');
select jobctl.submit_job('tap_cw_c', 'tap_cw_q3', '{}', run_at => now() + interval '1 hour');

select is(jobctl.claimable_weight(array['tap_cw_q1']), 8::float8, 'one queue: the weights of its tenants with due jobs');
select is(
    jobctl.claimable_weight(array['tap_cw_q1', 'tap_cw_q2']), 8::float8,
    'a tenant with due jobs in two queues counts its weight once'
);
select is(jobctl.claimable_weight(array['tap_cw_q3']), 0::float8, 'a delayed job is not claimable: 0');
select is(jobctl.claimable_weight(array['tap_cw_none']), 0::float8, 'nothing due: 0');

select jobctl.pause_tenant('tap_cw_b');
select is(
    jobctl.claimable_weight(array['tap_cw_q1', 'tap_cw_q2', 'tap_cw_q3']), 3::float8, 'a paused tenant does not count'
);

-- a worker login acting for tap_cw_a only counts tap_cw_a
select jobctl.pause_tenant('tap_cw_b', false);
create role tap_cw_worker in role jobctl_worker;
select jobctl.grant_tenant('tap_cw_worker', 'tap_cw_a');
set local session authorization tap_cw_worker;
select is(
    jobctl.claimable_weight(array['tap_cw_q2', 'tap_cw_q1']), 3::float8, 'a worker acting for one tenant sees its weight only'
);
reset session authorization;

select throws_ok(
    $$select jobctl.claimable_weight(array['a', null])$$, 'JC001', 'queues must not contain NULL', 'a NULL queue is refused'
);
select throws_ok(
    $$select jobctl.claimable_weight(array_fill('q'::text, array[1001]))$$, 'JC001', null, 'over 1,000 queues are refused'
);

select * from finish();
rollback;
