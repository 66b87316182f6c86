-- 0007_tenant_pending_counters: max_pending counts each limited tenant's unfinished jobs without a
-- hot row. Immutable once landed: later changes go into a new numbered migration.
--
-- Two sequences per tenant with max_pending (made by jobctl.put_tenant): jobs admitted (new jobs
-- submitted, and retries) and jobs finished (completed, dead, cancelled). Unfinished = admitted -
-- finished + pending_offset, where the offset comes from an exact count (jobctl._recount_pending,
-- run by put_tenant and every minute by tick) and absorbs what rolled-back transactions counted.
alter table jobctl.tenant
add column admitted regclass,
add column finished regclass,
add column pending_offset bigint not null default 0;

-- tenants that already have max_pending get their counters now (jobctl._put_tenant_sequence's
-- name; the functions are installed after the migrations, so they cannot be called here); the
-- offset starts as the exact count, the counters at 0
do $$
declare
    v_tenant record;
    v_kind text;
begin
    for v_tenant in select t.tenant_id from jobctl.tenant as t where t.max_pending is not null loop
        foreach v_kind in array array['admitted', 'finished'] loop
            execute format(
                'create sequence jobctl.%I as bigint increment by 1 minvalue 0 start 1',
                format('_%s_%s', v_kind, substr(md5(v_tenant.tenant_id), 1, 20))
            );
            execute format(
                'update jobctl.tenant set %I = %L::regclass where tenant_id = %L', v_kind,
                format('jobctl.%I', format('_%s_%s', v_kind, substr(md5(v_tenant.tenant_id), 1, 20))), v_tenant.tenant_id
            );
        end loop;
        update jobctl.tenant as t
        set pending_offset = (select count(*) from jobctl._ready as r where r.tenant_id = t.tenant_id)
            + (select count(*) from jobctl._delayed as d where d.tenant_id = t.tenant_id)
            + (select count(*) from jobctl._running as u where u.tenant_id = t.tenant_id)
        where t.tenant_id = v_tenant.tenant_id;
    end loop;
end
$$;
