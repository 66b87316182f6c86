-- jobctl.grant_tenant: let a database role (and every login that is a member of it) act for a
-- tenant through jobctl's functions and read its rows; tenant_id NULL: every tenant. Idempotent.
-- Writes: _role_tenant, audit_log.
create or replace function jobctl.grant_tenant(role_name text, tenant_id text default null)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_role oid := (select r.oid from pg_catalog.pg_roles as r where r.rolname = grant_tenant.role_name);
begin
    if v_role is null then
        raise exception using errcode = 'JC001',
            message = format('role_name: no role %s', coalesce(grant_tenant.role_name, 'NULL')),
            detail = 'field: role_name', hint = 'Create the role first (CREATE ROLE), then grant it jobctl_writer, jobctl_worker or jobctl_reader.';
    end if;
    if grant_tenant.tenant_id = '' or length(grant_tenant.tenant_id) > 200 then
        raise exception using errcode = 'JC001', message = 'tenant_id must be 1-200 characters, or NULL for every tenant',
            detail = 'field: tenant_id';
    end if;
    insert into jobctl._role_tenant as g (role_oid, tenant_id)
    values (v_role, grant_tenant.tenant_id)
    on conflict (role_oid, coalesce(tenant_id, '')) do nothing;
    if not found then
        return false;
    end if;
    perform jobctl._audit('grant_tenant', grant_tenant.tenant_id, jsonb_build_object('role', grant_tenant.role_name));
    return true;
end
$$;

comment on function jobctl.grant_tenant(text, text) is
'Let role_name (and its members) act for tenant_id (NULL: every tenant) through jobctl''s
functions and see its rows. True if granted now, false if it already was. The grant follows the role (by OID), not
its name. Audited.
Errors: JC001 an unknown role or a bad tenant_id.
Example:
select jobctl.grant_tenant(''billing_svc'', ''acme'');';
