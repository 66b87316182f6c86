-- jobctl._bucket_size: the tokens a full rate bucket holds: the burst, or when it is NULL one
-- second's worth of the rate, at least 1.
create or replace function jobctl._bucket_size(p_rate numeric, p_burst integer)
returns bigint
language sql
immutable
as $$
    select coalesce(p_burst, greatest(1, ceil(p_rate)))::bigint
$$;
