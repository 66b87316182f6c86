-- jobctl._move_out_fence: after the router has flipped the tenant's placement to the target, make
-- this (source) shard refuse the tenant's submits and retries (JC011, jobctl._submit and _retry), so
-- that a call routed by the old placement cannot leave a job here that nothing would run. Called
-- twice, each in its own transaction: the first sets tenant.moved_to and returns false; the next
-- sees it committed and records fenced_at (the time after which every new transaction sees the
-- fence, jobctl._move_out_finish) and returns true. Locks: the tenant row. Writes: tenant, _tenant_move.
create or replace function jobctl._move_out_fence(p_tenant_id text)
returns boolean
language plpgsql
as $$
declare
    v_move jobctl._tenant_move;
begin
    select * into v_move from jobctl._tenant_move as m where m.tenant_id = p_tenant_id and m.finished_at is null
    for update;
    if not found then
        raise exception using errcode = 'JC010', message = format('tenant %s is not moving off this shard', p_tenant_id),
            detail = 'field: tenant_id', hint = 'Start the move with jobctl shards move.';
    end if;
    if v_move.fenced_at is not null then
        return true;
    end if;
    if exists (select from jobctl.tenant as t where t.tenant_id = p_tenant_id and t.moved_to is not distinct from v_move.to_shard) then
        update jobctl._tenant_move as m set fenced_at = clock_timestamp() where m.tenant_id = p_tenant_id;
        return true;
    end if;
    update jobctl.tenant as t set moved_to = v_move.to_shard, updated_at = now() where t.tenant_id = p_tenant_id;
    return false;
end
$$;
