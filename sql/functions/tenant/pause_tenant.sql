-- jobctl.pause_tenant: stop or restart claims of a tenant's jobs (submits go on: they queue). The
-- shared lane lists are emptied, so the next claim lists lanes afresh and sees the change at once.
-- An unknown tenant is P0002. Only for the caller's tenants (an API token: tenants:write), checked
-- first, so another tenant's existence is not told. A caller of some tenants may pause them (an
-- emergency stop) but not resume them: only a caller acting for every tenant does, so an operator's
-- pause holds. Writes: tenant (paused), _lane_generation and _lane_cache (_relist_lanes), audit_log.
create or replace function jobctl.pause_tenant(tenant_id text, paused boolean default true)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_was boolean;
begin
    perform jobctl._require_tenant(pause_tenant.tenant_id, 'tenants:write');
    select t.paused into v_was from jobctl.tenant as t where t.tenant_id = pause_tenant.tenant_id for update;
    if not found then
        raise exception using errcode = 'P0002', message = format('no tenant %s', pause_tenant.tenant_id),
            detail = 'field: tenant_id';
    end if;
    if pause_tenant.paused is null then
        raise exception using errcode = 'JC001', message = 'paused must be true or false', detail = 'field: paused';
    end if;
    if not pause_tenant.paused and jobctl._acting_tenants('tenants:write') is not null then
        -- a pause may be an operator's stop of a misbehaving tenant: the tenant cannot lift it
        raise exception using errcode = '42501',
            message = format('tenant %s may be paused by its own callers, but only an operator resumes it', pause_tenant.tenant_id),
            detail = 'field: paused',
            hint = 'Resume it with an admin token (created with a NULL tenant) or a role acting for every tenant.';
    end if;
    update jobctl.tenant as t set paused = pause_tenant.paused, updated_at = now()
    where t.tenant_id = pause_tenant.tenant_id and t.paused <> pause_tenant.paused;
    perform jobctl._relist_lanes();
    perform jobctl._audit('pause_tenant', pause_tenant.tenant_id, jsonb_build_object('paused', pause_tenant.paused));
    return v_was <> pause_tenant.paused;
end
$$;

comment on function jobctl.pause_tenant(text, boolean) is
'Pause (paused = true, the default) or resume (false) claims of a tenant''s jobs, at once;
submits are still accepted. Returns whether the state changed. Audited.
Only for the caller''s tenants (an API token needs tenants:write); resuming only for a caller acting for every
tenant (an operator), so that a tenant cannot lift an operator''s pause.
Errors: P0002 no tenant has this id, JC001 NULL paused, 42501 another tenant, or resuming without acting for every
tenant.
Example:
select jobctl.pause_tenant(''acme'');
select jobctl.pause_tenant(''acme'', false);  -- resume';
