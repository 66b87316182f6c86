-- jobctl._require_every_tenant: raise 42501 unless the caller acts for every tenant (a superuser, a
-- jobctl_admin, a role granted all tenants, or an admin API token with p_scope): for what tenants
-- share, such as queues.
create or replace function jobctl._require_every_tenant(p_scope text, p_what text)
returns void
language plpgsql
stable
as $$
begin
    if jobctl._acting_tenants(p_scope) is not null then
        raise exception using errcode = '42501',
            message = format('%s: %s is shared by every tenant, so only an administrator may change or list it', p_scope, p_what),
            hint = 'Use an admin token (created with a NULL tenant) or a role acting for every tenant.';
    end if;
end
$$;
