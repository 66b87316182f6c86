-- jobctl._move_out_events: the events the moving tenant has emitted on this (source) shard, once its
-- fence has committed (jobctl._move_out_fence), for jobctl._move_in_events on the target before the
-- router flips. Every event lock of the tenant (jobctl._wait_lock 'event', 4,096 buckets) is taken
-- first: an emit that passed its fence check before the fence committed has committed by then, and
-- one that comes later finds the fence after its own lock (jobctl.emit_event) and is refused
-- (JC011), so no event the target was not given is recorded here after this call. Refuses a move
-- that is not fenced yet (JC010). Returns [{tenant_id, event, emitted_at, payload}].
-- Calls: _lock_fenced. Locks: the tenant's 4,096 event rows of _tenant_lock.
-- Writes: _tenant_lock (insert, first use only).
create or replace function jobctl._move_out_events(p_tenant_id text)
returns jsonb
language plpgsql
as $$
begin
    perform jobctl._lock_fenced(p_tenant_id, 'event', 4096);
    return coalesce((
        select jsonb_agg(to_jsonb(e) order by e.event) from jobctl._emitted as e where e.tenant_id = p_tenant_id
    ), '[]');
end
$$;
