-- jobctl._move_in_keys: the target shard's record of the dedup keys the moving tenant's jobs still
-- hold on the source (p_keys, from jobctl._move_out_keys after the fence), kept in jobctl._move_key
-- until the move ends (jobctl._move_in_end), so that after the flip a repeat sent here answers the
-- job on the source (duplicate = true; the router routes its id there) instead of making a second
-- one. Replaces the tenant's earlier record (a rerun); a job already here is left out (the copy
-- brought it: its own row holds the key), and a row goes when the drain brings its job
-- (jobctl._move_in_jobs). Returns how many keys it recorded. Writes: _move_key.
create or replace function jobctl._move_in_keys(p_tenant_id text, p_keys jsonb)
returns integer
language plpgsql
as $$
declare
    v_n integer;
begin
    delete from jobctl._move_key as k where k.tenant_id = p_tenant_id;
    insert into jobctl._move_key (job_id, tenant_id, dedup_key, state, created_at)
    select k.job_id, p_tenant_id, k.dedup_key, k.state, k.created_at
    from jsonb_to_recordset(p_keys) as k (job_id bigint, dedup_key text, state text, created_at timestamptz)
    where not exists (select from jobctl.job as j where j.job_id = k.job_id and j.created_at = k.created_at)
    on conflict (job_id) do nothing;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;
