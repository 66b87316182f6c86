-- jobctl.authenticate: who a bearer token speaks for, if it may perform scope. Reads: _api_token.
create or replace function jobctl.authenticate(token text, scope text)
returns table (token_id bigint, tenant_id text, scopes text[])
language plpgsql
stable
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
declare
    v_token jobctl._api_token;
begin
    select * into v_token from jobctl._api_token as t
    where t.token_hash = sha256(convert_to(coalesce(authenticate.token, ''), 'UTF8'));
    if not found or v_token.revoked_at is not null then
        raise exception using errcode = 'JC020', message = 'invalid or revoked API token',
            hint = 'Send Authorization: Bearer <token> with a token from jobctl token create.';
    end if;
    if authenticate.scope is null or not authenticate.scope = any(v_token.scopes) then
        raise exception using errcode = 'JC021',
            message = format('this token may not %s', coalesce(authenticate.scope, 'NULL')),
            detail = format('token %s has scopes %s', v_token.token_id, array_to_string(v_token.scopes, ', '));
    end if;
    return query select v_token.token_id, v_token.tenant_id, v_token.scopes;
end
$$;

comment on function jobctl.authenticate(text, text) is
'The token id, tenant (NULL: admin) and scopes of an API bearer token allowed to perform scope. Errors: JC020 unknown or
revoked token, JC021 the token lacks the scope.';
