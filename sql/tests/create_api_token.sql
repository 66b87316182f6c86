-- jobctl.create_api_token: returns 'jct_<id>_<64 hex>' once; only its SHA-256 is stored; scopes
-- stored sorted and distinct; NULL tenant = admin; bad tenant_id or scopes: JC001, nothing written.
-- Tenants tap_token_*.
begin;
select plan(33);
\ir helpers.psql
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function(
    'jobctl', 'create_api_token', array['text', 'text[]', 'text'], 'create_api_token(tenant_id, scopes, label) exists'
);
select function_returns('jobctl', 'create_api_token', array['text', 'text[]', 'text'], 'text', 'it returns text');

create temp table n0 as
select count(*) as n from jobctl._api_token;

-- a tenant token
create temp table t1 as
select
    x.token,
    (regexp_match(x.token, '^jct_([0-9]+)_'))[1]::bigint as token_id
from jobctl.create_api_token('tap_token_a', array['jobs:submit', 'jobs:read', 'jobs:submit'], 'ci') as x (token);
select matches((select token from t1), '^jct_[0-9]+_[0-9a-f]{64}$', 'the token is jct_<id>_<64 hex digits>');
select results_eq(
    $$select t.tenant_id, t.scopes, t.label, t.created_at, t.revoked_at
      from t1 inner join jobctl._api_token as t on t1.token_id = t.token_id$$,
    $$values ('tap_token_a', '{jobs:read,jobs:submit}'::text[], 'ci', now(), null::timestamptz)$$,
    'the row under the token''s id: tenant, scopes sorted and distinct, label, created now, not revoked'
);
select results_eq(
    $$select t.token_hash from t1 inner join jobctl._api_token as t on t1.token_id = t.token_id$$,
    $$select sha256(convert_to(token, 'UTF8')) from t1$$,
    'token_hash is the SHA-256 of the token'
);
select is_empty(
    $$select c.key
      from t1 inner join jobctl._api_token as t on t1.token_id = t.token_id
      cross join jsonb_each_text(to_jsonb(t)) as c (key, value)
      where
          strpos(c.value, t1.token) > 0
          or strpos(c.value, right(t1.token, 64)) > 0
          or strpos(c.value, right(t1.token, 32)) > 0$$,
    'neither the token nor its random part appears in any column of jobctl._api_token (listed: the columns)'
);
select is_empty(
    $$select a.attname from pg_attribute as a
      where a.attrelid = 'jobctl._api_token'::regclass and a.attnum > 0 and not a.attisdropped
        and a.attname not in ('token_id', 'tenant_id', 'scopes', 'token_hash', 'label', 'created_at', 'revoked_at')$$,
    'jobctl._api_token has no other column that could hold the token'
);
select is(
    (select count(*) from jobctl._api_token) - (select n from n0), 1::bigint, 'one row was written'
);

-- an admin token: tenant NULL; every scope accepted, in any order
create temp table t2 as
select
    x.token,
    (regexp_match(x.token, '^jct_([0-9]+)_'))[1]::bigint as token_id
from jobctl.create_api_token(null, array['jobs:submit', 'jobs:retry', 'jobs:read', 'jobs:cancel']) as x (token);
select matches((select token from t2), '^jct_[0-9]+_[0-9a-f]{64}$', 'an admin token has the same form');
select results_eq(
    $$select t.tenant_id, t.scopes, t.label from t2 inner join jobctl._api_token as t on t2.token_id = t.token_id$$,
    $$values (null::text, '{jobs:cancel,jobs:read,jobs:retry,jobs:submit}'::text[], null::text)$$,
    'NULL tenant_id: an admin token with all four scopes, sorted; no label'
);

-- two tokens differ in id, random part and hash
create temp table t3 as
select
    x.token,
    (regexp_match(x.token, '^jct_([0-9]+)_'))[1]::bigint as token_id
from jobctl.create_api_token('tap_token_a', array['jobs:submit', 'jobs:read', 'jobs:submit'], 'ci') as x (token);
select isnt((select token from t3), (select token from t1), 'the same arguments twice: two different tokens');
select isnt((select right(token, 64) from t3), (select right(token, 64) from t1), 'with different random parts');
select cmp_ok((select token_id from t3), '>', (select token_id from t1), 'and different (increasing) ids');
select is(
    (
        select count(distinct t.token_hash)
        from jobctl._api_token as t
        inner join (
            select t1.token_id from t1
            union all
            select t2.token_id from t2
            union all
            select t3.token_id from t3
        ) as x on t.token_id = x.token_id
    ),
    3::bigint,
    'three tokens, three hashes'
);

