-- jobctl._submit_limits: the "limits" step of jobctl._submit: the new jobs of a call fit each
-- tenant's max_pending (JC004) and submit rate (JC005; more than the burst: JC001), or nothing is
-- taken. Concurrent submitters: tests/test_tenant_limits.py. Tenants tap_sl_*.
begin;
select plan(8);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', '_submit_limits', array['jobctl._job_spec[]'], '_submit_limits exists');

create function pg_temp.specs(variadic p_tenants text[]) returns jobctl._job_spec[]
language sql as $$
    select jobctl._job_specs(
        (select jsonb_agg(jsonb_build_object('tenant_id', t, 'queue', 'q', 'payload', '{}')) from unnest(p_tenants) as t),
        false
    )
$$;
create function pg_temp.pending(p_tenant text) returns bigint
language sql as $$
    select jobctl._pending(t) from jobctl.tenant as t where t.tenant_id = p_tenant
$$;

select jobctl.put_tenant('tap_sl_quota', max_pending => 3);
select jobctl.put_tenant('tap_sl_rate', submit_rate => 0.001, submit_burst => 2);
select jobctl.put_tenant('tap_sl_free');

select lives_ok(
    $$select jobctl._submit_limits(pg_temp.specs('tap_sl_quota', 'tap_sl_quota', 'tap_sl_free'))$$,
    'two new jobs of a tenant with max_pending 3: taken'
);
select is(pg_temp.pending('tap_sl_quota'), 2::bigint, 'and counted as pending');
select is(
    pg_temp.error_of($$select jobctl._submit_limits(pg_temp.specs('tap_sl_quota', 'tap_sl_quota'))$$),
    'JC004: tenant tap_sl_quota is over its max_pending (2 unfinished + 2 new > 3)'
    || E' (field: tenant_id\npending: 2\nretry_after: 1)',
    'two more: JC004 naming the counts'
);
select is(
    pg_temp.error_of($$select jobctl._submit_limits(pg_temp.specs('tap_sl_rate', 'tap_sl_rate', 'tap_sl_rate'))$$),
    'JC001: 3 new jobs for tenant tap_sl_rate are more than its submit burst (field: jobs)',
    'more jobs than the submit burst: JC001'
);

-- a call refused for one tenant takes nothing from the others
select is(
    pg_temp.error_of($$select jobctl._submit_limits(pg_temp.specs('tap_sl_rate', 'tap_sl_quota', 'tap_sl_quota'))$$),
    'JC004: tenant tap_sl_quota is over its max_pending (2 unfinished + 2 new > 3)'
    || E' (field: tenant_id\npending: 2\nretry_after: 1)',
    'a call over one tenant''s max_pending is refused'
);
select lives_ok(
    $$select jobctl._submit_limits(pg_temp.specs('tap_sl_rate', 'tap_sl_rate'))$$,
    'and the other tenant''s bucket is whole: its burst of 2 is taken'
);
select matches(
    pg_temp.error_of($$select jobctl._submit_limits(pg_temp.specs('tap_sl_rate'))$$),
    E'^JC005: tenant tap_sl_rate is over its submit rate \\(0\\.001 a second\\) \\(field: tenant_id\nretry_after: [0-9.]+\\)$',
    'the bucket empty: JC005 with retry_after'
);

select * from finish();
rollback;
