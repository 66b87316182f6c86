-- jobctl._move_out_keys: the dedup keys the tenant's jobs still hold on this (source) shard once its
-- submits are fenced (jobctl._move_out_fence): the keys of its unfinished jobs here (running, pending,
-- failed, waiting), for jobctl._move_in_keys on the target before the router flips, so that a repeat
-- sent there answers the job here. Every dedup bucket of the tenant (jobctl._wait_lock) is locked
-- first: a keyed submit that passed the fence check before the fence committed has committed its job
-- by then, and one that comes later finds the fence after its own lock (jobctl._submit) and is
-- refused (JC011), so no job with a key the target was not given lands here after this call. Refuses
-- a move that is not fenced yet (JC010). Returns [{job_id, dedup_key, state, created_at}].
-- Calls: _lock_fenced. Locks: the tenant's 256 dedup rows of _tenant_lock.
-- Writes: _tenant_lock (insert, first use only).
create or replace function jobctl._move_out_keys(p_tenant_id text)
returns jsonb
language plpgsql
as $$
begin
    perform jobctl._lock_fenced(p_tenant_id, 'dedup', 256);
    -- unfinished jobs are those with a row in a queue table, _running or _waiting (the copy has taken
    -- the rest): found from there, not by walking the tenant's finished history
    return coalesce((
        select jsonb_agg(jsonb_build_object(
            'job_id', j.job_id, 'dedup_key', j.dedup_key, 'state', j.state, 'created_at', j.created_at
        ) order by j.job_id)
        from jobctl.job as j
        where j.tenant_id = p_tenant_id and j.dedup_key is not null and j.job_id in (
            select r.job_id from jobctl._running as r where r.tenant_id = p_tenant_id
            union all
            select r.job_id from jobctl._ready as r where r.tenant_id = p_tenant_id
            union all
            select h.job_id from jobctl._held as h where h.tenant_id = p_tenant_id
            union all
            select d.job_id from jobctl._delayed as d where d.tenant_id = p_tenant_id
            union all
            select w.job_id from jobctl._waiting as w where w.tenant_id = p_tenant_id
        ) and j.state not in ('completed', 'dead', 'cancelled')
    ), '[]');
end
$$;
