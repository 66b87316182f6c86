-- jobctl._payload_key: the caller's key for a tenant's payloads, from the session setting
-- jobctl.payload_keys (a JSON object, tenant id -> key), which the service sets from its own key
-- store on each connection; NULL when it holds none. Keys are never written to a table, and a
-- setting that is not JSON is refused without echoing it (a parse error would show its text).
create or replace function jobctl._payload_key(p_tenant text)
returns text
language plpgsql
stable
as $$
begin
    return nullif(current_setting('jobctl.payload_keys', true), '')::jsonb ->> p_tenant;
exception when invalid_text_representation then
    raise exception using errcode = 'JC008', message = 'jobctl.payload_keys must be a JSON object of tenant id -> key',
        detail = 'field: jobctl.payload_keys';
end
$$;
