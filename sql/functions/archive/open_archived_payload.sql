-- jobctl.open_archived_payload: a payload read from the object archive's files,
-- opened with the caller's key for its tenant (jobctl._unseal: the session's jobctl.payload_keys) as
-- get_job opens a sealed payload in the database; as it is when it is not sealed, or the caller
-- holds no key that opens it. Only for the caller's tenants. Reads nothing.
create or replace function jobctl.open_archived_payload(tenant_id text, payload jsonb)
returns jsonb
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_variable
begin
    perform jobctl._require_tenant(tenant_id, 'jobs:read');
    if payload ? '$jobctl_sealed' then
        return jobctl._unseal(tenant_id, payload);
    end if;
    return payload;
end
$$;

comment on function jobctl.open_archived_payload(text, jsonb) is
'A payload read from an object-archive file (a sealed envelope {"$jobctl_sealed": ...} stays sealed in
the files, as in the database), opened with the caller''s key for tenant_id (the session setting
jobctl.payload_keys) as get_job opens one; unchanged when not sealed or when no key of the caller opens it. The
clients'' get_job fallback calls it for a sealed archived payload.
Errors: 42501 another tenant, JC008 jobctl.payload_keys is not JSON.
Example:
select jobctl.open_archived_payload(''acme'', ''{"$jobctl_sealed": "ww0EBwMC..."}'');';
