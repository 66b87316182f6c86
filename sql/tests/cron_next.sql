-- jobctl.cron_next: fire times of 5-field expressions, macros and @every (UTC), and errors that name
-- the bad field. The property test against croniter is tests/test_cron_oracle.py.
begin;
select plan(27);

select has_function('jobctl', 'cron_next', array['text', 'timestamp with time zone'], 'cron_next(cron, after) exists');

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

select * from finish();
rollback;
