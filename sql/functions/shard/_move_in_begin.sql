-- jobctl._move_in_begin: the target shard's first step of a tenant's move in: the tenant with the
-- source's settings and key limits (p_config, from jobctl._move_out_begin), paused until the move
-- flips (jobctl._move_in_finish), so that no job of it runs here before the router routes its ids
-- here. Encrypted payloads move as they are (sealed with the tenant's key, which the database never
-- holds), so the target keeps the source's key check. A tenant that once moved off this shard comes
-- back: its fence and finished move record go. The tenant's role grants come by role name (a role
-- missing here is refused, JC010: create it, then run the move again) and its API tokens by their
-- hashes (new token_ids here; a token revoked on the source comes revoked). The keys an earlier move
-- in left here (jobctl._move_key) go. Again with the same settings it changes nothing.
-- Writes: tenant, concurrency_limit, _role_tenant, _api_token, _tenant_move (delete), _move_key
-- (delete), _lane_generation and _lane_cache (_relist_lanes), audit_log.
create or replace function jobctl._move_in_begin(p_config jsonb)
returns void
language plpgsql
as $$
declare
    v_tenant jobctl.tenant;
    v_missing text;
    v_grants integer;
    v_tokens integer;
begin
    v_tenant := jsonb_populate_record(null::jobctl.tenant, p_config -> 'tenant');
    if exists (
        select from jobctl._tenant_move as m where m.tenant_id = v_tenant.tenant_id and m.finished_at is null
    ) then
        raise exception using errcode = 'JC010',
            message = format('tenant %s is still moving off this shard', v_tenant.tenant_id),
            detail = 'field: tenant_id', hint = 'Finish that move first: run it again.';
    end if;
    select string_agg(g.role, ', ' order by g.role) into v_missing
    from jsonb_to_recordset(coalesce(p_config -> 'grants', '[]')) as g (role text)
    where not exists (select from pg_catalog.pg_roles as r where r.rolname = g.role);
    if v_missing is not null then
        raise exception using errcode = 'JC010',
            message = format('tenant %s is granted to roles this shard does not have: %s', v_tenant.tenant_id, v_missing),
            detail = 'field: grants',
            hint = 'Create the roles on the target shard (or revoke the grants on the source), then run the move again.';
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
    insert into jobctl._role_tenant as g (role_oid, tenant_id, granted_at, granted_by)
    select r.oid, v_tenant.tenant_id, x.granted_at, x.granted_by
    from jsonb_to_recordset(p_config -> 'grants') as x (role text, granted_at timestamptz, granted_by text)
    inner join pg_catalog.pg_roles as r on r.rolname = x.role
    on conflict (role_oid, coalesce(tenant_id, '')) do nothing;
    get diagnostics v_grants = row_count;
    insert into jobctl._api_token as a (tenant_id, scopes, token_hash, label, created_at, revoked_at)
    select v_tenant.tenant_id, x.scopes, x.token_hash, x.label, x.created_at, x.revoked_at
    from jsonb_populate_recordset(null::jobctl._api_token, p_config -> 'tokens') as x
    on conflict (token_hash) do update set revoked_at = excluded.revoked_at
    where a.revoked_at is null and excluded.revoked_at is not null and a.tenant_id = excluded.tenant_id;
    get diagnostics v_tokens = row_count;
    delete from jobctl._tenant_move as m where m.tenant_id = v_tenant.tenant_id;
    delete from jobctl._move_key as k where k.tenant_id = v_tenant.tenant_id;
    perform jobctl._relist_lanes();
    perform jobctl._audit('move_tenant_in', v_tenant.tenant_id, jsonb_build_object('grants', v_grants, 'tokens', v_tokens));
end
$$;
