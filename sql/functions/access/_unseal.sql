-- jobctl._unseal: a sealed payload (jobctl._seal) opened with the caller's key for its tenant; as
-- it is when the caller holds no key for it, or one that does not open it (a key rotated since the
-- job was sealed): its handler then fails that job alone, where an error would fail every job of the
-- claim, other tenants' too. The exception block (a subtransaction) only runs for sealed payloads
-- and writes nothing, so it takes no transaction ID.
do $$
begin
    execute format(
        $f$
        create or replace function jobctl._unseal(p_tenant text, p_payload jsonb)
        returns jsonb
        language plpgsql
        stable
        as $b$
        declare
            v_key text := jobctl._payload_key(p_tenant);
        begin
            if v_key is null then
                return p_payload;
            end if;
            return %1$I.pgp_sym_decrypt(decode(p_payload ->> '$jobctl_sealed', 'base64'), v_key)::jsonb;
        exception when external_routine_invocation_exception or invalid_parameter_value then
            return p_payload;
        end
        $b$
        $f$,
        (select e.extnamespace::regnamespace::text from pg_catalog.pg_extension as e where e.extname = 'pgcrypto')
    );
end
$$;
