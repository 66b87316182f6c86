-- jobctl._require_tenant: raise unless the caller may act for tenant with scope
-- (jobctl._acting_tenants); field names the argument that named the tenant.
create or replace function jobctl._require_tenant(p_tenant text, p_scope text, p_field text default 'tenant_id')
returns void
language plpgsql
stable
as $$
declare
    v_tenants text[] := jobctl._acting_tenants(p_scope);
begin
    if v_tenants is not null and not coalesce(p_tenant = any(v_tenants), false) then
        raise exception using errcode = '42501',
            message = format('%s: no %s access to tenant %s', p_field, p_scope, coalesce(p_tenant, 'NULL')),
            detail = format('field: %s', p_field),
            hint = 'An administrator grants a role its tenants with jobctl.grant_tenant(role, tenant).';
    end if;
end
$$;
