-- jobctl._to_interval: parse an interval given as text or as a number of seconds, naming the field
-- on error. Only called for values the caller supplied, so its EXCEPTION block (a subtransaction
-- that writes nothing, hence no XID) stays off the common path.
create or replace function jobctl._to_interval(p_value jsonb, p_field text)
returns interval
language plpgsql
stable
as $$
begin
    if p_value is null or p_value = 'null'::jsonb then
        return null;
    end if;
    if jsonb_typeof(p_value) = 'number' then
        return make_interval(secs => p_value::text::double precision);
    end if;
    if jsonb_typeof(p_value) = 'string' then
        return (p_value #>> '{}')::interval;
    end if;
    raise exception using errcode = 'JC001', message = format('%s must be an interval string or a number of seconds', p_field);
exception
    when invalid_datetime_format or datetime_field_overflow or interval_field_overflow
        or invalid_text_representation or numeric_value_out_of_range then
        raise exception using
            errcode = 'JC001',
            message = format('%s is not a valid interval: %s', p_field, p_value #>> '{}'),
            hint = 'Use an interval string such as ''30 seconds'' or a number of seconds.';
end
$$;
