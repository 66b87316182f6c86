-- jobctl._cron_walk: the first fire time of a schedule expression strictly after p_at, or with
-- p_back the last one strictly before it, the expression read in the wall time of zone p_zone. It
-- walks the wall time a field at a time: a wrong month skips the rest of the month, a wrong day the
-- day, a wrong hour the hour, so a search takes at most a few hundred steps, more only for days
-- that come once in years (Feb 29). An expression that never fires within 30 years is refused
-- (JC001). Each matching wall time becomes instants by jobctl._cron_instants. Daylight saving time
-- (docs/schedules.md), croniter's rules but one: an expression whose hour field is every hour
-- follows the clock in real time (a wall time the clocks skip does not fire, one they repeat fires
-- at both occurrences); any other fires once a wall time (a skipped one when the gap ends, a
-- repeated one at its first occurrence, where croniter fires at both). Near a
-- repeated hour the instants of successive wall times are not in order, so the walk starts an
-- offset change earlier (forward) or later (backward) and keeps the best instant until a wall time
-- past the repeated hour settles it.
create or replace function jobctl._cron_walk(p_cron text, p_at timestamptz, p_back boolean, p_zone text default 'UTC')
returns timestamptz
language plpgsql
stable
as $$
declare
    v_f record;
    v_zone text := coalesce(p_zone, 'UTC');
    v_every_hour boolean;
    v_loc timestamp;  -- p_at's wall time
    v_at record;      -- the instants of a wall time
    v_both boolean;   -- the wall time occurs twice and both occurrences fire
    v_best timestamptz;
    v_t timestamp;
    v_step interval := case when p_back then interval '-1 minute' else interval '1 minute' end;
    v_end timestamp;
begin
    if p_at is null or not isfinite(p_at) then
        raise exception using errcode = 'JC001', message = 'the time to search from must be finite', detail = 'field: after';
    end if;
    v_f := jobctl._cron_fields(p_cron);
    if v_f.every_s is not null then
        -- multiples of the period since the epoch (real time: the zone plays no part)
        return to_timestamp(case when p_back
            then (ceil(extract(epoch from p_at) / v_f.every_s) - 1) * v_f.every_s
            else (floor(extract(epoch from p_at) / v_f.every_s) + 1) * v_f.every_s end);
    end if;
    v_every_hour := cardinality(v_f.hours) = 24;
    v_loc := p_at at time zone v_zone;
    v_t := date_trunc('minute', v_loc);
    if v_zone <> 'UTC' then
        v_at := jobctl._cron_instants(v_t, v_zone);
        if v_at.first_at < v_at.last_at then
            -- p_at is in a repeated hour: forward from its first occurrence, the second occurrences
            -- of earlier wall times are still to come; backward from its second, the first
            -- occurrences of later wall times have passed
            if not p_back and v_every_hour and p_at < v_at.last_at then
                v_t := v_t - (v_at.last_at - v_at.first_at);
            elsif p_back and p_at >= v_at.last_at then
                v_t := v_t + (v_at.last_at - v_at.first_at) + interval '1 minute';
            end if;
        end if;
    end if;
    if not p_back or v_t = v_loc then
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
        elsif v_zone = 'UTC' then
            return v_t at time zone 'UTC';
        else
            v_at := jobctl._cron_instants(v_t, v_zone);
            v_both := v_every_hour and v_at.first_at < v_at.last_at;
            if v_every_hour and v_at.skipped then
                null;  -- every hour: the skipped wall times are an hour that does not happen
            elsif not p_back then
                v_best := least(v_best,
                    case when v_at.first_at > p_at then v_at.first_at when v_both and v_at.last_at > p_at then v_at.last_at end);
                -- settled unless a later wall time's first occurrence may still come before it
                if v_best is not null and (not v_both or v_best = v_at.first_at) then
                    return v_best;
                end if;
            else
                v_best := greatest(v_best,
                    case when v_both and v_at.last_at < p_at then v_at.last_at when v_at.first_at < p_at then v_at.first_at end);
                if v_best is not null and (not v_both or v_best = v_at.last_at) then
                    return v_best;
                end if;
            end if;
            v_t := v_t + v_step;
            continue;
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
