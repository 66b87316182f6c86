-- jobctl.put_tenant: create or replace a tenant's settings, every field set (omitted ones to their
-- defaults); out-of-range values raise JC001 naming the field and write nothing. Tenants tap_tenant_*.
begin;
select plan(35);
\ir helpers.psql
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function(
    'jobctl', 'put_tenant', array['text', 'integer', 'bigint', 'integer', 'numeric', 'integer', 'numeric', 'integer', 'boolean'],
    'put_tenant(tenant_id, weight, max_pending, max_running, submit_rate, submit_burst, claim_rate, claim_burst) exists'
);
select function_returns(
    'jobctl', 'put_tenant', array['text', 'integer', 'bigint', 'integer', 'numeric', 'integer', 'numeric', 'integer', 'boolean'],
    'void', 'it returns void'
);

-- a tenant's settings as one row
create function pg_temp.settings(p_tenant_id text)
returns table (
    weight integer, max_pending bigint, max_running integer, submit_rate numeric, submit_burst integer,
    claim_rate numeric, claim_burst integer
)
language sql as $$
    select t.weight, t.max_pending, t.max_running, t.submit_rate, t.submit_burst, t.claim_rate, t.claim_burst
    from jobctl.tenant as t where t.tenant_id = p_tenant_id
$$;

-- every field
select lives_ok(
    $$select jobctl.put_tenant('tap_tenant_a', 5, 1000, 20, 50.5, 100, 2.25, 10)$$, 'put_tenant with every field'
);
select results_eq(
    $$select * from pg_temp.settings('tap_tenant_a')$$,
    $$values (5, 1000::bigint, 20, 50.5::numeric, 100, 2.25::numeric, 10)$$,
    'every field is stored'
);
select results_eq(
    $$select paused from jobctl.tenant where tenant_id = 'tap_tenant_a'$$, $$values (false)$$, 'a new tenant is not paused'
);

-- replace with only some fields: the others go back to their defaults
select lives_ok($$select jobctl.put_tenant('tap_tenant_a', max_running => 3)$$, 'put_tenant again with one field');
select results_eq(
    $$select * from pg_temp.settings('tap_tenant_a')$$,
    $$values (1, null::bigint, 3, null::numeric, null::integer, null::numeric, null::integer)$$,
    'omitted fields are reset to their defaults (weight 1, NULL = unlimited)'
);
select lives_ok($$select jobctl.put_tenant('tap_tenant_a')$$, 'put_tenant with the tenant_id alone');
select results_eq(
    $$select * from pg_temp.settings('tap_tenant_a')$$,
    $$values (1, null::bigint, null::integer, null::numeric, null::integer, null::numeric, null::integer)$$,
    'every setting is back to its default'
);
select results_eq(
    $$select count(*) from jobctl.tenant where tenant_id = 'tap_tenant_a'$$, $$values (1::bigint)$$,
    'still one row for the tenant'
);

-- boundaries accepted
select lives_ok(
    $$select jobctl.put_tenant('tap_tenant_b', 10000, 0, 0, 0.001, 1, 0.001, 1)$$,
    'weight 10000, limits 0, tiny rates and bursts of 1 are accepted'
);
select results_eq(
    $$select * from pg_temp.settings('tap_tenant_b')$$,
    $$values (10000, 0::bigint, 0, 0.001::numeric, 1, 0.001::numeric, 1)$$,
    'and stored'
);
select lives_ok($$select jobctl.put_tenant(repeat('t', 200))$$, 'a tenant_id of 200 characters is accepted');

-- out of range: JC001 naming the field; nothing written
select throws_ok(
    $$select jobctl.put_tenant(null)$$, 'JC001', 'tenant_id is out of range', 'NULL tenant_id: JC001'
);
select throws_ok($$select jobctl.put_tenant('')$$, 'JC001', 'tenant_id is out of range', 'empty tenant_id: JC001');
select throws_ok(
    $$select jobctl.put_tenant(repeat('t', 201))$$, 'JC001', 'tenant_id is out of range',
    'tenant_id over 200 characters: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', weight => 0)$$, 'JC001', 'weight is out of range', 'weight 0: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', weight => 10001)$$, 'JC001', 'weight is out of range',
    'weight 10001: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', weight => null)$$, 'JC001', 'weight is out of range',
    'weight NULL: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', max_pending => -1)$$, 'JC001', 'max_pending is out of range',
    'max_pending -1: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', max_running => -1)$$, 'JC001', 'max_running is out of range',
    'max_running -1: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', submit_rate => 0)$$, 'JC001', 'submit_rate is out of range',
    'submit_rate 0: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', submit_rate => -2.5)$$, 'JC001', 'submit_rate is out of range',
    'negative submit_rate: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', submit_burst => 0)$$, 'JC001', 'submit_burst is out of range',
    'submit_burst 0: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', claim_rate => 0)$$, 'JC001', 'claim_rate is out of range',
    'claim_rate 0: JC001'
);
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_c', claim_burst => 0)$$, 'JC001', 'claim_burst is out of range',
    'claim_burst 0: JC001'
);
select is(
    pg_temp.error_of($$select jobctl.put_tenant('tap_tenant_c', 1, 10, 10, 1, 1, 1, -5)$$),
    'JC001: claim_burst is out of range (field: claim_burst)',
    'the DETAIL names the field too'
);
select is(
    pg_temp.error_of($$select jobctl.put_tenant('tap_tenant_c', 0, -1)$$),
    'JC001: weight is out of range (field: weight)',
    'with several bad fields, the first one is named'
);
select is_empty($$select 1 from jobctl.tenant where tenant_id = 'tap_tenant_c'$$, 'a rejected put_tenant writes nothing');

-- a rejected replacement leaves the old settings
select lives_ok($$select jobctl.put_tenant('tap_tenant_d', 7, max_running => 4)$$, 'a tenant with weight 7');
select throws_ok(
    $$select jobctl.put_tenant('tap_tenant_d', 0, max_running => 9)$$, 'JC001', 'weight is out of range',
    'replacing it with weight 0: JC001'
);
select results_eq(
    $$select weight, max_running from pg_temp.settings('tap_tenant_d')$$,
    $$values (7, 4)$$,
    'the old settings stay'
);

-- a submit does not change the settings of a known tenant
select lives_ok($$select jobctl.submit_job('tap_tenant_d', 'tap_tenant_q', '{}')$$, 'the tenant submits a job');
select results_eq(
    $$select weight, max_running from pg_temp.settings('tap_tenant_d')$$,
    $$values (7, 4)$$,
    'its settings are unchanged'
);

select isnt(
    obj_description(
        'jobctl.put_tenant(text, integer, bigint, integer, numeric, integer, numeric, integer, boolean)'::regprocedure
    ),
    null,
    'put_tenant has a comment'
);

select * from finish();
rollback;
