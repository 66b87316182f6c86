-- jobctl._oldest_due: the earliest run_at among a lane's due jobs in _ready (held jobs wait for
-- their key, not for a worker, and are left out): one index descent per priority the lane holds
-- (a skip scan of _ready_lane_idx), however many jobs it has.
create or replace function jobctl._oldest_due(p_queue text, p_tenant_id text)
returns timestamptz
language sql
stable
as $$
    with recursive prio (priority) as (
        (select r.priority from jobctl._ready as r
         where r.queue = p_queue and r.tenant_id = p_tenant_id
         order by r.priority desc limit 1)
        union all
        select n.priority from prio as p
        cross join lateral (
            select r.priority from jobctl._ready as r
            where r.queue = p_queue and r.tenant_id = p_tenant_id and r.priority < p.priority
            order by r.priority desc limit 1
        ) as n
    )
    select min(h.run_at)
    from prio as p
    cross join lateral (
        select r.run_at from jobctl._ready as r
        where r.queue = p_queue and r.tenant_id = p_tenant_id and r.priority = p.priority
        order by r.run_at limit 1
    ) as h
$$;
