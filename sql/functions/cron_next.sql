-- jobctl.cron_next: the first fire time of a schedule expression strictly after `after` (UTC).
-- See jobctl._cron_fields for the syntax and jobctl._cron_walk for the search.
create or replace function jobctl.cron_next(cron text, after timestamptz)
returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
begin
    return jobctl._cron_walk(cron_next.cron, cron_next.after, false);
end
$$;

comment on function jobctl.cron_next(text, timestamptz) is
'The first fire time of a schedule expression strictly after `after` (UTC). The expression is 5
fields (minute hour day-of-month month day-of-week; *, lists, ranges, steps, n/step, names jan-dec and sun-sat,
7 = Sunday; when both day fields are restricted a day matches if either does) or @every <interval> (multiples of
the period since the epoch), @hourly, @daily, @weekly, @monthly, @yearly.
Errors: JC001 naming the bad field.
Example:
select jobctl.cron_next(''0 2 * * mon-fri'', ''2026-12-04 12:00:00+00'');  -- 2026-12-07 02:00:00+00';
