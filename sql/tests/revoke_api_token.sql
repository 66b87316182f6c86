-- jobctl.revoke_api_token: true the first time, NULL after (or for an unknown id); a revoked token no
-- longer authenticates (JC020); other tokens are untouched. Tenant tap_revoke_t.
begin;
select plan(16);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'revoke_api_token', array['bigint'], 'revoke_api_token(token_id) exists');
select function_returns('jobctl', 'revoke_api_token', array['bigint'], 'boolean', 'it returns boolean');

-- two tokens of one tenant
create temp table tok as
select
    g.n,
    x.token,
    (regexp_match(x.token, '^jct_([0-9]+)_'))[1]::bigint as token_id
from generate_series(1, 2) as g (n)
cross join lateral jobctl.create_api_token('tap_revoke_t', array['jobs:read'], 'tap ' || g.n) as x (token);
-- token n, and its row in jobctl._api_token
create function pg_temp.tok(p_n integer) returns setof tok
language sql as $$
    select * from tok where n = p_n
$$;
create function pg_temp.row_of(p_n integer) returns setof jobctl._api_token
language sql as $$
    select t.* from tok inner join jobctl._api_token as t on tok.token_id = t.token_id where tok.n = p_n
$$;
-- how many tokens are revoked
create function pg_temp.n_revoked() returns bigint
language sql as $$
    select count(*) from jobctl._api_token where revoked_at is not null
$$;
select results_eq(
    $$select a.tenant_id from pg_temp.tok(1) as t cross join jobctl.authenticate(t.token, 'jobs:read') as a$$,
    $$values ('tap_revoke_t')$$,
    'token 1 authenticates before it is revoked'
);
create temp table revoked_before as
select pg_temp.n_revoked() as n;

select is((select jobctl.revoke_api_token(token_id) from pg_temp.tok(1)), true, 'revoke token 1: true');
select results_eq(
    $$select revoked_at from pg_temp.row_of(1)$$,
    $$values (now())$$,
    'its revoked_at is set'
);
select throws_ok(
    (select format('select * from jobctl.authenticate(%L, %L)', token, 'jobs:read') from pg_temp.tok(1)),
    'JC020', 'invalid or revoked API token', 'the revoked token: JC020'
);
select is((select jobctl.revoke_api_token(token_id) from pg_temp.tok(1)), null, 'revoking it again: NULL');
select results_eq(
    $$select revoked_at from pg_temp.row_of(1)$$,
    $$values (now())$$,
    'its revoked_at is kept'
);

-- the other token is untouched
select results_eq(
    $$select revoked_at from pg_temp.row_of(2)$$,
    $$values (null::timestamptz)$$,
    'token 2 is not revoked'
);
select results_eq(
    $$select a.token_id, a.tenant_id from pg_temp.tok(2) as t cross join jobctl.authenticate(t.token, 'jobs:read') as a$$,
    $$select token_id, 'tap_revoke_t' from pg_temp.tok(2)$$,
    'token 2 still authenticates'
);
-- (authenticate made the transaction act as token 2: back to the test's own login)
select set_config('jobctl.api_token', '', true);
select is(
    pg_temp.n_revoked() - (select n from revoked_before),
    1::bigint,
    'exactly one more token is revoked'
);

-- unknown and NULL ids revoke nothing
select is(jobctl.revoke_api_token(-1), null, 'an unknown id: NULL');
select throws_ok('select jobctl.revoke_api_token(null)', 'JC001', 'token_id must not be NULL', 'a NULL id: JC001');
select is(
    pg_temp.n_revoked() - (select n from revoked_before),
    1::bigint,
    'they revoked nothing'
);
select is(
    (
        select l.revoked_at
        from pg_temp.tok(1) as t inner join jobctl.list_api_tokens('tap_revoke_t') as l on t.token_id = l.token_id
    ),
    now(),
    'list_api_tokens shows the revocation'
);

select isnt(obj_description('jobctl.revoke_api_token(bigint)'::regprocedure), null, 'revoke_api_token has a comment');

select * from finish();
rollback;
