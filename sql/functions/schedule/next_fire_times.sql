-- jobctl.next_fire_times: the next `count` fire times of a schedule expression after now, each one
-- jobctl.cron_next of the one before: what `jobctl schedule next` prints and Client.next_fire_times
-- returns.
create or replace function jobctl.next_fire_times(cron text, count integer default 5, time_zone text default 'UTC')
returns table (at timestamptz)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_variable
begin
    if count is null or count not between 1 and 1000 then
        raise exception using errcode = 'JC001',
            message = format('count must be between 1 and 1000, not %s', coalesce(count::text, 'NULL')),
            detail = 'field: count', hint = 'Ask for 1 to 1,000 fire times.';
    end if;
    return query
    with recursive t (n, fire_at) as (
        select 1, jobctl.cron_next(cron, now(), time_zone)
        union all
        select t.n + 1, jobctl.cron_next(cron, t.fire_at, time_zone)
        from t
        where t.n < count
    )
    select t.fire_at from t order by t.n;
end
$$;

comment on function jobctl.next_fire_times(text, integer, text) is
'The next `count` fire times (1 to 1,000; default 5) of a schedule expression after now, the expression read
in the wall time of time_zone (default and NULL: UTC), each one jobctl.cron_next of the one before.
Errors: JC001 naming the bad field (count, cron, or time_zone for an unknown zone).
Example:
select * from jobctl.next_fire_times(''0 2 * * mon-fri'', 3, ''Europe/Berlin'');';
