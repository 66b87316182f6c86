-- jobctl.create_api_token: make a bearer token for the HTTP API and return it (the only time it is
-- shown: only its SHA-256 is stored). Writes: _api_token.
create or replace function jobctl.create_api_token(tenant_id text, scopes text[], label text default null)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_bad text;
    v_id bigint;
    v_token text;
begin
    if tenant_id = '' or length(tenant_id) > 200 then
        raise exception using errcode = 'JC001', message = 'tenant_id must be 1-200 characters, or NULL for an admin token',
            detail = 'field: tenant_id';
    end if;
    if length(label) > 200 then
        raise exception using errcode = 'JC001', message = 'label must be at most 200 characters', detail = 'field: label';
    end if;
    if scopes is null or cardinality(scopes) = 0 then
        raise exception using errcode = 'JC001', message = 'scopes must name at least one scope',
            detail = 'field: scopes', hint = 'Scopes: ' || array_to_string(jobctl._api_scopes(), ', ') || '.';
    end if;
    select s into v_bad from unnest(scopes) as s where s is null or s <> all(jobctl._api_scopes()) limit 1;
    if found then
        raise exception using errcode = 'JC001', message = format('scopes: unknown scope %s', coalesce(v_bad, 'NULL')),
            detail = 'field: scopes', hint = 'Scopes: ' || array_to_string(jobctl._api_scopes(), ', ') || '.';
    end if;
    v_id := nextval(pg_get_serial_sequence('jobctl._api_token', 'token_id'));
    -- 244 random bits from two version-4 UUIDs (pg_strong_random); the id makes a token revocable by name
    v_token := format('jct_%s_%s%s', v_id, replace(gen_random_uuid()::text, '-', ''), replace(gen_random_uuid()::text, '-', ''));
    insert into jobctl._api_token (token_id, tenant_id, scopes, token_hash, label)
    overriding system value
    values (v_id, tenant_id, array(select distinct s from unnest(scopes) as s order by 1), sha256(convert_to(v_token, 'UTF8')), label);
    perform jobctl._audit('create_api_token', tenant_id, jsonb_build_object('new_token_id', v_id, 'scopes', scopes, 'label', label));
    return v_token;
end
$$;

comment on function jobctl.create_api_token(text, text[], text) is
'Create a bearer token for the HTTP API, scoped to tenant_id (NULL: an admin token for every
tenant) and to the given scopes (jobs:read, jobs:submit, jobs:cancel, jobs:retry, jobs:delete, schedules:read, schedules:write,
queues:read, queues:write).
Returns the token; only its SHA-256 is stored, so it cannot be shown again. Audited.
Errors: JC001 a bad tenant_id, an empty or unknown scope, or a label over 200 characters.
Example:
select jobctl.create_api_token(''acme'', array[''jobs:read'', ''jobs:submit''], label => ''billing'');';
