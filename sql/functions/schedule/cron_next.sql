-- jobctl.cron_next: the first fire time of a schedule expression strictly after `after`, the
-- expression read in the wall time of time_zone (default UTC; NULL: UTC). See jobctl._cron_fields
-- for the syntax and jobctl._cron_walk for the search and the daylight saving time rules.
create or replace function jobctl.cron_next(cron text, after timestamptz, time_zone text default 'UTC')
returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
begin
    return jobctl._cron_walk(cron_next.cron, cron_next.after, false, jobctl._time_zone(cron_next.time_zone));
end
$$;

comment on function jobctl.cron_next(text, timestamptz, text) is
'The first fire time of a schedule expression strictly after `after`, the expression read in the wall
time of time_zone (a pg_timezone_names name; default and NULL: UTC). The expression is 5 fields (minute hour
day-of-month month day-of-week; *, lists, ranges, steps, n/step, names jan-dec and sun-sat, 7 = Sunday; when both
day fields are restricted a day matches if either does) or @every <interval> (multiples of the period since the
epoch, whatever the zone), @hourly, @daily, @weekly, @monthly, @yearly. Daylight saving time: with an hour
field of every hour the expression follows the clock in real time (a skipped wall time does not fire, a repeated
one fires at both occurrences); otherwise each wall time fires once (a skipped one when the gap ends, a repeated
one at its first occurrence).
Errors: JC001 naming the bad field (cron, or time_zone for an unknown zone).
Example:
select jobctl.cron_next(''0 2 * * mon-fri'', ''2026-12-04 12:00:00+00'');  -- 2026-12-07 02:00:00+00
select jobctl.cron_next(''30 2 * * *'', ''2026-03-28 12:00:00+00'', ''Europe/Berlin'');  -- 2026-03-29 01:00:00+00 (03:00 CEST)';
