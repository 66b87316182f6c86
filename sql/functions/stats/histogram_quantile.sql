-- jobctl.histogram_quantile: the q-quantile (0..1) of a histogram over jobctl.histogram_bounds()
-- (per-bucket counts), interpolated linearly inside the bucket it falls in, as Prometheus's
-- histogram_quantile does; the last bucket (at or over the last bound) answers the last bound.
-- NULL for an empty histogram. Two loops of simple expressions (the dashboard asks per lane).
create or replace function jobctl.histogram_quantile(q double precision, buckets bigint[])
returns double precision
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
immutable
as $$
declare
    v_bounds constant double precision[] := jobctl._stat_bounds();
    v_total bigint := 0;
    v_below bigint := 0;  -- the times in the buckets before bucket i
    v_rank double precision;
begin
    for i in 1..coalesce(cardinality(buckets), 0) loop
        v_total := v_total + coalesce(buckets[i], 0);
    end loop;
    if v_total = 0 or q is null then
        return null;
    end if;
    v_rank := least(greatest(q, 0), 1) * v_total;
    for i in 1..cardinality(buckets) loop
        if buckets[i] > 0 and v_below + buckets[i] >= v_rank then
            if i > cardinality(v_bounds) then
                return v_bounds[cardinality(v_bounds)];  -- the open last bucket
            end if;
            return coalesce(v_bounds[i - 1], 0)
                + (v_bounds[i] - coalesce(v_bounds[i - 1], 0)) * (v_rank - v_below) / buckets[i];
        end if;
        v_below := v_below + coalesce(buckets[i], 0);
    end loop;
    return null;
end
$$;

comment on function jobctl.histogram_quantile(double precision, bigint[]) is
'The q-quantile (0..1) of a histogram as job_counts and job_rates return it (counts per bucket of
histogram_bounds()), interpolated linearly inside its bucket; the last bound for the open last bucket; NULL when
the histogram is empty.
Errors: none.
Example:
select jobctl.histogram_quantile(0.99, wait_buckets) from jobctl.job_counts(''acme'', ''email'');';
