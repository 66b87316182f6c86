-- jobctl._count_finished: count jobs that reached a final state (completed, dead, cancelled), one
-- tenant id per job, on their tenants' max_pending counters (jobctl._pending); tenants without
-- max_pending are skipped. Writes: nothing transactional (nextval).
create or replace function jobctl._count_finished(p_tenant_ids text[])
returns void
language plpgsql
as $$
begin
    perform nextval(t.finished)
    from unnest(p_tenant_ids) as x (tenant_id)
    inner join jobctl.tenant as t on t.tenant_id = x.tenant_id
    where t.finished is not null;
end
$$;
