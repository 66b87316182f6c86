-- What a caller may see, asked of the database (jobctl.caller_access: the
-- dashboard's tabs), and a refusal for what every tenant shares names what is missing (acting for
-- every tenant), not a scope the token holds. Tenants tap_ca_*.
begin;
select plan(8);
set local jit = off;

create temp table tok as
select
    x.n,
    jobctl.create_api_token(x.tenant_id, x.scopes, 'tap') as token
from (
    values
    (1, 'tap_ca_a', jobctl._api_scopes()),
    (2, null, jobctl._api_scopes()),
    (3, 'tap_ca_a', '{jobs:read,schedules:read}'::text[])
) as x (n, tenant_id, scopes);
create function pg_temp.as_token(p_n integer) returns void
language sql as $$
    select set_config('jobctl.api_token', coalesce((select t.token from tok as t where t.n = p_n), ''), true)
$$;
-- the message of the error a statement raises
create function pg_temp.err(p_sql text) returns text
language plpgsql as $$
begin
    execute p_sql;
    return null;
exception when others then
    return sqlerrm;
end
$$;

select pg_temp.as_token(1);
select results_eq(
    $$select area, allowed, missing from jobctl.caller_access()$$,
    $$values ('jobs', true, null::text), ('queues', false, 'acting for every tenant'), ('tenants', true, null),
        ('schedules', true, null), ('workers', false, 'acting for every tenant'), ('audit', true, null)$$,
    'a tenant''s token with every scope: not the queues nor the workers (shared by every tenant)'
);
select throws_like(
    $$select * from jobctl.list_queues()$$,
    'the list of queues is shared by every tenant: only a caller acting for every tenant may list or change it, '
    || 'and this one acts for tenant tap_ca_a only',
    'list_queues'' refusal names what is missing: acting for every tenant'
);
select throws_like(
    $$select * from jobctl.list_workers()$$, '%acting for every tenant%', 'so does list_workers'''
);
select unalike(
    pg_temp.err('select * from jobctl.list_queues()'), '%queues:read%',
    'and no longer names queues:read, a scope the token holds'
);
select pg_temp.as_token(2);
select results_eq(
    $$select bool_and(allowed), count(*) from jobctl.caller_access()$$,
    $$values (true, 6::bigint)$$,
    'an admin token with every scope: every area'
);
select pg_temp.as_token(3);
select results_eq(
    $$select area, allowed, missing from jobctl.caller_access()$$,
    $$values ('jobs', true, null::text), ('queues', false, 'the scope queues:read'),
        ('tenants', false, 'the scope tenants:read'), ('schedules', true, null),
        ('workers', false, 'the scope workers:read'), ('audit', false, 'the scope audit:read')$$,
    'a reader''s token: what its scopes cover'
);
select results_eq(
    $$select count(*) from jobctl.list_schedules()$$, $$values (0::bigint)$$,
    'and the transaction goes on after the refusals caller_access caught'
);
select pg_temp.as_token(null);
select ok((select bool_and(allowed) from jobctl.caller_access()), 'the schema owner: every area');

select * from finish();
rollback;
