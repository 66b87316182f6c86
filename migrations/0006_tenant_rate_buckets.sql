-- 0006_tenant_rate_buckets: each rate-limited tenant's submit and claim token buckets.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- A bucket is a sequence (created by jobctl.put_tenant) holding its theoretical arrival time
-- (GCRA) in microseconds, its increment one token's cost: taking n tokens is n nextval calls. A sequence is not
-- MVCC: taking tokens leaves no dead tuple and updates no row, so 10,000 submits a second for one
-- tenant do not queue on a row lock, and an old snapshot held open does not slow them down.
alter table jobctl.tenant
add column submit_bucket regclass,
add column claim_bucket regclass;

-- tenants that already have rates get their buckets now (jobctl._put_tenant_sequence's name and cost; the
-- functions are installed after the migrations, so they cannot be called here)
do $$
declare
    v_rate record;
    v_name text;
begin
    for v_rate in
        select t.tenant_id, k.kind, k.rate
        from jobctl.tenant as t
        cross join lateral (values ('submit', t.submit_rate), ('claim', t.claim_rate)) as k (kind, rate)
        where k.rate is not null
    loop
        v_name := format('_%s_bucket_%s', v_rate.kind, substr(md5(v_rate.tenant_id), 1, 20));
        execute format(
            'create sequence jobctl.%I as bigint increment by %s minvalue 0 start 0', v_name, ceil(1000000 / v_rate.rate)
        );
        execute format(
            'update jobctl.tenant set %I = %L::regclass where tenant_id = %L',
            v_rate.kind || '_bucket', format('jobctl.%I', v_name), v_rate.tenant_id
        );
    end loop;
end
$$;
