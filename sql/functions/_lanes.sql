-- jobctl._lanes: the claimable lanes (queue, tenant) for a queue filter, with their tenants'
-- weights laid end to end as lower bounds (`lows`, ready for width_bucket) and whether each tenant
-- has max_running. Enumerating lanes costs one index descent per lane (about 8 µs each), so the
-- answer is shared through jobctl._lane_cache: a claimer that finds it older than 100 ms and can
-- take the refresh lock recomputes it; the others use it as it is. claim_job asks for a fresh list
-- (p_fresh) when the shared one comes up short. A new lane, or a tenant's new weight or pause, is
-- thus seen within about 100 ms, and the cache row changes at most ten times a second.
create or replace function jobctl._lanes(p_queues text[], p_fresh boolean)
returns table (queues text[], tenants text[], limited boolean[], lows float8[], total float8, cached boolean)
language plpgsql
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_key text := coalesce(p_queues::text, '*');
    v_row jobctl._lane_cache;
begin
    if not p_fresh then
        select * into v_row from jobctl._lane_cache as c where c.queues_key = v_key;
        if found and (v_row.refreshed_at > v_now - interval '100 milliseconds'
                      or not pg_try_advisory_xact_lock(19014, hashtext(v_key))) then
            return query select v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, true;
            return;
        end if;
    end if;
    select
        v_key, v_now,
        coalesce(array_agg(x.queue order by x.low), '{}'),
        coalesce(array_agg(x.tenant_id order by x.low), '{}'),
        coalesce(array_agg(x.limited order by x.low), '{}'),
        coalesce(array_agg(x.low order by x.low), '{}'),
        coalesce(sum(x.weight), 0)
    into v_row
    from (
        select l.queue, l.tenant_id, t.weight, t.max_running is not null as limited,
            (sum(t.weight) over (order by l.queue, l.tenant_id rows unbounded preceding) - t.weight)::float8 as low
        from jobctl._ready_lanes(p_queues) as l
        join jobctl.tenant as t on t.tenant_id = l.tenant_id
        where not t.paused and coalesce(t.max_running, 1) > 0
    ) as x;
    if not p_fresh or pg_try_advisory_xact_lock(19014, hashtext(v_key)) then
        insert into jobctl._lane_cache as c values (v_row.*)
        on conflict (queues_key) do update
        set refreshed_at = excluded.refreshed_at, queues = excluded.queues, tenants = excluded.tenants,
            limited = excluded.limited, lows = excluded.lows, total = excluded.total;
    end if;
    return query select v_row.queues, v_row.tenants, v_row.limited, v_row.lows, v_row.total, false;
end
$$;
