-- jobctl.schedule_runs: a schedule's runs (expanded and run by hand), newest first, paginated,
-- bounded, only for the caller's tenants; and the schedule and fire time each job records
-- (get_job). Tenants tap_runs_*.
begin;
select plan(15);

select has_function(
    'jobctl', 'schedule_runs', array['text', 'text', 'bigint', 'integer'],
    'schedule_runs(tenant_id, name, before_id, max_rows) exists'
);

-- a daily schedule in New York down for five days: catch_up 3 enqueues the latest three fire times
select jobctl.put_schedule(
    'tap_runs_a', 'daily', '0 9 * * *', 'tap_runs_q', '{}', catch_up => 3, time_zone => 'America/New_York'
);
select jobctl.put_schedule('tap_runs_a', 'other', '@every 1 hour', 'tap_runs_q', '{}');
update jobctl.schedule set next_fire_at = now() - interval '5 days'
where tenant_id = 'tap_runs_a';
select jobctl.expand_schedules();
select jobctl.submit_job('tap_runs_a', 'tap_runs_q', '{}');  -- not a schedule's run
select jobctl.run_schedule('tap_runs_a', 'daily') as by_hand \gset

select results_eq(
    $$select count(*)::integer, count(distinct fire_time)::integer, bool_and(run_at = fire_time),
          bool_and(to_char(fire_time at time zone 'America/New_York', 'HH24:MI') = '09:00'),
          max(fire_time) - min(fire_time)
      from jobctl.job where tenant_id = 'tap_runs_a' and schedule_name = 'daily'
          and fire_time < now() - interval '90 seconds' and job_id <> $$ || :by_hand,
    $$values (3, 3, true, true, interval '2 days')$$,
    'each expanded run records its schedule and fire time (09:00 New York on three days; run_at = fire time)'
);
select results_eq(
    format($$select fire_time, state from jobctl.schedule_runs('tap_runs_a', 'daily') where job_id = %s$$, :by_hand),
    $$values (now(), 'pending')$$,
    'run_schedule''s job records the schedule, and now as its fire time'
);
select results_eq(
    $$select job_id from jobctl.schedule_runs('tap_runs_a', 'daily')$$,
    $$select job_id from jobctl.job where tenant_id = 'tap_runs_a' and schedule_name = 'daily' order by job_id desc$$,
    'the runs, newest first: the schedule''s jobs only'
);
-- (fire times within 90 s of now are on time, enqueued beside the missed ones: counted apart, so that
-- the file does not depend on the time of day it runs at)
select is(
    (
        select count(*)::integer from jobctl.schedule_runs('tap_runs_a', 'daily')
        where fire_time < now() - interval '90 seconds' or job_id = :by_hand
    ),
    4,
    'three expanded and one by hand'
);
-- (its hourly fire times fall on the hour: within 90 s after one, the on-time run is enqueued beside
-- the latest missed one; CI at 26bd884 ran this at 10:01)
select is(
    (
        select count(*)::integer from jobctl.schedule_runs('tap_runs_a', 'other')
        where fire_time < now() - interval '90 seconds'
    ),
    1,
    'the other schedule''s missed run is its own'
);
select results_eq(
    $$select job_id from jobctl.schedule_runs('tap_runs_a', 'other')$$,
    $$select job_id from jobctl.job where tenant_id = 'tap_runs_a' and schedule_name = 'other' order by job_id desc$$,
    'the other schedule''s runs are its jobs only'
);
select results_eq(
    format($$select job_id from jobctl.schedule_runs('tap_runs_a', 'daily', before_id => %s, max_rows => 2)$$, :by_hand),
    format($$select job_id from jobctl.job where tenant_id = 'tap_runs_a' and schedule_name = 'daily' and job_id < %s
             order by job_id desc limit 2$$, :by_hand),
    'before_id and max_rows page through them'
);
select results_eq(
    format($$select schedule_name, fire_time from jobctl.get_job(%s)$$, :by_hand),
    $$values ('daily'::text, now())$$,
    'get_job shows the schedule and fire time (its last columns)'
);
select results_eq(
    $$select count(*)::integer from jobctl.list_jobs('tap_runs_a') where schedule_name is null and fire_time is null$$,
    $$values (1)$$,
    'a job not from a schedule has neither'
);
select jobctl.drop_schedule('tap_runs_a', 'daily');
select is(
    (
        select count(*)::integer from jobctl.schedule_runs('tap_runs_a', 'daily')
        where fire_time < now() - interval '90 seconds' or job_id = :by_hand
    ),
    4,
    'the runs outlive the schedule'
);
select is((select count(*)::integer from jobctl.schedule_runs('tap_runs_a', 'nope')), 0, 'an unknown schedule has none');

select throws_ok(
    $$select * from jobctl.schedule_runs('tap_runs_a', 'daily', max_rows => 1001)$$, 'JC001',
    'max_rows must be between 1 and 1000, not 1001', 'max_rows above 1000: JC001 naming it'
);
select throws_ok(
    $$select * from jobctl.schedule_runs(null, 'daily')$$, 'JC001', 'tenant_id must not be NULL', 'a NULL tenant: JC001'
);
select set_config('jobctl.api_token', jobctl.create_api_token('tap_runs_b', '{jobs:read}', 'tap_runs'), true);
select throws_ok(
    $$select * from jobctl.schedule_runs('tap_runs_a', 'daily')$$, '42501',
    'tenant_id: no jobs:read access to tenant tap_runs_a', 'another tenant''s token is refused'
);
select set_config('jobctl.api_token', '', true);

select * from finish();
rollback;
