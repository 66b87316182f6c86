-- jobctl._seal: a payload encrypted with a tenant's key, as the envelope {"$jobctl_sealed": base64
-- of an OpenPGP message (AES-256; s2k-mode 1, a salted key hash: the keys are random, not
-- passwords, and the iterated mode would cost milliseconds a job)}. Made here, not in a plain
-- file, because pgcrypto's schema is known only at install time.
do $$
begin
    execute format(
        $f$
        create or replace function jobctl._seal(p_payload jsonb, p_key text)
        returns jsonb
        language sql
        volatile  -- a random salt and IV each call
        as $b$
            select jsonb_build_object('$jobctl_sealed', encode(
                %1$I.pgp_sym_encrypt(p_payload::text, p_key, 'cipher-algo=aes256, s2k-mode=1'), 'base64'
            ))
        $b$
        $f$,
        (select e.extnamespace::regnamespace::text from pg_catalog.pg_extension as e where e.extname = 'pgcrypto')
    );
end
$$;
