-- jobctl.caller_access: what the caller may see, area by area, by the very checks the areas'
-- functions make (jobctl._acting_tenants for the area's scope; jobctl._require_every_tenant for
-- what every tenant shares: queues, workers). The dashboard shows the tabs of the areas allowed
-- and asks nothing else: the rule stays here. Each check runs in a block of its own, so a refusal
-- (JC021, 42501) is an answer, not an error. Reads: _api_token, _role_tenant.
create or replace function jobctl.caller_access()
returns table (area text, scope text, every_tenant boolean, allowed boolean, missing text)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_column
declare
    v record;
    v_tenants text[];
begin
    for v in
        select a.area, a.scope, a.every_tenant from (values
            (1, 'jobs', 'jobs:read', false), (2, 'queues', 'queues:read', true),
            (3, 'tenants', 'tenants:read', false), (4, 'schedules', 'schedules:read', false),
            (5, 'workers', 'workers:read', true), (6, 'audit', 'audit:read', false)
        ) as a (n, area, scope, every_tenant)
        order by a.n
    loop
        area := v.area;
        scope := v.scope;
        every_tenant := v.every_tenant;
        begin
            v_tenants := jobctl._acting_tenants(v.scope);
            if v.every_tenant then
                perform jobctl._require_every_tenant(v.scope, v.area);
            end if;
            allowed := v_tenants is null or cardinality(v_tenants) > 0;
            missing := case when not allowed then 'a tenant to act for' end;
        exception
            when sqlstate 'JC021' then
                allowed := false;
                missing := format('the scope %s', v.scope);
            when sqlstate '42501' then
                allowed := false;
                missing := 'acting for every tenant';
        end;
        return next;
    end loop;
end
$$;

comment on function jobctl.caller_access() is
'What the caller (an API token after jobctl.authenticate, else the login''s roles) may see, one row per
area: jobs, queues, tenants, schedules, workers, audit; the scope the area''s functions check, whether it is
shared by every tenant (queues, workers: only a caller acting for every tenant sees it), allowed, and when not
what is missing (the scope, acting for every tenant, or a tenant to act for). The checks are the areas'' own
(jobctl._acting_tenants, jobctl._require_every_tenant): the dashboard shows the tabs of the allowed areas.
Errors: JC020 the token is unknown or revoked.
Example:
select area, allowed, missing from jobctl.caller_access();';
