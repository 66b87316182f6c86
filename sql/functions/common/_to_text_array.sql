-- jobctl._to_text_array: an array of strings from JSON (at most 100), naming the field when it is not one.
create or replace function jobctl._to_text_array(p_value jsonb, p_field text)
returns text[]
language plpgsql
immutable
as $$
begin
    if p_value is null or p_value = 'null'::jsonb then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'array' or jsonb_array_length(p_value) > 100
       or exists (select from jsonb_array_elements(p_value) as e (v) where jsonb_typeof(e.v) <> 'string') then
        raise exception using errcode = 'JC001',
            message = format('%s must be an array of at most 100 strings', p_field),
            detail = format('field: %s', p_field);
    end if;
    return array(select e.v from jsonb_array_elements_text(p_value) as e (v));
end
$$;
