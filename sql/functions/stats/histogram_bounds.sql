-- jobctl.histogram_bounds: the upper bounds, in seconds, of the wait and run time histograms'
-- buckets. A bucket's array position is jobctl._stat_bucket's answer; the last
-- position (one past the bounds) holds the times at or over the last bound.
create or replace function jobctl.histogram_bounds()
returns double precision[]
language sql
security definer
set search_path = pg_catalog, pg_temp
immutable
parallel safe
as $$
    select jobctl._stat_bounds()
$$;

comment on function jobctl.histogram_bounds() is
'The upper bounds in seconds of the buckets of the wait and run time histograms that job_counts and job_rates
return: bucket k (1-based) counts times below bound k and at or over bound k - 1; the last bucket, one past the
bounds, counts times at or over the last bound.
Errors: none.
Example:
select jobctl.histogram_bounds();';
