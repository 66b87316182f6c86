-- jobctl._stat_hist: a histogram (one count per bucket of jobctl.histogram_bounds, not cumulative)
-- from parallel arrays of bucket positions and counts; NULL entries count nothing.
create or replace function jobctl._stat_hist(p_buckets smallint[], p_counts bigint[])
returns bigint[]
language sql
immutable
as $$
    select array_agg(coalesce(s.n, 0) order by b.i)
    from generate_series(1, cardinality(jobctl._stat_bounds()) + 1) as b (i)
    left join (
        select u.bucket, sum(u.n)::bigint as n from unnest(p_buckets, p_counts) as u (bucket, n) group by u.bucket
    ) as s on s.bucket = b.i
$$;
