-- jobctl.list_tenants: every tenant with its settings, ordered by tenant_id; put_tenant'ed tenants
-- with theirs, tenants first seen in a submit with the defaults. Tenants tap_tenants_*.
begin;
select plan(11);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'list_tenants', array[]::text[], 'list_tenants() exists');
select function_returns('jobctl', 'list_tenants', array[]::text[], 'setof record', 'it returns a set of rows');

-- c by put_tenant, then a by a submit, then b by put_tenant (so insertion order is not name order)
do $do$
begin
    perform jobctl.put_tenant('tap_tenants_c', 5, 1000, 20, 50.5, 100, 2.25, 10);
    perform jobctl.submit_job('tap_tenants_a', 'tap_tenants_q', '{}');
    perform jobctl.put_tenant('tap_tenants_b', max_running => 3);
end
$do$;

select results_eq(
    $$select tenant_id, weight, max_pending, max_running, submit_rate, submit_burst, claim_rate, claim_burst, paused,
          created_at, updated_at
      from jobctl.list_tenants() where tenant_id like 'tap\_tenants\_%'$$,
    $$values
      ('tap_tenants_a', 1, null::bigint, null::integer, null::numeric, null::integer, null::numeric, null::integer,
          false, now(), now()),
      ('tap_tenants_b', 1, null, 3, null, null, null, null, false, now(), now()),
      ('tap_tenants_c', 5, 1000, 20, 50.5, 100, 2.25, 10, false, now(), now())$$,
    'the three tenants in tenant_id order: put_tenant''s settings, and the defaults for the one a submit registered'
);

-- put_tenant again: the list shows the new settings
do $do$
begin
    perform jobctl.put_tenant('tap_tenants_c', 2);
end
$do$;
select results_eq(
    $$select weight, max_pending, max_running, claim_rate from jobctl.list_tenants() where tenant_id = 'tap_tenants_c'$$,
    $$values (2, null::bigint, null::integer, null::numeric)$$,
    'after put_tenant again: the replaced settings'
);

-- a paused tenant says so
update jobctl.tenant set paused = true
where tenant_id = 'tap_tenants_b';
select results_eq(
    $$select paused from jobctl.list_tenants() where tenant_id = 'tap_tenants_b'$$, $$values (true)$$,
    'paused is shown'
);

-- all of jobctl.tenant, one row each, in tenant_id order
select results_eq(
    $$select tenant_id from jobctl.list_tenants()$$,
    $$select tenant_id from jobctl.tenant order by tenant_id$$,
    'every tenant of jobctl.tenant, ordered by tenant_id'
);
select is(
    (select count(distinct tenant_id) from jobctl.list_tenants()), (select count(*) from jobctl.tenant),
    'one row per tenant'
);
do $do$
begin
    perform jobctl.submit_job('tap_tenants_a', 'tap_tenants_q', '{}');
    perform jobctl.submit_job('tap_tenants_c', 'tap_tenants_q', '{}');
end
$do$;
select is(
    (
        select count(*) from jobctl.list_tenants()
        where tenant_id like 'tap\_tenants\_%'
    ),
    3::bigint,
    'submits for known tenants register no new row'
);
select is(
    (
        select weight from jobctl.list_tenants()
        where tenant_id = 'tap_tenants_c'
    ),
    2,
    'and leave their settings alone'
);
select is_empty(
    $$select * from jobctl.list_tenants() where tenant_id = 'tap_tenants_never'$$, 'an unseen tenant is not listed'
);

select isnt(obj_description('jobctl.list_tenants()'::regprocedure), null, 'list_tenants has a comment');

select * from finish();
rollback;
