-- jobctl._cron_day: whether a cron expression's day fields match the day of `p_t` (UTC).
create or replace function jobctl._cron_day(p_days integer[], p_weekdays integer[], p_day_or boolean, p_t timestamp)
returns boolean
language sql
immutable
as $$
    select case when p_day_or
        then extract(day from p_t)::integer = any(p_days) or extract(dow from p_t)::integer = any(p_weekdays)
        else extract(day from p_t)::integer = any(p_days) and extract(dow from p_t)::integer = any(p_weekdays)
    end
$$;
