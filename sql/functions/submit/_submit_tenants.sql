-- jobctl._submit_tenants: the "tenants" step of jobctl._submit: registers the call's unknown tenants
-- with the defaults (in key order, so two calls registering the same new tenants cannot deadlock),
-- refuses a tenant that moved off this shard (jobctl._refuse_moved: JC011), and says whether a
-- tenant of the call has a submit rate or max_pending (limited: jobctl._submit_limits) and, with
-- p_caller, whether one encrypts its payloads (sealing: jobctl._seal_specs; a schedule's run,
-- p_caller false, stores its payload as given).
-- Calls: _refuse_moved (a moved tenant). Locks: the tenant rows it inserts.
-- Writes: tenant (insert).
create or replace function jobctl._submit_tenants(
    p_specs jobctl._job_spec[], p_caller boolean, limited out boolean, sealing out boolean
)
language plpgsql
as $$
#variable_conflict use_column
declare
    v_moved text;  -- a tenant of the call that moved to another shard (jobctl._move_out_fence)
begin
    with known as (
        select t.tenant_id, t.submit_bucket, t.admitted, t.encrypt_payloads, t.moved_to from jobctl.tenant as t
        where t.tenant_id in (select s.tenant_id from unnest(p_specs) as s)
    ),
    registered as (
        insert into jobctl.tenant (tenant_id)
        select distinct s.tenant_id from unnest(p_specs) as s
        where s.tenant_id not in (select k.tenant_id from known as k)
        order by 1
        on conflict do nothing
    )
    select
        coalesce(bool_or(k.submit_bucket is not null or k.admitted is not null), false),
        coalesce(bool_or(k.encrypt_payloads), false) and p_caller,
        min(k.tenant_id) filter (where k.moved_to is not null)
    into limited, sealing, v_moved
    from known as k;
    if v_moved is not null then
        perform jobctl._refuse_moved(v_moved);
    end if;
end
$$;
