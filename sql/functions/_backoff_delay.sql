-- jobctl._backoff_delay: the delay before the retry that follows failed attempt p_attempt.
-- base·2^(n−1), base·n or base, capped by max; with jitter drawn uniformly from [d/2, d].
-- p_backoff is NULL (the defaults) or the output of jobctl._normalize_backoff. Computed in seconds
-- so a large attempt number cannot overflow the interval type.
create or replace function jobctl._backoff_delay(p_backoff jsonb, p_attempt integer)
returns interval
language sql
volatile
as $$
    select make_interval(secs => case when (b ->> 'jitter')::boolean then d * (0.5 + random() / 2) else d end)
    from (
        select b, least(
            extract(epoch from (b ->> 'max')::interval),
            extract(epoch from (b ->> 'base')::interval) * case b ->> 'strategy'
                when 'fixed' then 1
                when 'linear' then greatest(p_attempt, 1)
                else power(2::numeric, least(greatest(p_attempt, 1) - 1, 60))
            end
        )::double precision as d
        from (select coalesce(p_backoff, jobctl._normalize_backoff('{}'::jsonb)) as b) as x
    ) as y
$$;