-- tenant_id
select lives_ok(
    $$select jobctl.create_api_token(repeat('t', 200), array['jobs:read'])$$, 'a tenant_id of 200 characters'
);
select throws_ok(
    $$select jobctl.create_api_token('', array['jobs:read'])$$,
    'JC001', 'tenant_id must be 1-200 characters, or NULL for an admin token', 'an empty tenant_id: JC001'
);
select throws_ok(
    $$select jobctl.create_api_token(repeat('t', 201), array['jobs:read'])$$,
    'JC001', 'tenant_id must be 1-200 characters, or NULL for an admin token', 'a tenant_id of 201 characters: JC001'
);
select is(
    pg_temp.error_of($$select jobctl.create_api_token('', array['jobs:read'])$$),
    'JC001: tenant_id must be 1-200 characters, or NULL for an admin token (field: tenant_id)',
    'its DETAIL names the field'
);

-- scopes
select throws_ok(
    $$select jobctl.create_api_token('tap_token_b', null)$$, 'JC001', 'scopes must name at least one scope',
    'NULL scopes: JC001'
);
select throws_ok(
    $$select jobctl.create_api_token('tap_token_b', '{}')$$, 'JC001', 'scopes must name at least one scope',
    'empty scopes: JC001'
);
select throws_ok(
    $$select jobctl.create_api_token('tap_token_b', array['jobs:read', 'jobs:purge'])$$,
    'JC001', 'scopes: unknown scope jobs:purge', 'an unknown scope: JC001 naming it'
);
select throws_ok(
    $$select jobctl.create_api_token('tap_token_b', array['JOBS:READ'])$$,
    'JC001', 'scopes: unknown scope JOBS:READ', 'scopes are case-sensitive'
);
select throws_ok(
    $$select jobctl.create_api_token('tap_token_b', array['jobs:read', null])$$,
    'JC001', 'scopes: unknown scope NULL', 'a NULL scope: JC001'
);
select throws_ok(
    $$select jobctl.create_api_token('tap_token_b', array['*'])$$,
    'JC001', 'scopes: unknown scope *', 'no wildcard scope'
);
select is(
    pg_temp.error_of($$select jobctl.create_api_token('tap_token_b', array['jobs:purge'])$$),
    'JC001: scopes: unknown scope jobs:purge (field: scopes)',
    'its DETAIL names the field'
);
select is(
    pg_temp.error_of($$select jobctl.create_api_token('tap_token_b', '{}')$$),
    'JC001: scopes must name at least one scope (field: scopes)',
    'so does the empty one''s'
);

select is(
    pg_temp.hint_of($$select jobctl.create_api_token('tap_token_b', array['jobs:purge'])$$),
    'Scopes: audit:read, events:emit, jobs:cancel, jobs:delete, jobs:read, jobs:retry, jobs:submit, queues:read, '
    'queues:write, schedules:read, schedules:write, tenants:read, tenants:write, workers:read.',
    'the HINT of an unknown scope lists the valid ones'
);

select is(
    (
        select count(*) from jobctl._api_token
        where tenant_id = 'tap_token_b' or tenant_id = ''
    ),
    0::bigint,
    'errors write nothing'
);
select is(
    (select count(*) from jobctl._api_token) - (select n from n0), 4::bigint,
    'four tokens were written in all'
);

-- each token authenticates as what it was made for
select results_eq(
    $$select a.token_id, a.tenant_id from t1 cross join jobctl.authenticate(t1.token, 'jobs:submit') as a$$,
    $$select token_id, 'tap_token_a' from t1$$,
    'the tenant token authenticates for its tenant'
);
select results_eq(
    $$select a.token_id, a.tenant_id from t2 cross join jobctl.authenticate(t2.token, 'jobs:cancel') as a$$,
    $$select token_id, null::text from t2$$,
    'the admin token authenticates as admin'
);

select is(
    jobctl._api_scopes(),
    array[
        'audit:read',
        'events:emit',
        'jobs:cancel',
        'jobs:delete',
        'jobs:read',
        'jobs:retry',
        'jobs:submit',
        'queues:read',
        'queues:write',
        'schedules:read',
        'schedules:write',
        'tenants:read',
        'tenants:write',
        'workers:read'
    ],
    'the fourteen scopes (jobs:delete and events:emit among them)'
);
select isnt(
    obj_description('jobctl.create_api_token(text, text[], text)'::regprocedure), null, 'create_api_token has a comment'
);

select * from finish();
rollback;
