-- jobctl._payload_key: the caller's key for a tenant's payloads, from the session setting
-- jobctl.payload_keys (a JSON object, tenant id -> key), which the service sets from its own key
-- store on each connection; NULL when it holds none. Keys are never written to a table.
create or replace function jobctl._payload_key(p_tenant text)
returns text
language sql
stable
as $$
    select nullif(current_setting('jobctl.payload_keys', true), '')::jsonb ->> p_tenant
$$;
