-- jobctl.list_api_tokens: the API tokens (never the tokens themselves: only their hashes are kept)
-- of the caller's tenants (an API token: tenants:read); admin tokens (tenant NULL) only for callers
-- acting for every tenant. Reads: _api_token.
create or replace function jobctl.list_api_tokens(tenant_id text default null)
returns table (token_id bigint, tenant_id text, scopes text[], label text, created_at timestamptz, revoked_at timestamptz)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select t.token_id, t.tenant_id, t.scopes, t.label, t.created_at, t.revoked_at
    from jobctl._api_token as t
    cross join (select jobctl._acting_tenants('tenants:read') as tenants) as a
    where (list_api_tokens.tenant_id is null or t.tenant_id = list_api_tokens.tenant_id)
        and (a.tenants is null or t.tenant_id = any(a.tenants))  -- the caller's tenants only (NULL: all)
    order by t.token_id
$$;

comment on function jobctl.list_api_tokens(text) is
'API tokens, optionally of one tenant: id, tenant (NULL: admin), scopes, label, created_at,
revoked_at. Never the token itself. The caller''s tenants only; admin tokens only for callers acting for every
tenant (an API token needs tenants:read).
Errors: none.
Example:
select * from jobctl.list_api_tokens(''acme'');';
