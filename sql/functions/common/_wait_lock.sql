-- jobctl._wait_lock: take the tenants' row locks p_name (dedup or key) for each (tenant, key) of
-- the parallel arrays p_tenants and p_keys (NULL keys are skipped) for the rest of the
-- transaction, waiting for other holders, who are the same tenant's. The rows of
-- jobctl._tenant_lock are made on first use; buckets are locked in order, so two callers cannot
-- deadlock. Locks: jobctl._tenant_lock rows. Writes: _tenant_lock (insert, first use only).
create or replace function jobctl._wait_lock(p_name text, p_tenants text[], p_keys text[])
returns void
language plpgsql
as $$
begin
    insert into jobctl._tenant_lock (tenant_id, name, bucket)
    select distinct u.tenant_id, p_name, jobctl._lock_bucket(p_name, u.key)
    from unnest(p_tenants, p_keys) as u (tenant_id, key)
    where u.key is not null
    order by 1, 3
    on conflict do nothing;
    perform from jobctl._tenant_lock as l
    where l.name = p_name
        and (l.tenant_id, l.bucket) in (
            select u.tenant_id, jobctl._lock_bucket(p_name, u.key)
            from unnest(p_tenants, p_keys) as u (tenant_id, key)
            where u.key is not null
        )
    order by l.tenant_id, l.bucket
    for update of l;
end
$$;
