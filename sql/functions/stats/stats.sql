-- jobctl.stats: jobs per tenant, queue and state in hot storage, with the run_at of the oldest due
-- job, from the counters (jobctl.job_counts: no scan of the job partitions, so it is cheap enough
-- to call every second). A failed job whose backoff has passed is due again and counts as pending.
create or replace function jobctl.stats(tenant_id text default null, queue text default null)
returns table (tenant_id text, queue text, state text, jobs bigint, oldest_run_at timestamptz)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select c.tenant_id, c.queue, s.state, s.jobs, s.oldest_run_at
    from jobctl.job_counts(stats.tenant_id, stats.queue) as c
    cross join lateral (values
        ('cancelled', c.cancelled, null::timestamptz),
        ('completed', c.completed, null),
        ('dead', c.dead, null),
        ('failed', c.retrying, null),
        ('pending', c.pending + c.delayed, c.oldest_due_at),
        ('running', c.running, null),
        ('waiting', c.waiting, null)
    ) as s (state, jobs, oldest_run_at)
    where s.jobs > 0
    order by 1, 2, 3
$$;

comment on function jobctl.stats(text, text) is
'How many jobs each tenant and queue holds in each state in hot storage: pending (due, or delayed
to a later run_at; a failed job whose backoff has passed is due again and counts here), failed (waiting out its
backoff), running, waiting (for its parents or its batch), and completed, dead and cancelled until retention takes
them; oldest_run_at is the run_at of
the oldest due job on the pending row (NULL when none is due, and on the other rows). Optionally for one tenant
and/or queue. Only the caller''s tenants. From the counters (jobctl.job_counts), not a scan of the jobs.
Errors: none.
Example:
select * from jobctl.stats(''acme'');';
