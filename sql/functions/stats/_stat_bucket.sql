-- jobctl._stat_bucket: the histogram bucket (1-based array position) of a time in seconds: bucket
-- k holds times below bound k and at or over bound k - 1 (jobctl._stat_bounds).
create or replace function jobctl._stat_bucket(p_seconds double precision)
returns smallint
language sql
immutable
parallel safe
as $$
    select (width_bucket(p_seconds, jobctl._stat_bounds()) + 1)::smallint
$$;
