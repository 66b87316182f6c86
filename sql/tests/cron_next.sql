-- jobctl.cron_next: fire times of 5-field expressions, macros and @every (UTC and in time zones,
-- across daylight saving time changes), and errors that name the bad field. The property tests
-- against croniter are tests/test_cron_oracle.py (UTC) and tests/test_cron_zones.py (zones).
begin;
select plan(51);

select has_function(
    'jobctl', 'cron_next', array['text', 'timestamp with time zone', 'text'], 'cron_next(cron, after, time_zone) exists'
);
select is(
    jobctl.cron_next('0 2 * * *', '2026-12-04 12:00Z'), '2026-12-05 02:00Z'::timestamptz,
    'the time zone defaults to UTC (the two-argument call)'
);

create function pg_temp.next(p_cron text, p_after text)
returns text
language sql as $$
    select to_char(jobctl.cron_next(p_cron, p_after::timestamptz) at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS Dy')
$$;

select is(pg_temp.next('*/15 * * * *', '2026-11-30 12:07:00Z'), '2026-11-30 12:15:00 Mon', 'a step');
select
    is(
        pg_temp.next('*/15 * * * *', '2026-11-30 12:15:00Z'),
        '2026-11-30 12:30:00 Mon',
        'strictly after: a fire time is not its own next'
    );
select is(pg_temp.next('0 9 * * mon-fri', '2026-11-28 12:00Z'), '2026-11-30 09:00:00 Mon', 'weekday names in a range');
select is(pg_temp.next('0 0 * * 7', '2026-11-30 00:00Z'), '2026-12-06 00:00:00 Sun', '7 is Sunday');
select is(pg_temp.next('30 4 1,15 * *', '2026-11-15 04:30Z'), '2026-12-01 04:30:00 Tue', 'a list of days');
select
    is(
        pg_temp.next('0 0 1,15 * fri', '2026-12-01 00:00Z'),
        '2026-12-04 00:00:00 Fri',
        'both day fields restricted: either matches (a Friday)'
    );
select
    is(
        pg_temp.next('0 0 1,15 * fri', '2026-12-11 00:00Z'),
        '2026-12-15 00:00:00 Tue',
        'both day fields restricted: either matches (the 15th)'
    );
select is(pg_temp.next('0 0 * * fri', '2026-12-01 00:00Z'), '2026-12-04 00:00:00 Fri', 'day-of-month *: the weekday decides');
select is(
    pg_temp.next('0 0 *,15 * fri', '2026-12-01 00:00Z'), '2026-12-04 00:00:00 Fri',
    'a day field with a * item is unrestricted (croniter): only Fridays'
);
select is(
    pg_temp.next('0 0 */2 * fri', '2026-12-01 00:00Z'), '2026-12-03 00:00:00 Thu',
    '*/2 is a restriction (croniter, not Vixie cron): odd days or Fridays'
);
select is(
    pg_temp.next('0 0 * * 1/3', '2026-12-03 00:00Z'), '2026-12-07 00:00:00 Mon',
    'day-of-week n/step ends at 6: 1/3 is Monday and Thursday, not Sunday'
);
select is(pg_temp.next('0 12 * JAN,jul *', '2026-11-30 00:00Z'), '2027-01-01 12:00:00 Fri', 'month names, any case');
select is(pg_temp.next('0 0 29 2 *', '2026-03-01 00:00Z'), '2028-02-29 00:00:00 Tue', 'Feb 29 waits for a leap year');
select
    is(
        pg_temp.next('5/20 * * * *', '2026-11-30 12:06:00Z'),
        '2026-11-30 12:25:00 Mon',
        'n/step runs from n to the end of the field'
    );
select is(pg_temp.next('@hourly', '2026-11-30 12:00:00.5Z'), '2026-11-30 13:00:00 Mon', '@hourly');
select is(pg_temp.next('@daily', '2026-11-30 12:00Z'), '2026-12-01 00:00:00 Tue', '@daily');
select is(pg_temp.next('@weekly', '2026-11-30 12:00Z'), '2026-12-06 00:00:00 Sun', '@weekly (Sunday midnight)');
select is(pg_temp.next('@monthly', '2026-12-31 23:59:59Z'), '2027-01-01 00:00:00 Fri', '@monthly across a year');
select
    is(
        pg_temp.next('@every 15 seconds', '2026-11-30 12:00:07Z'),
        '2026-11-30 12:00:15 Mon',
        '@every: multiples of the period since the epoch'
    );
select is(pg_temp.next('@every 15 seconds', '2026-11-30 12:00:15Z'), '2026-11-30 12:00:30 Mon', '@every: strictly after');

select
    throws_like(
        $$select jobctl.cron_next('61 * * * *', now())$$,
        'cron minute field ''61'' is invalid',
        'a value out of range names its field'
    );
select
    throws_like(
        $$select jobctl.cron_next('* * * * fri-mon', now())$$,
        'cron day-of-week field ''fri-mon'' is invalid',
        'a reversed range names its field'
    );
select throws_like($$select jobctl.cron_next('* * *', now())$$, '%must have 5 fields%', 'a wrong number of fields');
select
    throws_like(
        $$select jobctl.cron_next('@every 1 month', now())$$,
        'cron @every period ''1 month'' is invalid',
        '@every without a fixed length'
    );
select throws_like($$select jobctl.cron_next('0 0 31 4 *', now())$$, '%never fires%', 'a day that never comes (April 31)');
select throws_ok($$select jobctl.cron_next(null, now())$$, 'JC001', null, 'a NULL expression is JC001');


-- time zones: the UTC instant of the next fire time after a UTC instant
create function pg_temp.next_in(p_cron text, p_after text, p_zone text)
returns text
language sql as $$
    select to_char(jobctl.cron_next(p_cron, p_after::timestamptz, p_zone) at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS"Z"')
$$;
select is(pg_temp.next_in('0 9 * * *', '2026-07-01 12:00Z', 'Europe/Berlin'), '2026-07-02 07:00:00Z', 'Berlin in summer: +02');
select is(pg_temp.next_in('0 9 * * *', '2026-12-01 12:00Z', 'Europe/Berlin'), '2026-12-02 08:00:00Z', 'Berlin in winter: +01');
select is(
    pg_temp.next_in('0 9 * * *', '2026-12-01 12:00Z', 'Asia/Kolkata'), '2026-12-02 03:30:00Z', 'a 30-minute offset: +05:30'
);
select is(
    pg_temp.next_in('0 0 * * 1', '2026-12-06 00:00Z', 'Pacific/Auckland'), '2026-12-06 11:00:00Z',
    'the day fields are read in the zone (Monday 00:00 +13 is Sunday 11:00 UTC)'
);
select is(
    pg_temp.next_in('0 9 * * *', '2026-12-01 12:00Z', 'europe/BERLIN'), '2026-12-02 08:00:00Z', 'the zone''s case does not matter'
);
select is(pg_temp.next_in('0 9 * * *', '2026-12-01 12:00Z', null), '2026-12-02 09:00:00Z', 'a NULL zone is UTC');
-- spring forward, Berlin 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z): 02:xx never happens
select is(
    pg_temp.next_in('30 2 * * *', '2026-03-28 12:00Z', 'Europe/Berlin'), '2026-03-29 01:00:00Z',
    'a skipped wall time fires once, when the gap ends (03:00 CEST)'
);
select is(
    pg_temp.next_in('30 2 * * *', '2026-03-29 01:00Z', 'Europe/Berlin'), '2026-03-30 00:30:00Z',
    'and the next day at 02:30 CEST again'
);
select is(
    pg_temp.next_in('*/15 2 * * *', '2026-03-29 01:00Z', 'Europe/Berlin'), '2026-03-30 00:00:00Z',
    'every wall time of the skipped hour makes one run between them, not four'
);
select is(
    pg_temp.next_in('45 * * * *', '2026-03-29 00:45Z', 'Europe/Berlin'), '2026-03-29 01:45:00Z',
    'every hour follows the clock: 01:45 CET, then 03:45 CEST (an hour later), no run at 03:00'
);
select is(
    pg_temp.next_in('30 2 * * *', '2026-03-07 12:00Z', 'America/New_York'), '2026-03-08 07:00:00Z',
    'New York: 02:30 on the spring-forward day runs at 03:00 EDT'
);
-- fall back, New York 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z): 01:xx happens twice
select is(
    pg_temp.next_in('30 1 * * *', '2026-10-31 12:00Z', 'America/New_York'), '2026-11-01 05:30:00Z',
    'a repeated wall time fires at its first occurrence (01:30 EDT)'
);
select is(
    pg_temp.next_in('30 1 * * *', '2026-11-01 05:30Z', 'America/New_York'), '2026-11-02 06:30:00Z',
    'and not at its second (01:30 EST): once a day'
);
select is(
    pg_temp.next_in('0 * * * *', '2026-11-01 05:00Z', 'America/New_York'), '2026-11-01 06:00:00Z',
    'every hour: the repeated hour fires in both occurrences (01:00 EST)'
);
select is(
    pg_temp.next_in('*/20 * * * *', '2026-11-01 05:50Z', 'America/New_York'), '2026-11-01 06:00:00Z',
    'every hour: from the first occurrence, the second one''s runs come next'
);
select is(
    jobctl._cron_walk('*/20 1 * * *', '2026-11-01 06:10Z', true, 'America/New_York'), '2026-11-01 05:40Z'::timestamptz,
    'backwards from the second occurrence: the last run of the first (hour 1 only: once)'
);
select is(
    jobctl._cron_walk('*/20 * * * *', '2026-11-01 06:10Z', true, 'America/New_York'), '2026-11-01 06:00Z'::timestamptz,
    'backwards, every hour: the second occurrence''s own runs'
);
-- the southern hemisphere: Adelaide (+09:30/+10:30) springs forward on 2026-10-04 at 02:00
select is(
    pg_temp.next_in('30 2 * * *', '2026-10-03 00:00Z', 'Australia/Adelaide'), '2026-10-03 16:30:00Z',
    'Adelaide: 02:30 on the spring-forward day runs at 03:00 ACDT (+10:30)'
);
-- a 30-minute change: Lord Howe goes back from 02:00 +11 to 01:30 +10:30 on 2024-04-07 (15:00Z)
select is(
    pg_temp.next_in('*/20 * * * *', '2024-04-06 14:40Z', 'Australia/Lord_Howe'), '2024-04-06 15:10:00Z',
    'Lord Howe, every hour: from 01:40 +11 the next run is 01:40 +10:30, half an hour later'
);
select is(
    pg_temp.next_in('40 1 * * *', '2024-04-06 14:40Z', 'Australia/Lord_Howe'), '2024-04-07 15:10:00Z',
    'Lord Howe, once a day: 01:40 does not fire again at +10:30'
);
select is(
    pg_temp.next_in('@every 1 hour', '2026-03-29 00:30Z', 'Europe/Berlin'), '2026-03-29 01:00:00Z',
    '@every is real time: the zone plays no part'
);
select throws_ok(
    $$select jobctl.cron_next('0 9 * * *', now(), 'Mars/Olympus_Mons')$$, 'JC001',
    'time_zone Mars/Olympus_Mons is not a time zone name', 'an unknown zone is JC001 naming time_zone'
);
select throws_ok(
    $$select jobctl.cron_next('0 9 * * *', now(), 'CEST')$$, 'JC001',
    'time_zone CEST is not a time zone name', 'an abbreviation (a fixed offset) is refused'
);

select * from finish();
rollback;
