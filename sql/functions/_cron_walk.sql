-- jobctl._cron_walk: the first fire time of a schedule expression strictly after p_at, or with
-- p_back strictly before it (UTC). It walks a field at a time: a wrong month skips the rest of
-- the month, a wrong day the day, a wrong hour the hour, so a search takes at most a few hundred
-- steps, more only for days that come once in years (Feb 29). An expression that never fires
-- within 30 years is refused (JC001).
create or replace function jobctl._cron_walk(p_cron text, p_at timestamptz, p_back boolean)
returns timestamptz
language plpgsql
stable
as $$
declare
    v_f record;
    v_t timestamp := date_trunc('minute', p_at at time zone 'UTC');
    v_step interval := case when p_back then interval '-1 minute' else interval '1 minute' end;
    v_end timestamp;
begin
    if p_at is null or not isfinite(p_at) then
        raise exception using errcode = 'JC001', message = 'the time to search from must be finite', detail = 'field: after';
    end if;
    v_f := jobctl._cron_fields(p_cron);
    if v_f.every_s is not null then
        -- multiples of the period since the epoch
        return to_timestamp(case when p_back
            then (ceil(extract(epoch from p_at) / v_f.every_s) - 1) * v_f.every_s
            else (floor(extract(epoch from p_at) / v_f.every_s) + 1) * v_f.every_s end);
    end if;
    if not p_back or v_t = p_at at time zone 'UTC' then
        v_t := v_t + v_step;  -- strictly after / before
    end if;
    v_end := v_t + 30 * 12 * v_step * 60 * 24 * 31;
    while (not p_back and v_t < v_end) or (p_back and v_t > v_end) loop
        -- on a miss, forward goes to the start of the next month/day/hour/minute, backward to the
        -- last minute of the previous one
        if not extract(month from v_t)::integer = any(v_f.months) then
            v_t := case when p_back then date_trunc('month', v_t) else date_trunc('month', v_t) + interval '1 month' end;
        elsif not jobctl._cron_day(v_f.days, v_f.weekdays, v_f.day_or, v_t) then
            v_t := case when p_back then date_trunc('day', v_t) else date_trunc('day', v_t) + interval '1 day' end;
        elsif not extract(hour from v_t)::integer = any(v_f.hours) then
            v_t := case when p_back then date_trunc('hour', v_t) else date_trunc('hour', v_t) + interval '1 hour' end;
        elsif not extract(minute from v_t)::integer = any(v_f.minutes) then
            v_t := v_t + v_step;
            continue;
        else
            return v_t at time zone 'UTC';
        end if;
        if p_back then
            v_t := v_t + v_step;
        end if;
    end loop;
    raise exception using errcode = 'JC001',
        message = format('cron expression %L never fires (no such day in 30 years)', p_cron),
        detail = 'field: cron',
        hint = 'Check the day-of-month against the months (for example 31 in a 30-day month).';
end
$$;
