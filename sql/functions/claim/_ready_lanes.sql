-- jobctl._ready_lanes: the lanes (queue, tenant) that have due jobs, by a loose index scan of
-- _ready_lane_idx: one index descent per lane, however many jobs each lane holds. The scan runs
-- backwards, so each descent lands on a lane's tail (its newest, lowest-priority entries): claims
-- delete from the head, and the dead entries they leave there until VACUUM are never walked here.
-- Calls: nothing. Reads: _ready. Locks and writes: nothing.
create or replace function jobctl._ready_lanes(p_queues text[])
returns table (queue text, tenant_id text)
language sql
stable
as $$
    with recursive every_lane (queue, tenant_id) as (
        (select r.queue, r.tenant_id from jobctl._ready as r
         where p_queues is null
         order by r.queue desc, r.tenant_id desc limit 1)
        union all
        select n.queue, n.tenant_id
        from every_lane as l
        cross join lateral (
            select r.queue, r.tenant_id from jobctl._ready as r
            where (r.queue, r.tenant_id) < (l.queue, l.tenant_id)
            order by r.queue desc, r.tenant_id desc limit 1
        ) as n
    ),
    queue_lane (queue, tenant_id) as (
        select q.queue, (select r.tenant_id from jobctl._ready as r where r.queue = q.queue
                         order by r.tenant_id desc limit 1)
        from unnest(p_queues) as q (queue)
        union all
        select l.queue, n.tenant_id
        from queue_lane as l
        cross join lateral (
            select r.tenant_id from jobctl._ready as r
            where r.queue = l.queue and r.tenant_id < l.tenant_id
            order by r.tenant_id desc limit 1
        ) as n
    )
    select e.queue, e.tenant_id from every_lane as e
    union all
    select distinct q.queue, q.tenant_id from queue_lane as q where q.tenant_id is not null
$$;
