-- jobctl._key_check: what put_tenant records of a tenant's payload key, so that a submit sealing
-- with another key is refused: a SHA-256 of the key, which is random (docs/security.md) and so
-- cannot be guessed back from it; NULL for NULL.
create or replace function jobctl._key_check(p_key text)
returns text
language sql
immutable
as $$
    select encode(sha256(convert_to('jobctl payload key:' || p_key, 'UTF8')), 'hex')
$$;
