-- jobctl._recount_pending: set each max_pending tenant's pending_offset (one tenant, or NULL: all)
-- so that admitted - finished + offset is its exact number of unfinished jobs: the rows it has in
-- _ready, _held (waiting for a concurrency key's place), _delayed, _running and _waiting (children
-- waiting for their parents), counted in one pass: every job a submit admitted until it finishes.
-- Transactions in flight while it counts may leave the result off by their jobs until the next
-- recount (tick: every minute). Writes: tenant,
-- only the rows whose offset changed (a tenant row it updates stays locked until the caller commits,
-- and jobctl._cap skips a locked tenant row: tick recounts last, just before it commits).
create or replace function jobctl._recount_pending(p_tenant_id text)
returns void
language plpgsql
as $$
begin
    if not exists (select from jobctl.tenant as t where t.admitted is not null) then
        return;  -- no tenant has max_pending: tick must not scan _ready for nothing
    end if;
    with limited as (
        select t.tenant_id from jobctl.tenant as t
        where t.admitted is not null and (p_tenant_id is null or t.tenant_id = p_tenant_id)
    ),
    unfinished as (
        select x.tenant_id, count(*) as n
        from (
            select r.tenant_id from jobctl._ready as r
            union all
            select h.tenant_id from jobctl._held as h
            union all
            select d.tenant_id from jobctl._delayed as d
            union all
            select u.tenant_id from jobctl._running as u
            union all
            select w.tenant_id from jobctl._waiting as w
        ) as x
        where x.tenant_id in (select l.tenant_id from limited as l)
        group by x.tenant_id
    ),
    recounted as (
        select t.tenant_id,
            coalesce((select u.n from unfinished as u where u.tenant_id = t.tenant_id), 0)
            - (coalesce(pg_sequence_last_value(t.admitted), 0) - coalesce(pg_sequence_last_value(t.finished), 0))
            as pending_offset
        from jobctl.tenant as t
        where t.tenant_id in (select l.tenant_id from limited as l)
    )
    update jobctl.tenant as t
    set pending_offset = r.pending_offset
    from recounted as r
    where t.tenant_id = r.tenant_id and t.pending_offset is distinct from r.pending_offset;
end
$$;
