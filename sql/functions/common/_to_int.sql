-- jobctl._to_int: an integer from JSON, naming the field when it is not one.
create or replace function jobctl._to_int(p_value jsonb, p_field text)
returns integer
language plpgsql
immutable
as $$
begin
    if p_value is null or p_value = 'null'::jsonb then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'number'
       or p_value::text::numeric <> trunc(p_value::text::numeric)
       or abs(p_value::text::numeric) > 2147483647 then
        raise exception using errcode = 'JC001', message = format('%s must be an integer, not %s', p_field, p_value),
            detail = format('field: %s', p_field);
    end if;
    return p_value::text::integer;
end
$$;
