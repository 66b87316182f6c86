-- jobctl.minute_rates: jobctl.job_rates summed per minute over the tenants and queues asked for, the
-- wait's median and 99th percentile read from the summed histogram: the dashboard's throughput chart.
-- Reads: _stat_minute, _stat_delta (job_rates).
create or replace function jobctl.minute_rates(
    since timestamptz default now() - interval '1 hour', tenant_id text default null, queue text default null
)
returns table (
    minute timestamptz, submitted bigint, claimed bigint, succeeded bigint, failed bigint, died bigint,
    fenced bigint, wait_p50 double precision, wait_p99 double precision
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    with r as (
        select * from jobctl.job_rates(minute_rates.since, minute_rates.tenant_id, minute_rates.queue)
    ),
    b as (
        select r.minute, u.k, sum(u.n)::bigint as n
        from r cross join lateral unnest(r.wait_buckets) with ordinality as u (n, k)
        group by r.minute, u.k
    ),
    h as (
        select b.minute, array_agg(b.n order by b.k) as buckets from b group by b.minute
    ),
    m as (
        select r.minute, sum(r.submitted)::bigint as submitted, sum(r.claimed)::bigint as claimed,
            sum(r.succeeded)::bigint as succeeded, sum(r.failed)::bigint as failed,
            sum(r.died)::bigint as died, sum(r.fenced)::bigint as fenced
        from r group by r.minute
    )
    select m.minute, m.submitted, m.claimed, m.succeeded, m.failed, m.died, m.fenced,
        jobctl.histogram_quantile(0.5, h.buckets), jobctl.histogram_quantile(0.99, h.buckets)
    from m
    left join h on m.minute = h.minute
    order by m.minute
$$;

comment on function jobctl.minute_rates(timestamptz, text, text) is
'The counters'' events per minute since `since` (default: the last hour; the minutes kept: 6 hours), summed
over every tenant the caller may read (or tenant_id''s) and every queue (or queue''s), with the wait from
submit to claim as its median and 99th percentile in seconds (NULL in a minute without claims).
Errors: JC010 for a tenant the caller may not read (jobctl.job_rates).
Example:
select minute, claimed, wait_p99 from jobctl.minute_rates(now() - interval ''10 minutes'');';
