-- Recurring schedules: put_schedule / list_schedules / drop_schedule, and jobctl.expand_schedules:
-- due runs enqueued once, the catch-up policy after downtime, skip_overlap. Tenants tap_sched_*.
-- (Racing expanders: tests/test_schedules.py.)
begin;
select plan(41);

-- expand_schedules' counts are of every tenant's runs: the neighbours' every-minute schedule
-- (neighbours.psql) waits until this transaction rolls back
update jobctl.schedule set next_fire_at = 'infinity'
where tenant_id like 'neighbour%';

select has_function(
    'jobctl', 'put_schedule', array['text', 'text', 'text', 'text', 'jsonb', 'integer', 'integer', 'boolean', 'text'],
    'put_schedule(tenant_id, name, cron, queue, payload, priority, catch_up, skip_overlap, time_zone) exists'
);
select has_function('jobctl', 'drop_schedule', array['text', 'text'], 'drop_schedule(tenant_id, name) exists');
select has_function('jobctl', 'expand_schedules', array[]::text[], 'expand_schedules() exists');

-- an hourly expression whose minute is 30 minutes from now: it never fires within the test's
-- 90-second on-time window, so what an expansion enqueues is decided by the catch-up policy alone
create function pg_temp.hourly()
returns text
language sql as $$
    -- never minute 0: the test below changes the expression to '0 * * * *'
    select format('%s * * * *', greatest((extract(minute from now() at time zone 'UTC')::integer + 30) % 60, 1))
$$;
create function pg_temp.jobs(p_tenant text)
returns bigint
language sql as $$
    select count(*) from jobctl.job where tenant_id = p_tenant
$$;

select lives_ok(
    format($$select jobctl.put_schedule('tap_sched_a', 'report', %L, 'tap_sched_q', '{"r": 1}')$$, pg_temp.hourly()),
    'a schedule is created (its tenant registered)'
);
select results_eq(
    $$select cron, queue, payload, priority, catch_up, skip_overlap, next_fire_at, last_fire_at
      from jobctl.list_schedules('tap_sched_a')$$,
    format(
        $$values (%L, 'tap_sched_q', '{"r": 1}'::jsonb, 0, 1, false, jobctl.cron_next(%L, now()), null::timestamptz)$$,
        pg_temp.hourly(), pg_temp.hourly()
    ),
    'list_schedules shows it with defaults, next fire time = cron_next(cron, now())'
);
select is((
    select count(*) from jobctl.tenant
    where tenant_id = 'tap_sched_a'
), 1::bigint, 'the unknown tenant was registered');
select is(jobctl.expand_schedules(), 0, 'nothing is due yet');

-- replacing: the same expression keeps the next fire time, a new one recomputes it
update jobctl.schedule set next_fire_at = next_fire_at + interval '1 second'
where tenant_id = 'tap_sched_a';
select jobctl.put_schedule('tap_sched_a', 'report', pg_temp.hourly(), 'tap_sched_q', '{"r": 2}', 5);
select is(
    (
        select next_fire_at from jobctl.schedule
        where tenant_id = 'tap_sched_a'
    ),
    jobctl.cron_next(pg_temp.hourly(), now()) + interval '1 second',
    'replaced with the same expression: the next fire time stays'
);
select is((
    select priority from jobctl.schedule
    where tenant_id = 'tap_sched_a'
), 5, 'replaced: the new priority is kept');
select jobctl.put_schedule('tap_sched_a', 'report', '@daily', 'tap_sched_q', '{"r": 2}');
select is(
    (
        select next_fire_at from jobctl.schedule
        where tenant_id = 'tap_sched_a'
    ), jobctl.cron_next('@daily', now()
    ),
    'replaced with another expression: the next fire time is recomputed'
);

-- bad input names the field and writes nothing
select throws_like(
    $$select jobctl.put_schedule('tap_sched_b', 'x', '* 25 * * *', 'q', '{}')$$,
    'cron hour field ''25'' is invalid', 'a bad cron field is named'
);
select
    throws_ok(
        $$select jobctl.put_schedule('tap_sched_b', '', '@daily', 'q', '{}')$$,
        'JC001',
        'name is missing or out of range',
        'an empty name'
    );
select
    throws_ok(
        $$select jobctl.put_schedule('tap_sched_b', 'x', '@daily', 'q', '{}', 101)$$,
        'JC001',
        'priority is missing or out of range',
        'a priority out of range'
    );
select
    throws_ok(
        $$select jobctl.put_schedule('tap_sched_b', 'x', '@daily', 'q', '{}', 0, 0)$$,
        'JC001',
        'catch_up is missing or out of range',
        'catch_up below 1'
    );
