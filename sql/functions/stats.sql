-- jobctl.stats: jobs per tenant, queue and state in hot storage, with the oldest run_at of
-- unfinished ones. Exact; it scans the job partitions (see docs/design.md on its cost).
create or replace function jobctl.stats(tenant_id text default null, queue text default null)
returns table (tenant_id text, queue text, state text, jobs bigint, oldest_run_at timestamptz)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select j.tenant_id, j.queue, j.state, count(*),
        min(j.run_at) filter (where j.state in ('pending', 'failed', 'running'))
    from jobctl.job as j
    where (stats.tenant_id is null or j.tenant_id = stats.tenant_id)
        and (stats.queue is null or j.queue = stats.queue)
        -- the caller's tenants only (NULL: all of them)
        and j.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[j.tenant_id]))
    group by j.tenant_id, j.queue, j.state
    order by 1, 2, 3
$$;

comment on function jobctl.stats(text, text) is
'How many jobs each tenant and queue holds in each state in hot storage, with the oldest run_at of
unfinished jobs; optionally for one tenant and/or queue. Only the caller''s tenants.
Errors: none.
Example:
select * from jobctl.stats(''acme'');';
