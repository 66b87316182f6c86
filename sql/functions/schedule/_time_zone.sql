-- jobctl._time_zone: a time zone name as pg_timezone_names spells it (the case of p_zone does not
-- matter; NULL is UTC), or JC001 naming p_field. Only names: an abbreviation (CEST) or a POSIX
-- offset (UTC+3, whose sign is the reverse of ISO 8601's) is a fixed offset that keeps no daylight
-- saving time, and is refused. Reads: _time_zone_name (a copy of pg_timezone_names made by
-- a table of the schema), then pg_timezone_names for a name missing there.
create or replace function jobctl._time_zone(p_zone text, p_field text default 'time_zone')
returns text
language plpgsql
stable
as $$
declare
    v_name text;
begin
    if p_zone is null then
        return 'UTC';
    end if;
    select z.name into v_name from jobctl._time_zone_name as z
    where lower(z.name) = lower(p_zone)
    order by z.name = p_zone desc, z.name
    limit 1;
    if v_name is null and length(p_zone) <= 100 then
        select z.name into v_name from pg_catalog.pg_timezone_names as z
        where lower(z.name) = lower(p_zone)
        order by z.name = p_zone desc, z.name
        limit 1;
    end if;
    if v_name is null then
        raise exception using errcode = 'JC001',
            message = format('%s %s is not a time zone name', p_field, left(p_zone, 100)),
            detail = format('field: %s', p_field),
            hint = 'A name of pg_timezone_names, such as UTC, Europe/Berlin or America/New_York '
                '(select name from pg_timezone_names); not an abbreviation (CEST) or an offset (UTC+3).';
    end if;
    return v_name;
end
$$;
