-- jobctl._normalize_backoff: validate a backoff object and return it with every key filled in
-- (strategy, base, max as interval text, jitter). NULL in, NULL out: NULL means the defaults.
create or replace function jobctl._normalize_backoff(p_backoff jsonb, p_field text default 'backoff')
returns jsonb
language plpgsql
stable
as $$
declare
    v_strategy text;
    v_base interval;
    v_max interval;
    v_jitter jsonb;
    v_extra text;
begin
    if p_backoff is null then
        return null;
    end if;
    if jsonb_typeof(p_backoff) <> 'object' then
        raise exception using errcode = 'JC003', detail = format('field: %s', p_field), message = format('%s must be a JSON object', p_field),
            hint = 'Example: {"strategy": "exponential", "base": "5 seconds", "max": "1 hour", "jitter": true}';
    end if;
    select k into v_extra from jsonb_object_keys(p_backoff) k
    where k not in ('strategy', 'base', 'max', 'jitter') limit 1;
    if v_extra is not null then
        raise exception using errcode = 'JC003', detail = format('field: %s', p_field), message = format('%s has an unknown key: %s', p_field, v_extra),
            hint = 'Allowed keys: strategy, base, max, jitter.';
    end if;
    v_strategy := coalesce(p_backoff ->> 'strategy', 'exponential');
    if v_strategy not in ('exponential', 'linear', 'fixed') then
        raise exception using errcode = 'JC003', detail = format('field: %s.strategy', p_field),
            message = format('%s.strategy must be exponential, linear or fixed, not %s', p_field, v_strategy);
    end if;
    v_base := coalesce(jobctl._to_interval(p_backoff -> 'base', p_field || '.base', 'JC003'), interval '5 seconds');
    v_max := coalesce(jobctl._to_interval(p_backoff -> 'max', p_field || '.max', 'JC003'), interval '1 hour');
    if v_base < interval '0' then
        raise exception using errcode = 'JC003', detail = format('field: %s.base', p_field), message = format('%s.base must not be negative', p_field);
    end if;
    if v_max < v_base then
        raise exception using errcode = 'JC003', detail = format('field: %s.max', p_field), message = format('%s.max must be at least the base', p_field);
    end if;
    v_jitter := coalesce(p_backoff -> 'jitter', 'true'::jsonb);
    if jsonb_typeof(v_jitter) <> 'boolean' then
        raise exception using errcode = 'JC003', detail = format('field: %s.jitter', p_field), message = format('%s.jitter must be true or false', p_field);
    end if;
    return jsonb_build_object('strategy', v_strategy, 'base', v_base::text, 'max', v_max::text, 'jitter', v_jitter);
end
$$;
