-- jobctl.authenticate: (token_id, tenant_id) of a valid token that holds the scope; admin tokens
-- have tenant NULL. Unknown, NULL or revoked token: JC020; a scope the token lacks: JC021.
-- Tenant tap_auth_t.
begin;
select plan(27);
\ir helpers.psql
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'authenticate', array['text', 'text'], 'authenticate(token, scope) exists');
select function_returns('jobctl', 'authenticate', array['text', 'text'], 'setof record', 'it returns a row');

-- authenticate a token for a scope, as SQL text for throws_ok / error_of
create function pg_temp.auth_sql(p_token text, p_scope text) returns text
language sql as $$
    select format('select * from jobctl.authenticate(%L, %L)', p_token, p_scope)
$$;

create temp table tok as
select
    x.n,
    t.token,
    (regexp_match(t.token, '^jct_([0-9]+)_'))[1]::bigint as token_id
from (
    values
    (1, 'tap_auth_t', '{jobs:read,jobs:submit}'::text[]),
    (2, null, '{jobs:read,jobs:cancel,jobs:retry,jobs:submit}'),
    (3, 'tap_auth_t', '{jobs:read}')
) as x (n, tenant_id, scopes)
cross join lateral jobctl.create_api_token(x.tenant_id, x.scopes) as t (token);
-- token n
create function pg_temp.tok(p_n integer) returns setof tok
language sql as $$
    select * from tok where n = p_n
$$;

-- valid
select results_eq(
    $$select a.token_id, a.tenant_id from pg_temp.tok(1) as t cross join jobctl.authenticate(t.token, 'jobs:read') as a$$,
    $$select token_id, 'tap_auth_t' from pg_temp.tok(1)$$,
    'a tenant token with a scope it holds: its id and tenant'
);
select results_eq(
    $$select a.token_id, a.tenant_id from pg_temp.tok(1) as t cross join jobctl.authenticate(t.token, 'jobs:submit') as a$$,
    $$select token_id, 'tap_auth_t' from pg_temp.tok(1)$$,
    'and with its other scope'
);
select results_eq(
    $$select a.token_id, a.tenant_id from pg_temp.tok(2) as t cross join jobctl.authenticate(t.token, 'jobs:cancel') as a$$,
    $$select token_id, null::text from pg_temp.tok(2)$$,
    'an admin token: its id and tenant NULL'
);
select results_eq(
    $$select a.token_id from pg_temp.tok(3) as t cross join jobctl.authenticate(t.token, 'jobs:read') as a$$,
    $$select token_id from pg_temp.tok(3)$$,
    'each token authenticates as itself (same tenant, another id)'
);

-- scopes the token lacks: JC021
select throws_ok(
    (select pg_temp.auth_sql(token, 'jobs:cancel') from pg_temp.tok(1)),
    'JC021', 'this token may not jobs:cancel', 'a scope the token lacks: JC021'
);
select is(
    (select pg_temp.error_of(pg_temp.auth_sql(token, 'jobs:submit')) from pg_temp.tok(3)),
    (select format('JC021: this token may not jobs:submit (token %s has scopes jobs:read)', token_id) from pg_temp.tok(3)),
    'its DETAIL names the token and its scopes'
);
select throws_ok(
    (select pg_temp.auth_sql(token, 'jobs:delete') from pg_temp.tok(2)),
    'JC021', 'this token may not jobs:delete', 'a scope that does not exist: JC021, even for an admin token'
);
select throws_ok(
    (select pg_temp.auth_sql(token, 'JOBS:READ') from pg_temp.tok(1)),
    'JC021', 'this token may not JOBS:READ', 'scopes are case-sensitive'
);
select throws_ok(
    (select pg_temp.auth_sql(token, '') from pg_temp.tok(2)),
    'JC021', null, 'an empty scope: JC021'
);
-- `not scope = any(scopes)` is NULL for a NULL scope: the check must not fail open
select matches(
    (select pg_temp.error_of(pg_temp.auth_sql(token, null)) from pg_temp.tok(2)),
    '^(JC021|JC001): ',
    'a NULL scope is refused (JC021 or JC001), not granted'
);

-- invalid tokens: JC020
select throws_ok(
    pg_temp.auth_sql('jct_1_' || repeat('0', 64), 'jobs:read'), 'JC020', 'invalid or revoked API token',
    'an unknown token of the right form: JC020'
);
select throws_ok(
    pg_temp.auth_sql(null, 'jobs:read'), 'JC020', 'invalid or revoked API token', 'a NULL token: JC020'
);
select throws_ok(
    pg_temp.auth_sql('', 'jobs:read'), 'JC020', 'invalid or revoked API token', 'an empty token: JC020'
);
select throws_ok(
    (select pg_temp.auth_sql(upper(token), 'jobs:read') from pg_temp.tok(1)),
    'JC020', 'invalid or revoked API token', 'the token in upper case: JC020'
);
select throws_ok(
    (select pg_temp.auth_sql(token || ' ', 'jobs:read') from pg_temp.tok(1)),
    'JC020', 'invalid or revoked API token', 'the token with a trailing space: JC020'
);
select throws_ok(
    (select pg_temp.auth_sql(left(token, -1), 'jobs:read') from pg_temp.tok(1)),
    'JC020', 'invalid or revoked API token', 'the token cut short: JC020'
);
select throws_ok(
    (
        select pg_temp.auth_sql(format('jct_%s_%s', t3.token_id, right(t1.token, 64)), 'jobs:read')
        from pg_temp.tok(1) as t1 cross join pg_temp.tok(3) as t3
    ),
    'JC020', 'invalid or revoked API token', 'one token''s random part under another''s id: JC020'
);
select throws_ok(
    (
        select pg_temp.auth_sql(encode(a.token_hash, 'hex'), 'jobs:read')
        from pg_temp.tok(1) as t inner join jobctl._api_token as a on t.token_id = a.token_id
    ),
    'JC020', 'invalid or revoked API token', 'the stored hash is not a token: JC020'
);
select throws_ok(
    pg_temp.auth_sql('jct_1_' || repeat('0', 64), null), 'JC020', 'invalid or revoked API token',
    'an unknown token with a NULL scope: JC020'
);

-- revoked: JC020, before any scope check
select is((select jobctl.revoke_api_token(token_id) from pg_temp.tok(1)), true, 'token 1 is revoked');
select throws_ok(
    (select pg_temp.auth_sql(token, 'jobs:read') from pg_temp.tok(1)),
    'JC020', 'invalid or revoked API token', 'the revoked token with a scope it holds: JC020'
);
select throws_ok(
    (select pg_temp.auth_sql(token, 'jobs:cancel') from pg_temp.tok(1)),
    'JC020', 'invalid or revoked API token', 'the revoked token with a scope it lacks: JC020 (not JC021)'
);
select results_eq(
    $$select a.tenant_id from pg_temp.tok(3) as t cross join jobctl.authenticate(t.token, 'jobs:read') as a$$,
    $$values ('tap_auth_t')$$,
    'the tenant''s other token still authenticates'
);

select matches(
    pg_temp.hint_of(pg_temp.auth_sql('nope', 'jobs:read')), 'Authorization: Bearer', 'the JC020 HINT names the header'
);

select isnt(obj_description('jobctl.authenticate(text, text)'::regprocedure), null, 'authenticate has a comment');

select * from finish();
rollback;
