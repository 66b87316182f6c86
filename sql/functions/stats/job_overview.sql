-- jobctl.job_overview: the dashboard's grid: per tenant and queue, the jobs by state now with the
-- oldest due job (jobctl.job_counts), and over the last window the wait p50/p99 and the claims and
-- completions a second (jobctl.job_rates), and last the jobs waiting for their parents or batch (a
-- gauge of their own: neither pending nor delayed). From the counters: no scan of the job partitions.
create or replace function jobctl.job_overview(
    "window" interval default '5 minutes', tenant_id text default null, queue text default null
)
returns table (
    tenant_id text, queue text, pending bigint, delayed bigint, retrying bigint, running bigint, dead bigint,
    completed bigint, cancelled bigint, oldest_due_at timestamptz, wait_p50 double precision,
    wait_p99 double precision, claims_per_second double precision, completions_per_second double precision,
    waiting bigint
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    with since as (
        select jobctl._stat_since(job_overview."window") as at
    ),
    recent as (
        select r.tenant_id, r.queue, sum(r.claimed) as claimed, sum(r.succeeded) as succeeded,
            jobctl._stat_sum(r.wait_buckets) as wait_buckets
        from since, jobctl.job_rates(since.at, job_overview.tenant_id, job_overview.queue) as r
        group by r.tenant_id, r.queue
    )
    select c.tenant_id, c.queue, c.pending, c.delayed, c.retrying, c.running, c.dead, c.completed, c.cancelled,
        c.oldest_due_at,
        case when w.claimed > 0 then jobctl.histogram_quantile(0.5, w.wait_buckets) end,
        case when w.claimed > 0 then jobctl.histogram_quantile(0.99, w.wait_buckets) end,
        coalesce(w.claimed, 0) / extract(epoch from now() - since.at)::double precision,
        coalesce(w.succeeded, 0) / extract(epoch from now() - since.at)::double precision,
        c.waiting
    from since, jobctl.job_counts(job_overview.tenant_id, job_overview.queue) as c
    left join recent as w on w.tenant_id = c.tenant_id and w.queue = c.queue
    order by c.tenant_id, c.queue
$$;

comment on function jobctl.job_overview(interval, text, text) is
'Per tenant and queue: jobs by state now and the run_at of the oldest due job (as job_counts), and
over the last window (default 5 minutes, at most 6 hours; counted from the start of its first minute) the wait
p50 and p99 in seconds (NULL: no claims) and the claims and completions a second; last, waiting: the jobs
waiting for their parents or their batch (counted in no other column). Only the caller''s tenants;
optionally one tenant and/or queue. From the counters: no scan of the jobs.
Errors: JC001 a window not in (0, 6 hours].
Example:
select tenant_id, queue, pending, waiting, running, wait_p99, claims_per_second from jobctl.job_overview();';
