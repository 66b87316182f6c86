-- jobctl.revoke_tenant: take back a grant_tenant; effective at once, for sessions already open too
-- (every call looks the grants up). Writes: _role_tenant, audit_log.
create or replace function jobctl.revoke_tenant(role_name text, tenant_id text default null)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
begin
    delete from jobctl._role_tenant as g
    where g.role_oid = (select r.oid from pg_catalog.pg_roles as r where r.rolname = revoke_tenant.role_name)
        and g.tenant_id is not distinct from revoke_tenant.tenant_id;
    if not found then
        return false;
    end if;
    perform jobctl._audit('revoke_tenant', tenant_id, jsonb_build_object('role', role_name));
    return true;
end
$$;

comment on function jobctl.revoke_tenant(text, text) is
'Take back grant_tenant(role_name, tenant_id) (NULL: the every-tenant grant), at once, also
for sessions already open. True if there was such a grant. Audited.
Errors: none.
Example:
select jobctl.revoke_tenant(''billing_svc'', ''acme'');';