select is((
    select count(*) from jobctl.schedule
    where tenant_id = 'tap_sched_b'
), 0::bigint, 'no bad schedule was written');

-- downtime: five hours of missed runs; catch_up 1 enqueues one run, the latest missed fire time
select jobctl.put_schedule('tap_sched_c', 'hourly', pg_temp.hourly(), 'tap_sched_q', '{}');
update jobctl.schedule set next_fire_at = jobctl.cron_next(pg_temp.hourly(), now() - interval '5 hours')
where tenant_id = 'tap_sched_c';
select is(jobctl.expand_schedules(), 1, 'after downtime, one run for the whole missed window');
select is(
    (
        select run_at from jobctl.job
        where tenant_id = 'tap_sched_c'
    ),
    jobctl._cron_walk(pg_temp.hourly(), now(), true),
    'its run_at is the latest missed fire time'
);
select is(
    (
        select next_fire_at from jobctl.schedule
        where tenant_id = 'tap_sched_c'
    ), jobctl.cron_next(pg_temp.hourly(), now()
    ),
    'the schedule moves to its next fire time'
);
select is(jobctl.expand_schedules(), 0, 'a second expansion enqueues nothing');
select is(
    (
        select state from jobctl.job
        where tenant_id = 'tap_sched_c'
    ), 'pending', 'the run is a pending job, due now'
);

-- a new expression starts after the last fire time enqueued, even one ahead of the clock (an
-- expander that committed after this transaction began): that fire time is not enqueued again
update jobctl.schedule set last_fire_at = date_trunc('hour', now()) + interval '3 hours'
where tenant_id = 'tap_sched_c';
-- (spelled 0 */1: at minute 30 of an hour pg_temp.hourly() is 0 * * * *, which is no change)
select jobctl.put_schedule('tap_sched_c', 'hourly', '0 */1 * * *', 'tap_sched_q', '{}');
select is(
    (
        select next_fire_at from jobctl.schedule
        where tenant_id = 'tap_sched_c'
    ),
    date_trunc('hour', now()) + interval '4 hours',
    'a changed expression starts after the last fire time'
);

-- catch_up 3: the three latest missed fire times, each its own run
select jobctl.put_schedule('tap_sched_d', 'hourly', pg_temp.hourly(), 'tap_sched_q', '{}', 0, 3);
update jobctl.schedule set next_fire_at = jobctl.cron_next(pg_temp.hourly(), now() - interval '10 hours')
where tenant_id = 'tap_sched_d';
select is(jobctl.expand_schedules(), 3, 'catch_up 3: three runs');
select results_eq(
    $$select run_at from jobctl.job where tenant_id = 'tap_sched_d' order by job_id$$,
    $$select now() - interval '1 hour' * g + (jobctl._cron_walk(pg_temp.hourly(), now(), true) - now())
      from generate_series(2, 0, -1) as g$$,
    'the latest three missed fire times, oldest first'
);

-- skip_overlap: no run while the previous one is unfinished
select jobctl.put_schedule('tap_sched_e', 'hourly', pg_temp.hourly(), 'tap_sched_q', '{}', 0, 1, true);
update jobctl.schedule set next_fire_at = now() - interval '3 hours'
where tenant_id = 'tap_sched_e';
select is(jobctl.expand_schedules(), 1, 'skip_overlap: the first run is enqueued');
update jobctl.schedule set next_fire_at = now() - interval '2 hours'
where tenant_id = 'tap_sched_e';
select is(jobctl.expand_schedules(), 0, 'skip_overlap: no run while the previous one is pending');
select is(
    (
        select next_fire_at > now() from jobctl.schedule
        where tenant_id = 'tap_sched_e'
    ), true,
    'a skipped run still moves the schedule on'
);

select is(jobctl.drop_schedule('tap_sched_e', 'hourly'), true, 'drop_schedule: true for a schedule that existed');
select is(jobctl.drop_schedule('tap_sched_e', 'hourly'), false, 'drop_schedule: false when there is none');

