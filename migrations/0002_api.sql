-- 0002_api: API tokens for the HTTP API, and a results array for complete_jobs.
-- Immutable once landed: later changes go into a new numbered migration.

-- Bearer tokens. Only a SHA-256 of each token is kept; the token itself is shown once, by
-- jobctl.create_api_token. tenant_id NULL is an admin token (every tenant).
create table jobctl._api_token (
    token_id bigint generated always as identity primary key,
    tenant_id text,
    scopes text[] not null,
    token_hash bytea not null,
    label text,
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    constraint _api_token_hash_key unique (token_hash)
);

-- complete_jobs gains `results jsonb[] default null`; the two-argument form would be ambiguous beside it.
drop function if exists jobctl.complete_jobs(bigint[], bigint[]);
