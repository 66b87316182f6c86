-- jobctl._to_timestamptz: parse an ISO 8601 time from JSON, naming the field on error.
create or replace function jobctl._to_timestamptz(p_value jsonb, p_field text)
returns timestamptz
language plpgsql
stable
as $$
begin
    if p_value is null or p_value = 'null'::jsonb then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'string' then
        raise exception using errcode = 'JC001', message = format('%s must be an ISO 8601 string', p_field);
    end if;
    return (p_value #>> '{}')::timestamptz;
exception
    when invalid_datetime_format or datetime_field_overflow then
        raise exception using
            errcode = 'JC001',
            message = format('%s is not a valid timestamp: %s', p_field, p_value #>> '{}'),
            hint = 'Use ISO 8601, for example 2026-12-01T09:30:00Z.';
end
$$;
