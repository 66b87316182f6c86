-- jobctl._lock_bucket: the bucket that locks p_key under the lock p_name: a hash of the key modulo
-- the name's bucket count, 0 for a singleton (p_key NULL). In jobctl._lock, the rows the schema
-- made (sql/tests/locks.sql checks that the two agree); in jobctl._tenant_lock (dedup, key), a
-- tenant's, made on first use. Immutable SQL: inlined where it is used.
create or replace function jobctl._lock_bucket(p_name text, p_key text)
returns integer
language sql
immutable
parallel safe
as $$
    select case when p_key is null then 0 else hashtext(p_key) & case p_name
        when 'dedup' then 255
        when 'key' then 16383
        when 'lanes' then 1023
        else 4095  -- hint; watcher and watchers (a tenant's rows of _tenant_lock: jobctl.watch_job)
    end end
$$;
