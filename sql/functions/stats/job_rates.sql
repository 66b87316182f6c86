-- jobctl.job_rates: the counters' events per tenant, queue and minute since a time (the minutes
-- kept: 6 hours), folded minutes plus the deltas not yet folded: what charts of throughput and
-- wait need. No scan of the job partitions.
create or replace function jobctl.job_rates(
    since timestamptz default now() - interval '1 hour', tenant_id text default null, queue text default null
)
returns table (
    minute timestamptz, tenant_id text, queue text, submitted bigint, claimed bigint, succeeded bigint,
    failed bigint, died bigint, fenced bigint, wait_buckets bigint[], wait_seconds double precision,
    run_buckets bigint[], run_seconds double precision
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    with mine as (
        select jobctl._acting_tenants('jobs:read') as tenants
    ),
    folded as (
        select s.minute, s.tenant_id, s.queue, s.submitted, s.claimed, s.succeeded, s.failed, s.died, s.fenced,
            s.wait_buckets, s.wait_seconds, s.run_buckets, s.run_seconds
        from jobctl._stat_minute as s, mine as m
        where s.minute >= date_trunc('minute', job_rates.since)
            and (job_rates.tenant_id is null or s.tenant_id = job_rates.tenant_id)
            and (job_rates.queue is null or s.queue = job_rates.queue)
            and s.tenant_id = any(coalesce(m.tenants, array[s.tenant_id]))
    ),
    unfolded as (
        select date_trunc('minute', d.at) as minute, d.tenant_id, d.queue, coalesce(sum(d.submitted), 0) as submitted,
            coalesce(sum(d.claimed), 0) as claimed, coalesce(sum(d.succeeded), 0) as succeeded,
            coalesce(sum(d.failed), 0) as failed, coalesce(sum(d.died), 0) as died, coalesce(sum(d.fenced), 0) as fenced,
            jobctl._stat_hist(array_agg(d.wait_bucket), array_agg(d.claimed::bigint)) as wait_buckets,
            coalesce(sum(d.wait_seconds), 0) as wait_seconds,
            jobctl._stat_hist(array_agg(d.run_bucket), array_agg(coalesce(d.succeeded, 0)::bigint + coalesce(d.failed, 0)))
                as run_buckets,
            coalesce(sum(d.run_seconds), 0) as run_seconds
        from jobctl._stat_delta as d, mine as m
        where d.at >= date_trunc('minute', job_rates.since)
            and coalesce(d.submitted, d.claimed, d.succeeded, d.failed, d.died, d.fenced) is not null
            and (job_rates.tenant_id is null or d.tenant_id = job_rates.tenant_id)
            and (job_rates.queue is null or d.queue = job_rates.queue)
            and d.tenant_id = any(coalesce(m.tenants, array[d.tenant_id]))
        group by 1, 2, 3
    )
    -- (a minute's folded row and its deltas, joined rather than grouped again: one array sum at most)
    select coalesce(f.minute, u.minute), coalesce(f.tenant_id, u.tenant_id), coalesce(f.queue, u.queue),
        (coalesce(f.submitted, 0) + coalesce(u.submitted, 0))::bigint,
        (coalesce(f.claimed, 0) + coalesce(u.claimed, 0))::bigint,
        (coalesce(f.succeeded, 0) + coalesce(u.succeeded, 0))::bigint,
        (coalesce(f.failed, 0) + coalesce(u.failed, 0))::bigint,
        (coalesce(f.died, 0) + coalesce(u.died, 0))::bigint,
        (coalesce(f.fenced, 0) + coalesce(u.fenced, 0))::bigint,
        case when u.minute is null then f.wait_buckets when f.minute is null then u.wait_buckets
            else jobctl._stat_add(f.wait_buckets, u.wait_buckets) end,
        coalesce(f.wait_seconds, 0) + coalesce(u.wait_seconds, 0),
        case when u.minute is null then f.run_buckets when f.minute is null then u.run_buckets
            else jobctl._stat_add(f.run_buckets, u.run_buckets) end,
        coalesce(f.run_seconds, 0) + coalesce(u.run_seconds, 0)
    from folded as f
    full join unfolded as u on u.minute = f.minute and u.tenant_id = f.tenant_id and u.queue = f.queue
    order by 1, 2, 3
$$;

comment on function jobctl.job_rates(timestamptz, text, text) is
'Per minute since since (the last 6 hours are kept), tenant and queue: jobs submitted, claimed,
succeeded, failed attempts, died and fenced acks, with the wait and run time histograms of that minute (counts per
bucket of histogram_bounds()). Only the caller''s tenants; optionally one tenant and/or queue. From the counters:
no scan of the jobs.
Errors: none.
Example:
select minute, sum(claimed) from jobctl.job_rates(now() - interval ''1 hour'') group by minute order by minute;';
