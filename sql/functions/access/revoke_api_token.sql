-- jobctl.revoke_api_token: revoke a token by its id (the number after jct_ in the token). Writes: _api_token.
create or replace function jobctl.revoke_api_token(token_id bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_tenant text;
begin
    if revoke_api_token.token_id is null then
        raise exception using errcode = 'JC001', message = 'token_id must not be NULL', detail = 'field: token_id';
    end if;
    update jobctl._api_token as t set revoked_at = now()
    where t.token_id = revoke_api_token.token_id and t.revoked_at is null
    returning t.tenant_id into v_tenant;
    if not found then
        return null;
    end if;
    perform jobctl._audit('revoke_api_token', v_tenant, jsonb_build_object('revoked_token_id', revoke_api_token.token_id));
    return true;
end
$$;

comment on function jobctl.revoke_api_token(bigint) is
'Revoke an API token by id (the <id> of jct_<id>_...): requests with it get 401 from then
on, also in transactions already open. Returns true, or NULL when no active token has that id. Audited.
Errors: JC001 NULL token_id.
Example:
select jobctl.revoke_api_token(3);';
