-- jobctl.list_tenants: every tenant's settings (see put_tenant), of the caller's tenants (an API
-- token: with tenants:read or tenants:write).
create or replace function jobctl.list_tenants()
returns table (
    tenant_id text, weight integer, max_pending bigint, max_running integer, submit_rate numeric, submit_burst integer,
    claim_rate numeric, claim_burst integer, paused boolean, created_at timestamptz, updated_at timestamptz,
    encrypt_payloads boolean
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select t.tenant_id, t.weight, t.max_pending, t.max_running, t.submit_rate, t.submit_burst, t.claim_rate,
        t.claim_burst, t.paused, t.created_at, t.updated_at, t.encrypt_payloads
    from jobctl.tenant as t
    -- the caller's tenants only (NULL: all of them)
    where t.tenant_id = any(coalesce((select jobctl._acting_tenants('tenants:read')), array[t.tenant_id]))
    order by t.tenant_id
$$;

comment on function jobctl.list_tenants() is
'Every tenant of the caller with its settings (weight, limits, rates; NULL means unlimited;
whether its payloads are encrypted), ordered by tenant_id.
Errors: none.
Example:
select tenant_id, weight, max_running, paused from jobctl.list_tenants();';
