-- jobctl._stat_bounds: the histograms' bucket bounds (jobctl.histogram_bounds), inlined where the
-- hot path buckets a time (jobctl._stat_bucket).
create or replace function jobctl._stat_bounds()
returns double precision[]
language sql
immutable
parallel safe
as $$
    select '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30,60,300,900,3600}'::double precision[]
$$;
