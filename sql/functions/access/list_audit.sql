-- jobctl.list_audit: a page of jobctl.audit_log, newest first: the caller's tenants' entries (rows
-- with no tenant, such as queue settings, admin tokens and every-tenant grants, only for callers
-- acting for every tenant), as rows of audit_log (audit_id, at, actor, token_id, action, tenant_id,
-- detail). before_id is exclusive (keyset pagination). Reads: audit_log (by
-- audit_log_tenant_idx for one tenant).
create or replace function jobctl.list_audit(
    tenant_id text default null,
    before_id bigint default null,
    max_count integer default 100
)
returns setof jobctl.audit_log  -- a row type: its column tenant_id does not clash with the parameter
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
declare
    v_tenants text[] := jobctl._acting_tenants('audit:read');
    v_tenant text := list_audit.tenant_id;
begin
    if list_audit.max_count is null or list_audit.max_count not between 1 and 1000 then
        raise exception using errcode = 'JC001', message = 'max_count must be from 1 to 1000',
            detail = 'field: max_count';
    end if;
    if v_tenant is not null then
        perform jobctl._require_tenant(v_tenant, 'audit:read');
    elsif cardinality(v_tenants) = 1 then
        v_tenant := v_tenants[1];
    end if;
    if v_tenant is not null then
        return query
        select a.*
        from jobctl.audit_log as a
        where a.tenant_id = v_tenant and (list_audit.before_id is null or a.audit_id < list_audit.before_id)
        order by a.audit_id desc
        limit list_audit.max_count;
    else
        return query
        select a.*
        from jobctl.audit_log as a
        where (v_tenants is null or a.tenant_id = any(v_tenants))
            and (list_audit.before_id is null or a.audit_id < list_audit.before_id)
        order by a.audit_id desc
        limit list_audit.max_count;
    end if;
end
$$;

comment on function jobctl.list_audit(text, bigint, integer) is
'A page of the audit log, newest first: who (actor: the login; token_id: the API token) did what
(action, detail) for which tenant, and when. The caller''s tenants only (tenant_id NULL: all of them); entries with
no tenant (queue settings, admin tokens, every-tenant grants) only for callers acting for every tenant. before_id:
only entries with a smaller audit_id (pass the last one of a page); max_count 1..1000, default 100.
Errors: JC001 max_count out of range, 42501 tenant_id is another tenant.
Example:
select at, actor, action, detail from jobctl.list_audit(''acme'', max_count => 20);';
