-- jobctl._to_interval: an interval from JSON (an interval string or a number of seconds), naming
-- the field on error; at most 30 days, so arithmetic on it cannot overflow. Only a string enters
-- the EXCEPTION block (a subtransaction that writes nothing, hence no XID), and only callers that
-- were given a value call this at all.
create or replace function jobctl._to_interval(p_value jsonb, p_field text, p_errcode text default 'JC001')
returns interval
language plpgsql
stable
as $$
declare
    v_result interval;
begin
    if p_value is null or p_value = 'null'::jsonb then
        return null;
    end if;
    if jsonb_typeof(p_value) = 'number' and abs(p_value::text::numeric) <= 2592000 then
        v_result := make_interval(secs => p_value::text::double precision);
    elsif jsonb_typeof(p_value) = 'string' then
        begin
            v_result := (p_value #>> '{}')::interval;
        exception
            when invalid_datetime_format or datetime_field_overflow or interval_field_overflow
                or invalid_text_representation or numeric_value_out_of_range then
                v_result := null;
        end;
    end if;
    if v_result is null or v_result > interval '30 days' or v_result < interval '-30 days' then
        raise exception using
            errcode = p_errcode,
            message = format('%s must be an interval of at most 30 days (a string such as ''30 seconds'' or a number of seconds), not %s',
                p_field, p_value),
            detail = format('field: %s', p_field);
    end if;
    return v_result;
end
$$;
