-- jobctl._job_ids: an array of job ids from JSON (an array of positive integers, at most 10,000),
-- naming the field when it is not one.
create or replace function jobctl._job_ids(p_value jsonb, p_field text)
returns bigint[]
language plpgsql
immutable
as $$
begin
    if p_value is null or p_value = 'null'::jsonb then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'array' or jsonb_array_length(p_value) > 10000 or exists (
        select from jsonb_array_elements(p_value) as e (v)
        where jsonb_typeof(e.v) <> 'number' or e.v::text !~ '^[0-9]{1,18}$'
    ) then
        raise exception using errcode = 'JC001',
            message = format('%s must be an array of at most 10000 job ids', p_field),
            detail = format('field: %s', p_field),
            hint = 'Nothing was submitted.';
    end if;
    return array(select e.v::text::bigint from jsonb_array_elements(p_value) as e (v));
end
$$;
