-- jobctl.list_workers: the registry of workers (jobctl.worker_beat), each with whether it beat
-- within `stale` and how many leases it holds now. Workers serve every tenant, so only a caller
-- acting for every tenant may list them (as list_queues). Reads: _worker, _running (a count per
-- worker: it scans the running jobs).
create or replace function jobctl.list_workers(stale interval default '1 minute')
returns table (
    worker_id text, host text, pid integer, queues text[], concurrency integer, in_flight integer,
    started_at timestamptz, last_seen_at timestamptz, alive boolean, running bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_column
begin
    perform jobctl._require_every_tenant('workers:read', 'the list of workers');
    if list_workers.stale is null or list_workers.stale < interval '1 second'
       or list_workers.stale > interval '1 hour' then
        raise exception using errcode = 'JC001', message = 'stale must be from 1 second to 1 hour',
            detail = 'field: stale', hint = 'Workers beat every few seconds; one not seen for an hour is forgotten.';
    end if;
    return query
    with leases as (select r.worker_id, count(*) as n from jobctl._running as r group by r.worker_id)
    select w.worker_id, w.host, w.pid, nullif(w.queues, '{}'), w.concurrency, w.in_flight, w.started_at,
        w.last_seen_at, w.last_seen_at >= now() - list_workers.stale, coalesce(l.n, 0)
    from jobctl._worker as w
    left join leases as l on l.worker_id = w.worker_id
    order by w.worker_id;
end
$$;

comment on function jobctl.list_workers(interval) is
'The registered workers (jobctl.worker_beat), by worker_id: host, pid, queues (NULL: all),
concurrency, jobs in flight as the worker last reported, started_at, last_seen_at, alive (it beat within stale,
1 second to 1 hour, default 1 minute) and running (the leases it holds now). Workers serve every tenant, so only a
caller acting for every tenant may list them.
Errors: JC001 stale out of range, 42501 the caller does not act for every tenant.
Example:
select worker_id, host, alive, in_flight, running from jobctl.list_workers();
select * from jobctl.list_workers(interval ''15 seconds'') where not alive;';