-- bounds (docs/security.md, Bounds): at most 100 schedules a tenant, names without control characters
select jobctl.put_schedule('tap_sched_cap', 's' || g, '@every 1 hour', 'tap_sched_q', '{}') from generate_series(1, 100) as g;
select throws_ok(
    $$select jobctl.put_schedule('tap_sched_cap', 's101', '@every 1 hour', 'tap_sched_q', '{}')$$,
    'JC001', 'tenant tap_sched_cap has 100 schedules, the most a tenant may have', 'a 101st schedule: JC001'
);
select lives_ok(
    $$select jobctl.put_schedule('tap_sched_cap', 's100', '@every 2 hours', 'tap_sched_q', '{}')$$,
    'one of the 100 can still be replaced'
);
select throws_ok(
    $$select jobctl.put_schedule('tap_sched_b', E'two\nlines', '@every 1 hour', 'tap_sched_q', '{}')$$,
    'JC001', 'name must not contain control characters', 'a schedule name with a newline: JC001'
);
-- expansion goes tenant by tenant: a tenant's one due schedule is expanded in the same pass as
-- the 1,000 due earlier of ten others (a pass takes 1,000)
select jobctl.put_schedule('tap_sched_many' || t, 's' || g, '@every 1 hour', 'tap_sched_q', '{}')
from generate_series(1, 10) as t cross join generate_series(1, 100) as g;
update jobctl.schedule set next_fire_at = now() - interval '10 seconds'
where tenant_id like 'tap_sched_many%';
select jobctl.put_schedule('tap_sched_late', 'one', '@every 1 hour', 'tap_sched_q', '{}');
update jobctl.schedule set next_fire_at = now() - interval '1 second'
where tenant_id = 'tap_sched_late';
select cmp_ok(jobctl.expand_schedules(), '<=', 1000, 'a pass expands at most 1,000 schedules');
select is(
    (
        select count(*)::integer from jobctl.job
        where tenant_id = 'tap_sched_late'
    ), 1,
    'the late tenant''s schedule ran in that pass'
);

-- time zones: the expression is read in the zone's wall time, the zone is checked and stored
select throws_ok(
    $$select jobctl.put_schedule('tap_sched_tz', 'bad', '0 9 * * *', 'tap_sched_q', '{}', time_zone => 'Europe/Atlantis')$$,
    'JC001', 'time_zone Europe/Atlantis is not a time zone name', 'an unknown zone: JC001 naming time_zone'
);
select throws_ok(
    $$select jobctl.put_schedule('tap_sched_tz', 'bad', '0 9 * * *', 'tap_sched_q', '{}', time_zone => 'UTC+3')$$,
    'JC001', null, 'a POSIX offset (its sign reversed) is not a zone name'
);
select is(
    (
        select count(*)::integer from jobctl.schedule
        where tenant_id = 'tap_sched_tz'
    ), 0, 'nothing was written'
);
select jobctl.put_schedule('tap_sched_tz', 'nine', '0 9 * * *', 'tap_sched_q', '{}', time_zone => 'america/new_york');
select results_eq(
    $$select time_zone, next_fire_at from jobctl.list_schedules('tap_sched_tz')$$,
    $$values ('America/New_York', jobctl.cron_next('0 9 * * *', now(), 'America/New_York'))$$,
    'list_schedules shows the zone as pg_timezone_names spells it; the next fire time is 09:00 there'
);
select jobctl.put_schedule('tap_sched_tz', 'nine', '0 9 * * *', 'tap_sched_q', '{}', time_zone => 'Asia/Kolkata');
select results_eq(
    $$select time_zone, next_fire_at from jobctl.list_schedules('tap_sched_tz')$$,
    $$values ('Asia/Kolkata', jobctl.cron_next('0 9 * * *', now(), 'Asia/Kolkata'))$$,
    'a new zone recomputes the next fire time'
);
select jobctl.put_schedule('tap_sched_tz', 'utc', '0 9 * * *', 'tap_sched_q', '{}', time_zone => null);
select is(
    (
        select time_zone from jobctl.list_schedules('tap_sched_tz')
        where name = 'utc'
    ), 'UTC', 'a NULL zone is UTC'
);
select jobctl.pause_schedule('tap_sched_tz', 'nine');
update jobctl.schedule set next_fire_at = now() - interval '3 days'
where tenant_id = 'tap_sched_tz' and name = 'nine';
select jobctl.resume_schedule('tap_sched_tz', 'nine');
select is(
    (
        select next_fire_at from jobctl.schedule
        where tenant_id = 'tap_sched_tz' and name = 'nine'
    ),
    jobctl.cron_next('0 9 * * *', now(), 'Asia/Kolkata'),
    'resume_schedule computes the next fire time in the zone'
);
update jobctl.schedule set next_fire_at = now() - interval '4 days', catch_up = 2
where tenant_id = 'tap_sched_tz' and name = 'nine';
select jobctl.expand_schedules();
select results_eq(
    $$select to_char(fire_time at time zone 'Asia/Kolkata', 'HH24:MI'), count(*)::integer
      from jobctl.job where tenant_id = 'tap_sched_tz' group by 1$$,
    $$values ('09:00', 2)$$,
    'the expander''s missed runs are 09:00 in the zone'
);

select * from finish();
rollback;
