-- jobctl._move_in_begin: the target shard's first step of a tenant's move in: the tenant with the
-- source's settings and key limits (p_config, from jobctl._move_out_begin), paused until the move
-- flips (jobctl._move_in_finish), so that no job of it runs here before the router routes its ids
-- here. Encrypted payloads move as they are (sealed with the tenant's key, which the database never
-- holds), so the target keeps the source's key check. A tenant that once moved off this shard comes
-- back: its fence and finished move record go. Again with the same settings it changes nothing.
-- Writes: tenant, concurrency_limit, _tenant_move (delete), _lane_cache (delete), audit_log.
create or replace function jobctl._move_in_begin(p_config jsonb)
returns void
language plpgsql
as $$
declare
    v_tenant jobctl.tenant;
begin
    v_tenant := jsonb_populate_record(null::jobctl.tenant, p_config -> 'tenant');
    if exists (
        select from jobctl._tenant_move as m where m.tenant_id = v_tenant.tenant_id and m.finished_at is null
    ) then
        raise exception using errcode = 'JC010',
            message = format('tenant %s is still moving off this shard', v_tenant.tenant_id),
            detail = 'field: tenant_id', hint = 'Finish that move first: run it again.';
    end if;
    perform jobctl.put_tenant(
        v_tenant.tenant_id, v_tenant.weight, v_tenant.max_pending, v_tenant.max_running, v_tenant.submit_rate,
        v_tenant.submit_burst, v_tenant.claim_rate, v_tenant.claim_burst, false
    );
    update jobctl.tenant as t
    set encrypt_payloads = v_tenant.encrypt_payloads, payload_key_check = v_tenant.payload_key_check,
        key_max_running = v_tenant.key_max_running, moved_to = null, paused = true,
        created_at = least(t.created_at, v_tenant.created_at)
    where t.tenant_id = v_tenant.tenant_id;
    insert into jobctl.concurrency_limit as c (tenant_id, concurrency_key, max_running)
    select l.tenant_id, l.concurrency_key, l.max_running
    from jsonb_populate_recordset(null::jobctl.concurrency_limit, p_config -> 'limits') as l
    on conflict (tenant_id, concurrency_key) do update set max_running = excluded.max_running;
    delete from jobctl._tenant_move as m where m.tenant_id = v_tenant.tenant_id;
    delete from jobctl._lane_cache;
    perform jobctl._audit('move_tenant_in', v_tenant.tenant_id, '{}');
end
$$;
