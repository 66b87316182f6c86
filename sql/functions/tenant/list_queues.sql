-- jobctl.list_queues: every queue that has settings or jobs due or running, with its settings (NULL:
-- no limit) and its due and running jobs across all tenants. For administrators: queues are shared
-- by tenants. Reads: queue, the counters (jobctl._stat_gauges: no scan of the due jobs).
create or replace function jobctl.list_queues()
returns table (
    queue text, paused boolean, max_running integer, claim_rate numeric, claim_burst integer, due bigint,
    running bigint, updated_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
begin
    perform jobctl._require_every_tenant('queues:read', 'the list of queues');
    return query
    with busy as (
        select g.queue, sum(g.pending)::bigint as due, sum(g.running)::bigint as running
        from jobctl._stat_gauges() as g
        group by g.queue
        having sum(g.pending) > 0 or sum(g.running) > 0
    )
    select coalesce(q.queue, b.queue), coalesce(q.paused, false), q.max_running, q.claim_rate, q.claim_burst,
        coalesce(b.due, 0), coalesce(b.running, 0), q.updated_at
    from jobctl.queue as q
    full join busy as b on b.queue = q.queue
    order by 1;
end
$$;

comment on function jobctl.list_queues() is
'Every queue with settings or jobs due or running: paused, max_running, claim_rate and
claim_burst (NULL: no limit), and its due (those waiting for a concurrency key included) and running jobs across all
tenants, from the counters, ordered by name. Queues are shared by
every tenant, so only a caller acting for every tenant may list them.
Errors: 42501 the caller does not act for every tenant.
Example:
select queue, paused, due, running from jobctl.list_queues();';
