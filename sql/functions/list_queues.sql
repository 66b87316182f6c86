-- jobctl.list_queues: every queue that has settings or jobs due or running, with its settings (NULL:
-- no limit) and its due and running jobs across all tenants. For administrators: queues are shared
-- by tenants. Reads: queue, _ready (a count per queue: it scans the due jobs), _running.
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
    with due as (select r.queue, count(*) as n from jobctl._ready as r group by r.queue),
    running as (select r.queue, count(*) as n from jobctl._running as r group by r.queue)
    select coalesce(q.queue, d.queue, u.queue), coalesce(q.paused, false), q.max_running, q.claim_rate, q.claim_burst,
        coalesce(d.n, 0), coalesce(u.n, 0), q.updated_at
    from jobctl.queue as q
    full join due as d on d.queue = q.queue
    full join running as u on u.queue = coalesce(q.queue, d.queue)
    order by 1;
end
$$;

comment on function jobctl.list_queues() is
'Every queue with settings or jobs due or running: paused, max_running, claim_rate and
claim_burst (NULL: no limit), and its due and running jobs across all tenants, ordered by name. Queues are shared by
every tenant, so only a caller acting for every tenant may list them.
Errors: 42501 the caller does not act for every tenant.
Example:
select queue, paused, due, running from jobctl.list_queues();';
