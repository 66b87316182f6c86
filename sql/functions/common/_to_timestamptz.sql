-- jobctl._to_timestamptz: an ISO 8601 time from JSON, naming the field on error. Only a string
-- enters the EXCEPTION block.
create or replace function jobctl._to_timestamptz(p_value jsonb, p_field text)
returns timestamptz
language plpgsql
stable
as $$
begin
    if p_value is null or p_value = 'null'::jsonb then
        return null;
    end if;
    if jsonb_typeof(p_value) = 'string' then
        begin
            return (p_value #>> '{}')::timestamptz;
        exception when invalid_datetime_format or datetime_field_overflow then
            null;  -- reported below
        end;
    end if;
    raise exception using
        errcode = 'JC001',
        message = format('%s must be an ISO 8601 timestamp such as 2026-12-01T09:30:00Z, not %s', p_field, p_value),
        detail = format('field: %s', p_field);
end
$$;
