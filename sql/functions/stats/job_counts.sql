-- jobctl.job_counts: the counters per tenant and queue: jobs by state as they
-- stand, events since the counters began, and the wait and run time histograms. The folded totals
-- plus the deltas not yet folded: exact at the caller's snapshot, and no scan of the job
-- partitions (the deltas are a few ticks' worth). oldest_due_at is the tick's last probe of the
-- lane (jobctl._stat_probe: about a second old up to 1,000 busy lanes, lanes / 1,000 seconds beyond).
create or replace function jobctl.job_counts(tenant_id text default null, queue text default null)
returns table (
    tenant_id text, queue text,
    pending bigint, delayed bigint, retrying bigint, running bigint, dead bigint, completed bigint,
    cancelled bigint, oldest_due_at timestamptz,
    submitted bigint, claimed bigint, succeeded bigint, failed bigint, died bigint, withdrawn bigint,
    retried bigint, fenced bigint,
    wait_buckets bigint[], wait_seconds double precision, run_buckets bigint[], run_seconds double precision,
    waiting bigint
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    with mine as (
        -- the caller's tenants (NULL: all of them)
        select jobctl._acting_tenants('jobs:read') as tenants
    ),
    pending_deltas as (
        select d.tenant_id, d.queue, sum(d.pending) as pending, sum(d.delayed) as delayed,
            sum(d.retrying) as retrying, sum(d.running) as running, sum(d.dead) as dead,
            sum(d.completed) as completed, sum(d.cancelled) as cancelled, sum(d.submitted) as submitted,
            sum(d.claimed) as claimed, sum(d.succeeded) as succeeded, sum(d.failed) as failed,
            sum(d.died) as died, sum(d.withdrawn) as withdrawn, sum(d.retried) as retried,
            sum(d.fenced) as fenced,
            jobctl._stat_hist(array_agg(d.wait_bucket), array_agg(d.claimed::bigint)) as wait_buckets,
            sum(d.wait_seconds) as wait_seconds,
            jobctl._stat_hist(array_agg(d.run_bucket), array_agg(coalesce(d.succeeded, 0)::bigint + coalesce(d.failed, 0)))
                as run_buckets,
            sum(d.run_seconds) as run_seconds, sum(d.waiting) as waiting
        from jobctl._stat_delta as d, mine as m
        where (job_counts.tenant_id is null or d.tenant_id = job_counts.tenant_id)
            and (job_counts.queue is null or d.queue = job_counts.queue)
            and d.tenant_id = any(coalesce(m.tenants, array[d.tenant_id]))
        group by d.tenant_id, d.queue
    ),
    folded as (
        select s.* from jobctl._stat as s, mine as m
        where (job_counts.tenant_id is null or s.tenant_id = job_counts.tenant_id)
            and (job_counts.queue is null or s.queue = job_counts.queue)
            and s.tenant_id = any(coalesce(m.tenants, array[s.tenant_id]))
    ),
    summed as (
        select coalesce(s.tenant_id, d.tenant_id) as tenant_id, coalesce(s.queue, d.queue) as queue,
            coalesce(s.pending, 0) + coalesce(d.pending, 0) as pending,
            coalesce(s.delayed, 0) + coalesce(d.delayed, 0) as delayed,
            coalesce(s.retrying, 0) + coalesce(d.retrying, 0) as retrying,
            coalesce(s.running, 0) + coalesce(d.running, 0) as running,
            coalesce(s.dead, 0) + coalesce(d.dead, 0) as dead,
            coalesce(s.completed, 0) + coalesce(d.completed, 0) as completed,
            coalesce(s.cancelled, 0) + coalesce(d.cancelled, 0) as cancelled,
            coalesce(s.submitted, 0) + coalesce(d.submitted, 0) as submitted,
            coalesce(s.claimed, 0) + coalesce(d.claimed, 0) as claimed,
            coalesce(s.succeeded, 0) + coalesce(d.succeeded, 0) as succeeded,
            coalesce(s.failed, 0) + coalesce(d.failed, 0) as failed,
            coalesce(s.died, 0) + coalesce(d.died, 0) as died,
            coalesce(s.withdrawn, 0) + coalesce(d.withdrawn, 0) as withdrawn,
            coalesce(s.retried, 0) + coalesce(d.retried, 0) as retried,
            coalesce(s.fenced, 0) + coalesce(d.fenced, 0) as fenced,
            case when d.tenant_id is null and cardinality(s.wait_buckets) > 0 then s.wait_buckets
                else jobctl._stat_add(coalesce(s.wait_buckets, '{}'), coalesce(d.wait_buckets, jobctl._stat_hist('{}', '{}')))
            end as wait_buckets,
            coalesce(s.wait_seconds, 0) + coalesce(d.wait_seconds, 0) as wait_seconds,
            case when d.tenant_id is null and cardinality(s.run_buckets) > 0 then s.run_buckets
                else jobctl._stat_add(coalesce(s.run_buckets, '{}'), coalesce(d.run_buckets, jobctl._stat_hist('{}', '{}')))
            end as run_buckets,
            coalesce(s.run_seconds, 0) + coalesce(d.run_seconds, 0) as run_seconds,
            coalesce(s.waiting, 0) + coalesce(d.waiting, 0) as waiting,
            s.oldest_due_at
        from folded as s
        full join pending_deltas as d on d.tenant_id = s.tenant_id and d.queue = s.queue
    )
    select u.tenant_id, u.queue, u.pending::bigint, u.delayed::bigint, u.retrying::bigint, u.running::bigint,
        u.dead::bigint, u.completed::bigint, u.cancelled::bigint,
        -- as the tick last probed it; a lane that has had due jobs only since, probed now
        case when u.pending > 0 then coalesce(u.oldest_due_at, jobctl._oldest_due(u.queue, u.tenant_id)) end,
        u.submitted::bigint, u.claimed::bigint, u.succeeded::bigint, u.failed::bigint, u.died::bigint,
        u.withdrawn::bigint, u.retried::bigint, u.fenced::bigint,
        u.wait_buckets, u.wait_seconds, u.run_buckets, u.run_seconds, u.waiting::bigint
    from summed as u
    order by u.tenant_id, u.queue
$$;

comment on function jobctl.job_counts(text, text) is
'Per tenant and queue, from the counters (no scan of the jobs): jobs by state now (pending: due, in
_ready or waiting for a concurrency key; delayed: run_at to come, never attempted; retrying: waiting out the
backoff after a failed attempt; running; dead, completed and cancelled in hot storage; waiting, last: for its
parents or its batch), the run_at of the oldest due
job (not counting those held by a concurrency key; as the tick last probed it: about a second old up to 1,000
busy lanes, lanes / 1,000 seconds beyond), the events since the counters began (submitted, claimed,
succeeded, failed attempts, died, withdrawn = cancelled, retried by hand, fenced = acks refused for a stale lease
epoch), and histograms of wait (claim - run_at) and run time (end - start) per bucket of jobctl.histogram_bounds()
(not cumulative) with their sums in seconds. Only the caller''s tenants; optionally one tenant and/or queue.
Errors: none.
Example:
select tenant_id, queue, pending, running, dead, oldest_due_at from jobctl.job_counts(''acme'');';
