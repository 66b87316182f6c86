-- jobctl._acting_tenants: the tenants the caller may act for with scope; NULL means every tenant.
-- - In a transaction that ran jobctl.authenticate (the HTTP API), the token's tenant, if the token
--   (re-verified here: a setting anyone can write proves nothing by itself) has the scope; a token
--   that may change a tenant's jobs (schedules, settings) may also read them back.
-- - Otherwise by database role: a superuser or a member of jobctl_admin acts for every tenant;
--   any other login for the tenants granted (jobctl.grant_tenant) to the roles it is a member of.
--   session_user, not current_user: inside a SECURITY DEFINER function current_user is the owner.
-- Scopes are the API token scopes plus 'jobs:work' (claim and report), which no token has; a
-- role's scopes are the functions it may execute (sql/grants.sql). SECURITY DEFINER: row-level
-- security policies call it as the reading role, which cannot read _role_tenant or _api_token.
-- Reads: _api_token, _role_tenant.
create or replace function jobctl._acting_tenants(p_scope text)
returns text[]
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
declare
    v_secret text := current_setting('jobctl.api_token', true);
    v_token jobctl._api_token;
    v_tenants text[];
    v_all boolean;
begin
    if v_secret <> '' then
        -- a token that may change a tenant's jobs (schedules, settings) may read them back
        v_token := jobctl._token(v_secret, case p_scope
            when 'jobs:read' then array['jobs:read', 'jobs:submit', 'jobs:cancel', 'jobs:retry', 'jobs:delete']
            when 'schedules:read' then array['schedules:read', 'schedules:write']
            when 'tenants:read' then array['tenants:read', 'tenants:write']
            else array[p_scope]
        end);
        return case when v_token.tenant_id is not null then array[v_token.tenant_id] end;
    end if;
    if (select r.rolsuper from pg_catalog.pg_roles as r where r.rolname = session_user)
       or pg_catalog.pg_has_role(session_user, 'jobctl_admin', 'MEMBER') then
        return null;
    end if;
    select coalesce(array_agg(distinct g.tenant_id) filter (where g.tenant_id is not null), '{}'),
        coalesce(bool_or(g.tenant_id is null), false)
    into v_tenants, v_all
    from jobctl._role_tenant as g
    inner join pg_catalog.pg_roles as r on r.oid = g.role_oid  -- (a dropped role's grants match none)
    where pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER');
    return case when not v_all then v_tenants end;
end
$$;
