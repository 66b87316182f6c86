-- jobctl._backoff_delay: the delay before the retry that follows failed attempt p_attempt.
-- base·2^(n−1), base·n or base, capped by max; with jitter drawn uniformly from [d/2, d].
-- p_backoff is NULL (the defaults: exponential, 5 s, 1 h, jitter; keep in step with
-- jobctl._normalize_backoff) or that function's output. Computed in seconds, and base and max are
-- at most 30 days, so no attempt number can overflow.
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
        from (
            select coalesce(p_backoff, '{"strategy": "exponential", "base": "00:00:05", "max": "01:00:00", "jitter": true}')
                as b
        ) as x
    ) as y
$$;
