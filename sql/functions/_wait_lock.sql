-- jobctl._wait_lock: take the row locks p_name for every key of p_keys (their buckets,
-- jobctl._lock_bucket) for the rest of the transaction, waiting for other holders. Buckets are
-- locked in order, so two callers cannot deadlock; a call holds at most the name's bucket count.
-- Locks: jobctl._lock rows.
create or replace function jobctl._wait_lock(p_name text, p_keys text[])
returns void
language plpgsql
as $$
begin
    perform from jobctl._lock as l
    where l.name = p_name
        and l.bucket = any(array(select jobctl._lock_bucket(p_name, k.key) from unnest(p_keys) as k (key)))
    order by l.bucket
    for update;
end
$$;
