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
'Check an API bearer token for one scope and act as it for the rest of the transaction. Returns
the token''s id, tenant (NULL: an admin token) and scopes; until the transaction ends, every jobctl function acts
for that tenant and those scopes only, re-checking the token on each call. The HTTP API calls it first in each
request''s transaction.
Errors: JC020 the token is unknown or revoked, JC021 the token lacks the scope.
Example:
begin;
select * from jobctl.authenticate(''jct_1_...'', ''jobs:submit'');
select * from jobctl.submit_job(''acme'', ''email'', ''{"to": "a@example.com"}'');
commit;';
