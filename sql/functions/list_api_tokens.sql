-- jobctl.list_api_tokens: the API tokens (never the tokens themselves: only their hashes are kept).
create or replace function jobctl.list_api_tokens(tenant_id text default null)
returns table (token_id bigint, tenant_id text, scopes text[], label text, created_at timestamptz, revoked_at timestamptz)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select t.token_id, t.tenant_id, t.scopes, t.label, t.created_at, t.revoked_at
    from jobctl._api_token as t
    where list_api_tokens.tenant_id is null or t.tenant_id = list_api_tokens.tenant_id
    order by t.token_id
$$;

comment on function jobctl.list_api_tokens(text) is
'API tokens, optionally of one tenant: id, tenant (NULL: admin), scopes, label, created_at,
revoked_at. Never the token itself.
Errors: none.
Example:
select * from jobctl.list_api_tokens(''acme'');';
