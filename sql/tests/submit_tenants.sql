-- jobctl._submit_tenants: the "tenants" step of jobctl._submit: unknown tenants registered with the
-- defaults, a moved tenant refused (JC011), and whether the call has limited or sealing tenants.
-- Tenants tap_st_*.
begin;
select plan(9);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', '_submit_tenants', array['jobctl._job_spec[]', 'boolean'], '_submit_tenants exists'
);

create function pg_temp.specs(variadic p_tenants text[]) returns jobctl._job_spec[]
language sql as $$
    select jobctl._job_specs(
        (select jsonb_agg(jsonb_build_object('tenant_id', t, 'queue', 'q', 'payload', '{}')) from unnest(p_tenants) as t),
        false
    )
$$;

select is(
    (
        select row(t.limited, t.sealing)::text
        from jobctl._submit_tenants(pg_temp.specs('tap_st_new1', 'tap_st_new2', 'tap_st_new1'), true) as t
    ),
    '(f,f)', 'new tenants: neither limited nor sealing'
);
select results_eq(
    $$select tenant_id, weight, max_pending, submit_rate, encrypt_payloads from jobctl.tenant
      where tenant_id like 'tap\_st\_new%' order by tenant_id$$,
    $$values ('tap_st_new1', 1, null::bigint, null::numeric, false), ('tap_st_new2', 1, null, null, false)$$,
    'each unknown tenant registered once, with the defaults'
);

select jobctl.put_tenant('tap_st_rate', submit_rate => 10);
select jobctl.put_tenant('tap_st_quota', max_pending => 10);
select is(
    (select t.limited from jobctl._submit_tenants(pg_temp.specs('tap_st_new1', 'tap_st_rate'), true) as t), true,
    'a tenant with a submit rate: limited'
);
select is(
    (select t.limited from jobctl._submit_tenants(pg_temp.specs('tap_st_quota'), true) as t), true,
    'a tenant with max_pending: limited'
);

select set_config('jobctl.payload_keys', '{"tap_st_sealed": "tap-st-key-0123456789abcdef"}', true);
select jobctl.put_tenant('tap_st_sealed', encrypt_payloads => true);
select is(
    (
        select row(t.limited, t.sealing)::text
        from jobctl._submit_tenants(pg_temp.specs('tap_st_new1', 'tap_st_sealed'), true) as t
    ),
    '(f,t)', 'a tenant that encrypts its payloads: sealing'
);
select is(
    (select t.sealing from jobctl._submit_tenants(pg_temp.specs('tap_st_sealed'), false) as t), false,
    'not for a schedule''s run (p_caller false): its payload is stored as given'
);

update jobctl.tenant set moved_to = 7
where tenant_id = 'tap_st_rate';
select is(
    pg_temp.error_of($$select jobctl._submit_tenants(pg_temp.specs('tap_st_new1', 'tap_st_rate'), true)$$),
    E'JC011: tenant tap_st_rate has moved to shard 7 (field: tenant_id\nretry_after: 1)',
    'a tenant that moved off this shard: JC011'
);
select is(
    pg_temp.error_of($$select jobctl._submit_tenants(pg_temp.specs('tap_st_new3', 'tap_st_rate'), true)$$)
    || ' / ' || (
        select count(*) from jobctl.tenant
        where tenant_id = 'tap_st_new3'
    ),
    E'JC011: tenant tap_st_rate has moved to shard 7 (field: tenant_id\nretry_after: 1) / 0',
    'and a new tenant of the refused call is not registered'
);

select * from finish();
rollback;
