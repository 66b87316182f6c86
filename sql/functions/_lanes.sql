-- jobctl._lanes: the claimable lanes (queue, tenant) for a queue filter, each as wide as its
-- tenant's weight divided by the tenant's lanes in the filter (so a tenant's share does not grow
-- with its number of queues), laid end to end as lower bounds (`lows`, ready for width_bucket),
-- and whether each tenant has max_running or a claim rate. Listing lanes costs one index descent per lane (about
-- 13 µs each) and, even for one lane, setting up a plan of some twenty nodes, so the answer is
-- shared through jobctl._lane_cache, fresh for 100 ms + 0.2 ms per lane (at most 1 s) from its
-- listing: claim_job reads the newest row itself when it is fresh and calls this when it is not,
-- and a claimer that can take the refresh lock lists the lanes again and adds a row (rows are only
-- inserted, and truncated with their slot: migration 0012); the others use the newest as it is.
-- claim_job asks for a fresh list (p_fresh) when the shared one gave it no job and was listed more
-- than 20 ms ago; one claimer lists at a time (the others get the newest row, cached, and stop
-- looking), and its list is stored too (with its listed_at, so other idle claimers take it
-- instead of listing again), unless a row listed since this call began is there. A new lane, or a
-- tenant's new weight or pause, is thus seen within that age (100 ms with a few lanes, 300 ms at
-- 1,000) while the shared lanes have work, within 20 ms when they have none; a key gets at most
-- about ten rows a second from refreshes and fifty from fresh listings.
create or replace function jobctl._lanes(p_queues text[], p_fresh boolean)
returns table (queues text[], tenants text[], limited boolean[], lows float8[], total float8, cached boolean)
language plpgsql
-- a custom plan of the listing looks cheaper (the unused branch of _ready_lanes pruned), so without
-- this every call would plan it again: 359 -> 49 us a call with one lane
set plan_cache_mode = force_generic_plan
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_key text := coalesce(p_queues::text, '*');
    v_row jobctl._lane_cache;
    v_stale boolean;
begin
    select * into v_row from jobctl._lane_cache as c where c.queues_key = v_key order by c.fresh_until desc limit 1;
    v_stale := not found or v_row.fresh_until <= v_now;
    -- the newest row as it is (cached): when it is fresh and no fresh list is asked for, or when
    -- another claimer is listing the lanes (its list is shared at its commit)
    if found and ((not p_fresh and not v_stale) or not pg_try_advisory_xact_lock(19014, hashtext(v_key))) then
        return query select v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, true;
        return;
    end if;
    select
        v_key, v_now + least(interval '100 milliseconds' + count(*) * interval '0.2 milliseconds', interval '1 second'),
        coalesce(array_agg(x.queue order by x.low), '{}'),
        coalesce(array_agg(x.tenant_id order by x.low), '{}'),
        coalesce(array_agg(x.limited order by x.low), '{}'),
        coalesce(array_agg(x.low order by x.low), '{}'),
        coalesce(sum(x.width), 0)
    into v_row.queues_key, v_row.fresh_until, v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total
    from (
        select y.*, sum(y.width) over (order by y.queue, y.tenant_id rows unbounded preceding) - y.width as low
        from (
            select l.queue, l.tenant_id, t.max_running is not null or t.claim_bucket is not null as limited,
                t.weight::float8 / count(*) over (partition by l.tenant_id) as width
            from jobctl._ready_lanes(p_queues) as l
            join jobctl.tenant as t on t.tenant_id = l.tenant_id
            where not t.paused and coalesce(t.max_running, 1) > 0
        ) as y
    ) as x;
    -- under the lock, look again: a listing that committed after this call read the row (and so
    -- after its own lock was released) has added a fresh one (a fresh listing: one listed since
    -- this call began), and a second would only add to the key's rows
    if (v_stale or p_fresh) and pg_try_advisory_xact_lock(19014, hashtext(v_key))
       and not exists (select from jobctl._lane_cache as c where c.queues_key = v_key and c.fresh_until > v_now
                       and (not p_fresh or c.listed_at >= v_now)) then
        insert into jobctl._lane_cache (queues_key, fresh_until, queues, tenants, limited, lows, total, listed_at)
        values (v_row.queues_key, v_row.fresh_until, v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, v_now);
    end if;
    return query select v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, false;
end
$$;
