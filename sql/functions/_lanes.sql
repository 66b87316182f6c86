-- jobctl._lanes: the claimable lanes (queue, tenant) for a queue filter, with their tenants'
-- weights and whether they have max_running. Enumerating lanes costs one index descent per lane,
-- so with 16 lanes or more each session reuses its last answer for 100 ms (kept in a session
-- setting) and claim_job asks for a fresh one when the cached lanes come up short. A new lane, or a
-- tenant's new weight or pause, is therefore seen within 100 ms; with fewer lanes, at once.
create or replace function jobctl._lanes(p_queues text[], p_fresh boolean)
returns table (queues text[], tenants text[], weights integer[], limited boolean[], cached boolean)
language plpgsql
as $$
declare
    v_now double precision := extract(epoch from clock_timestamp());
    v_cache jsonb;
    v_filter text := coalesce(p_queues::text, '*');
begin
    if not p_fresh then
        v_cache := nullif(current_setting('jobctl.lanes', true), '')::jsonb;
        if v_cache is not null and v_cache ->> 'filter' = v_filter and v_now - (v_cache ->> 'at')::float8 < 0.1
           and jsonb_array_length(v_cache -> 'q') >= 16 then
            return query select
                array(select jsonb_array_elements_text(v_cache -> 'q')),
                array(select jsonb_array_elements_text(v_cache -> 't')),
                array(select jsonb_array_elements_text(v_cache -> 'w')::integer),
                array(select jsonb_array_elements_text(v_cache -> 'l')::boolean),
                true;
            return;
        end if;
    end if;
    select jsonb_build_object(
        'at', v_now, 'filter', v_filter,
        'q', coalesce(jsonb_agg(l.queue), '[]'), 't', coalesce(jsonb_agg(l.tenant_id), '[]'),
        'w', coalesce(jsonb_agg(t.weight), '[]'), 'l', coalesce(jsonb_agg(t.max_running is not null), '[]')
    )
    into v_cache
    from jobctl._ready_lanes(p_queues) as l
    join jobctl.tenant as t on t.tenant_id = l.tenant_id
    where not t.paused and coalesce(t.max_running, 1) > 0;
    perform set_config('jobctl.lanes', v_cache::text, false);
    return query select
        array(select jsonb_array_elements_text(v_cache -> 'q')),
        array(select jsonb_array_elements_text(v_cache -> 't')),
        array(select jsonb_array_elements_text(v_cache -> 'w')::integer),
        array(select jsonb_array_elements_text(v_cache -> 'l')::boolean),
        false;
end
$$;
