-- jobctl._require_every_tenant: raise 42501 unless the caller acts for every tenant (a superuser, a
-- jobctl_admin, a role granted all tenants, or an admin API token with p_scope): for what tenants
-- share, such as queues. The message names what is missing (acting for every tenant) and the
-- tenants the caller does act for, not p_scope: a tenant's token refused here holds p_scope (one
-- without it is refused before, JC021, by jobctl._acting_tenants).
create or replace function jobctl._require_every_tenant(p_scope text, p_what text)
returns void
language plpgsql
stable
as $$
declare
    v_tenants text[] := jobctl._acting_tenants(p_scope);
begin
    if v_tenants is not null then
        raise exception using errcode = '42501',
            message = format('%s is shared by every tenant: only a caller acting for every tenant may list or change it, '
                || 'and this one acts for %s', p_what, case
                    when cardinality(v_tenants) = 0 then 'no tenant'
                    when cardinality(v_tenants) <= 3 then 'tenant ' || array_to_string(v_tenants, ', ') || ' only'
                    else cardinality(v_tenants) || ' tenants only'
                end),
            hint = 'Use an admin token (created with a NULL tenant) or a role acting for every tenant.';
    end if;
end
$$;
