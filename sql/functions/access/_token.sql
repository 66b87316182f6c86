-- jobctl._token: the API token behind a bearer secret, if it has one of scopes (the first is the
-- one named in the error); raises otherwise. Reads: _api_token.
create or replace function jobctl._token(p_token text, p_scopes text[])
returns jobctl._api_token
language plpgsql
stable
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
declare
    v_token jobctl._api_token;
begin
    select * into v_token from jobctl._api_token as t
    where t.token_hash = sha256(convert_to(coalesce(p_token, ''), 'UTF8'));
    if not found or v_token.revoked_at is not null then
        raise exception using errcode = 'JC020', message = 'invalid or revoked API token',
            hint = 'Send Authorization: Bearer <token> with a token from jobctl token create.';
    end if;
    if not coalesce(p_scopes && v_token.scopes, false) then
        raise exception using errcode = 'JC021',
            message = format('this token may not %s', coalesce(p_scopes[1], 'NULL')),
            detail = format('token %s has scopes %s', v_token.token_id, array_to_string(v_token.scopes, ', '));
    end if;
    return v_token;
end
$$;
