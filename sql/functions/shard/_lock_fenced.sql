-- jobctl._lock_fenced: the first step of a hand-over to the target once a move's fence has committed
-- (jobctl._move_out_keys: the dedup keys; _move_out_events: the events): refuse a move that is not
-- fenced yet (JC010), then lock every one of the tenant's p_buckets rows p_name of _tenant_lock, in
-- order. A call that took one of those locks before the fence committed (a keyed submit, an emit) has
-- committed by the time this returns, and one that takes it later finds the fence after its lock and
-- is refused (JC011). Locks: the tenant's p_buckets rows p_name of _tenant_lock, to the end of the
-- caller's transaction. Writes: _tenant_lock (insert, first use only).
create or replace function jobctl._lock_fenced(p_tenant_id text, p_name text, p_buckets integer)
returns void
language plpgsql
as $$
begin
    if not exists (
        select from jobctl._tenant_move as m
        where m.tenant_id = p_tenant_id and m.finished_at is null and m.fenced_at is not null
    ) then
        raise exception using errcode = 'JC010',
            message = format('tenant %s has no fenced move off this shard', p_tenant_id),
            detail = 'field: tenant_id', hint = 'Fence its submits first (jobctl._move_out_fence): run the move again.';
    end if;
    insert into jobctl._tenant_lock (tenant_id, name, bucket)
    select p_tenant_id, p_name, b.bucket from generate_series(0, p_buckets - 1) as b (bucket)
    order by b.bucket
    on conflict do nothing;
    perform from jobctl._tenant_lock as l
    where l.tenant_id = p_tenant_id and l.name = p_name
    order by l.bucket
    for update of l;
end
$$;
