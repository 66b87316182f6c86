-- jobctl.authenticate: who a bearer token speaks for, if it may perform scope; the rest of the
-- transaction then acts as the token (jobctl._acting_tenants). Reads: _api_token.
create or replace function jobctl.authenticate(token text, scope text)
returns table (token_id bigint, tenant_id text, scopes text[])
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
declare
    v_token jobctl._api_token := jobctl._token(authenticate.token, array[authenticate.scope]);
begin
    -- transaction-local: a pooled connection forgets it at commit; every function re-verifies it
    perform set_config('jobctl.api_token', authenticate.token, true);
    return query select v_token.token_id, v_token.tenant_id, v_token.scopes;
end
$$;

comment on function jobctl.authenticate(text, text) is
'The token id, tenant (NULL: admin) and scopes of an API bearer token allowed to perform scope; until the transaction
ends, every jobctl function then acts for that token''s tenant and scopes only. Errors: JC020 unknown or revoked
token, JC021 the token lacks the scope.';
