-- 0016_payload_encryption: tenants may have their payloads encrypted at rest (docs/security.md).
-- Immutable once landed: later changes go into a new numbered migration.
--
-- pgcrypto wherever it is already installed (jobctl._seal and _unseal look its schema up), else in
-- a schema of its own, so that its functions are not on anyone's search_path by accident.
do $$
begin
    if not exists (select from pg_catalog.pg_extension as e where e.extname = 'pgcrypto') then
        create schema if not exists jobctl_crypto;
        create extension pgcrypto schema jobctl_crypto;
    end if;
end
$$;

alter table jobctl.tenant add column encrypt_payloads boolean not null default false;
-- jobctl._key_check of the key put_tenant was given: submits sealing with another are refused
alter table jobctl.tenant add column payload_key_check text;

-- put_tenant gains encrypt_payloads; _submit whether the submit is the caller's (schedule runs are not)
drop function if exists jobctl.put_tenant(text, integer, bigint, integer, numeric, integer, numeric, integer);
drop function if exists jobctl._submit(jobctl._job_spec[], boolean);
drop function if exists jobctl.list_tenants();  -- it shows encrypt_payloads too
