-- jobctl.list_api_tokens: the tokens of one tenant, or all (NULL), ordered by id; never the token
-- or its hash. Tenants tap_tokens_a, tap_tokens_b.
begin;
select plan(12);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'list_api_tokens', array['text'], 'list_api_tokens(tenant_id) exists');
select function_returns('jobctl', 'list_api_tokens', array['text'], 'setof record', 'it returns a set of rows');

-- two tokens of tenant a, one of tenant b, one admin token
create temp table tok as
select
    x.n,
    x.tenant_id,
    x.scopes,
    x.label,
    t.token,
    (regexp_match(t.token, '^jct_([0-9]+)_'))[1]::bigint as token_id
from (
    values
    (1, 'tap_tokens_a', '{jobs:submit,jobs:read}'::text[], 'deploy'),
    (2, 'tap_tokens_a', '{jobs:read}', null),
    (3, 'tap_tokens_b', '{jobs:cancel}', 'b'),
    (4, null, '{jobs:retry}', 'tap admin')
) as x (n, tenant_id, scopes, label)
cross join lateral jobctl.create_api_token(x.tenant_id, x.scopes, x.label) as t (token);
select is(
    (select jobctl.revoke_api_token(t.token_id) from tok as t inner join (values (2)) as v (n) on t.n = v.n), true,
    'token 2 is revoked'
);

select results_eq(
    $$select token_id, tenant_id, scopes, label, created_at, revoked_at from jobctl.list_api_tokens('tap_tokens_a')$$,
    $$select token_id, 'tap_tokens_a', '{jobs:read,jobs:submit}'::text[], 'deploy', now(), null::timestamptz
      from tok where n = 1
      union all
      select token_id, 'tap_tokens_a', '{jobs:read}', null, now(), now() from tok where n = 2$$,
    'one tenant''s tokens, ordered by id: id, tenant, sorted scopes, label, created_at, revoked_at (revoked ones too)'
);
select results_eq(
    $$select token_id from jobctl.list_api_tokens('tap_tokens_b')$$,
    $$select token_id from tok where n = 3$$,
    'the other tenant''s token'
);
select is_empty($$select * from jobctl.list_api_tokens('tap_tokens_none')$$, 'a tenant without tokens: no rows');

select results_eq(
    $$select l.token_id, l.tenant_id from jobctl.list_api_tokens(null) as l inner join tok on l.token_id = tok.token_id$$,
    $$select token_id, tenant_id from tok order by token_id$$,
    'NULL: every token, admin tokens (tenant NULL) included, ordered by id'
);
select results_eq(
    $$select count(*) from jobctl.list_api_tokens()$$, $$select count(*) from jobctl._api_token$$,
    'the default lists all of jobctl._api_token'
);
select ok(
    (
        select coalesce(bool_and(x.token_id < x.next_id), true)
        from (
            select
                l.token_id,
                lead(l.token_id) over (order by l.ord) as next_id
            from jobctl.list_api_tokens() with ordinality as l (token_id, tenant_id, scopes, label, created_at, revoked_at, ord)
        ) as x
    ),
    'ordered by token_id'
);

-- never the token or its hash
select is_empty(
    $$select a.name
      from pg_proc as p
      cross join lateral unnest(p.proargnames, p.proargmodes) as a (name, mode)
      where p.oid = 'jobctl.list_api_tokens(text)'::regprocedure and a.mode = 't' and a.name ~ 'hash|^token$|secret'$$,
    'no output column is named like a token or a hash (listed)'
);
select is_empty(
    $$select t
      from pg_proc as p
      cross join lateral unnest(p.proallargtypes) as t
      where p.oid = 'jobctl.list_api_tokens(text)'::regprocedure and t = 'bytea'::regtype$$,
    'no output column is bytea'
);
select is_empty(
    $$select tok.n, c.key
      from jobctl.list_api_tokens() as l
      inner join tok on l.token_id = tok.token_id
      inner join jobctl._api_token as t on l.token_id = t.token_id
      cross join jsonb_each_text(to_jsonb(l)) as c (key, value)
      where
          strpos(c.value, tok.token) > 0
          or strpos(c.value, right(tok.token, 64)) > 0
          or strpos(c.value, encode(t.token_hash, 'hex')) > 0$$,
    'no listed value holds a token, its random part or its hash (listed: the token and column)'
);

select * from finish();
rollback;
