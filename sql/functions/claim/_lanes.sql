-- jobctl._lanes: the "lanes" step of jobctl.claim_job: the claimable lanes (queue, tenant) for a
-- queue filter, each as wide as its tenant's weight divided by the tenant's lanes in the filter (so
-- a tenant's share does not grow with its number of queues), laid end to end as lower bounds
-- (ready for width_bucket), and whether the lane is limited (its tenant or its queue has
-- max_running or a claim rate: jobctl._cap). Paused tenants and queues, and max_running 0, are
-- left out.
-- Listing costs an index descent per lane (jobctl._ready_lanes) and a plan of some twenty nodes, so
-- the list is shared through jobctl._lane_cache, fresh for 100 ms + 0.2 ms per lane (at most 1 s):
-- the newest row is returned while it is fresh, and also, for up to a second, while it is stale
-- but another claimer holds the refresh lock, listing (cached: a fresh listing might find lanes it lacks, and a claim
-- that got nothing from it lists afresh, p_fresh, lock or no lock); else the lanes are listed and
-- the listing shared, unless another claimer is sharing one right now (the refresh lock) or has
-- since this call began. A list carries the generation of the settings it was listed under, read
-- with them: a list of an older generation than the current one (a pause or a queue's settings
-- changed since, jobctl._relist_lanes) is never used, so a claim sent after a pause returned never
-- gets the paused lanes from a listing that raced it.
-- Calls: _try_lock, _ready_lanes. Reads: _lane_cache, _lane_generation, tenant, queue.
-- Locks: the try-lock lanes on the filter (jobctl._try_lock) for the transaction, to share a listing.
-- Writes: _lane_cache (insert), at most one row per listing.
create or replace function jobctl._lanes(p_queues text[], p_fresh boolean)
returns jobctl._lane_set
language plpgsql
-- a custom plan of the listing looks cheaper (the unused branch of _ready_lanes pruned), so without
-- this every call would plan it again
set plan_cache_mode = force_generic_plan
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_key text := coalesce(md5(p_queues::text), '*');  -- a filter of any size keys one index entry
    v_row jobctl._lane_cache;
begin
    select c.* into v_row from jobctl._lane_cache as c
    where c.queues_key = v_key and c.generation = (select g.generation from jobctl._lane_generation as g)
    order by c.fresh_until desc limit 1;
    -- a stale list is refreshed by one claimer at a time; the others claim from it meanwhile, for a
    -- second at most (a lock held longer, by a long transaction or by anyone, cannot freeze the list)
    if found and not p_fresh
       and (v_row.fresh_until > v_now
            or (v_row.fresh_until > v_now - interval '1 second'
                and not jobctl._try_lock('lanes', v_key))) then
        return (v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, true);
    end if;
    select
        v_key, v_now + least(interval '100 milliseconds' + count(*) * interval '0.2 milliseconds', interval '1 second'),
        coalesce(array_agg(x.queue order by x.low), '{}'),
        coalesce(array_agg(x.tenant_id order by x.low), '{}'),
        coalesce(array_agg(x.limited order by x.low), '{}'),
        coalesce(array_agg(x.low order by x.low), '{}'),
        coalesce(sum(x.width), 0),
        -- in the statement that reads the settings: the generation they are of
        (select g.generation from jobctl._lane_generation as g)
    into v_row.queues_key, v_row.fresh_until, v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total,
        v_row.generation
    from (
        select y.*, sum(y.width) over (order by y.queue, y.tenant_id rows unbounded preceding) - y.width as low
        from (
            select l.queue, l.tenant_id,
                t.max_running is not null or t.claim_bucket is not null
                or q.max_running is not null or q.claim_bucket is not null as limited,
                t.weight::float8 / count(*) over (partition by l.tenant_id) as width
            from jobctl._ready_lanes(p_queues) as l
            inner join jobctl.tenant as t on t.tenant_id = l.tenant_id
            left join jobctl.queue as q on q.queue = l.queue
            where not t.paused and coalesce(t.max_running, 1) > 0
                and not coalesce(q.paused, false) and coalesce(q.max_running, 1) > 0
        ) as y
    ) as x;
    -- under the lock, look again: a listing that committed after this call read the row has added
    -- a fresh one (listed since this call began), and a second would only add to the key's rows
    if jobctl._try_lock('lanes', v_key)
       and not exists (select from jobctl._lane_cache as c where c.queues_key = v_key and c.fresh_until > v_now
                       and c.generation >= v_row.generation and (not p_fresh or c.listed_at >= v_now)) then
        insert into jobctl._lane_cache (queues_key, fresh_until, queues, tenants, limited, lows, total, listed_at, generation)
        values (v_row.queues_key, v_row.fresh_until, v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, v_now,
                v_row.generation);
    end if;
    return (v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, false);
end
$$;
