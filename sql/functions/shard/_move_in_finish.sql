-- jobctl._move_in_finish: the flip's step on the target shard: the moved tenant's claims start here
-- (paused again only if it was paused on the source, p_paused), the lane lists are emptied so that
-- claims see it at once, and its max_pending counters are recounted with the jobs that came in.
-- Again it changes nothing. Writes: tenant (paused, pending_offset), _lane_generation and _lane_cache (_relist_lanes); a NOTIFY.
create or replace function jobctl._move_in_finish(p_tenant_id text, p_paused boolean)
returns void
language plpgsql
as $$
begin
    update jobctl.tenant as t set paused = p_paused, updated_at = now()
    where t.tenant_id = p_tenant_id and t.paused <> p_paused;
    perform jobctl._relist_lanes();
    perform jobctl._recount_pending(p_tenant_id);
    if not p_paused then
        -- the workers' wake-up hint for the queues of its due jobs (idle workers would wait for their poll)
        perform jobctl._notify(array(select distinct r.queue from jobctl._ready as r where r.tenant_id = p_tenant_id));
    end if;
end
$$;
