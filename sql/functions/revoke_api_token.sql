-- jobctl.revoke_api_token: revoke a token by its id (the number after jct_ in the token). Writes: _api_token.
create or replace function jobctl.revoke_api_token(token_id bigint)
returns boolean
language sql
as $$
    update jobctl._api_token as t set revoked_at = now()
    where t.token_id = revoke_api_token.token_id and t.revoked_at is null
    returning true
$$;

comment on function jobctl.revoke_api_token(bigint) is
'Revoke an API token by id (jct_<id>_...): requests with it get 401 from then on. Returns true, or NULL when no
active token has that id.';
