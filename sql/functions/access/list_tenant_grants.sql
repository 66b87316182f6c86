-- jobctl.list_tenant_grants: which roles act for which tenants (jobctl.grant_tenant), by role name;
-- grants of dropped roles are left out (jobctl doctor counts them). The caller's tenants only (an
-- API token: tenants:read); every-tenant grants (tenant NULL) only for callers acting for every
-- tenant. Reads: _role_tenant.
create or replace function jobctl.list_tenant_grants()
returns table (role_name text, tenant_id text, granted_at timestamptz, granted_by text)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select r.rolname::text, g.tenant_id, g.granted_at, g.granted_by
    from jobctl._role_tenant as g
    inner join pg_catalog.pg_roles as r on r.oid = g.role_oid
    cross join (select jobctl._acting_tenants('tenants:read') as tenants) as a
    where a.tenants is null or g.tenant_id = any(a.tenants)  -- the caller's tenants only (NULL: all)
    order by 1, g.tenant_id nulls first
$$;

comment on function jobctl.list_tenant_grants() is
'The tenants each role acts for (tenant_id NULL: every tenant), with when and by whom
granted. The caller''s tenants only; every-tenant grants only for callers acting for every tenant (an API
token needs tenants:read).
Errors: none.
Example:
select * from jobctl.list_tenant_grants();';
