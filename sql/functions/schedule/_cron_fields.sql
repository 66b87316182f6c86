-- jobctl._cron_fields: parse a schedule expression (see jobctl.cron_next) into the allowed values
-- of each field, or the period of an `@every` expression. A bad expression raises JC001 naming
-- the field (minute, hour, day-of-month, month, day-of-week or @every) and its text.
create or replace function jobctl._cron_fields(
    p_cron text,
    out minutes integer[],
    out hours integer[],
    out days integer[],
    out months integer[],
    out weekdays integer[],
    out day_or boolean,   -- both day fields restricted: a day matches if either does
    out every_s bigint    -- `@every`: the period in seconds (the other fields are NULL)
)
language plpgsql
immutable
as $$
declare
    v_cron text := lower(btrim(coalesce(p_cron, '')));
    v_f text[];
    v_every interval;
begin
    v_cron := case v_cron
        when '@yearly' then '0 0 1 1 *'
        when '@annually' then '0 0 1 1 *'
        when '@monthly' then '0 0 1 * *'
        when '@weekly' then '0 0 * * 0'
        when '@daily' then '0 0 * * *'
        when '@midnight' then '0 0 * * *'
        when '@hourly' then '0 * * * *'
        else v_cron
    end;
    if v_cron like '@every %' then
        begin
            v_every := btrim(substr(v_cron, 7))::interval;
        exception when others then
            v_every := null;
        end;
        if v_every is null or extract(month from v_every) <> 0 or extract(year from v_every) <> 0
           or extract(epoch from v_every) not between 1 and 366 * 86400
           or extract(epoch from v_every) <> trunc(extract(epoch from v_every)) then
            raise exception using errcode = 'JC001',
                message = format('cron @every period %L is invalid', btrim(substr(v_cron, 7))),
                detail = 'field: cron',
                hint = 'A whole number of seconds from 1 to 366 days, without months or years: @every 15 seconds, @every 2 hours.';
        end if;
        every_s := extract(epoch from v_every)::bigint;
        return;
    end if;
    v_f := regexp_split_to_array(v_cron, '\s+');
    if v_cron = '' or cardinality(v_f) <> 5 then
        raise exception using errcode = 'JC001',
            message = format('cron expression %L must have 5 fields (minute hour day-of-month month day-of-week), not %s',
                p_cron, case when v_cron = '' then 0 else cardinality(v_f) end),
            detail = 'field: cron',
            hint = 'Or one of @every <interval>, @hourly, @daily, @weekly, @monthly, @yearly.';
    end if;
    minutes := jobctl._cron_field(v_f[1], 'minute', 0, 59, 59, null, 0);
    hours := jobctl._cron_field(v_f[2], 'hour', 0, 23, 23, null, 0);
    days := jobctl._cron_field(v_f[3], 'day-of-month', 1, 31, 31, null, 0);
    months := jobctl._cron_field(
        v_f[4], 'month', 1, 12, 12, '{jan,feb,mar,apr,may,jun,jul,aug,sep,oct,nov,dec}', 1
    );
    weekdays := jobctl._cron_field(v_f[5], 'day-of-week', 0, 7, 6, '{sun,mon,tue,wed,thu,fri,sat}', 0);
    weekdays := array(select distinct w % 7 from unnest(weekdays) as w order by 1);
    -- croniter's rule: a day field is unrestricted when one of its items is `*`, or when it
    -- covers every day while the other day field contains a `*`; when neither is, a day matches
    -- if either field does
    day_or := not ('*' = any(string_to_array(v_f[3], ',')) or (cardinality(days) = 31 and strpos(v_f[5], '*') > 0))
        and not ('*' = any(string_to_array(v_f[5], ',')) or (cardinality(weekdays) = 7 and strpos(v_f[3], '*') > 0));
end
$$;
