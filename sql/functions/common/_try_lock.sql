-- jobctl._try_lock: take the row lock p_name (for p_key: its bucket, jobctl._lock_bucket; NULL: the
-- singleton) for the rest of the transaction if no other transaction holds it; true if taken (or
-- already held by this one). Never waits. Only the schema owner can lock jobctl._lock's rows, so
-- no other login can hold jobctl's locks (docs/security.md, Locks).
-- Locks: the jobctl._lock row.
create or replace function jobctl._try_lock(p_name text, p_key text default null)
returns boolean
language plpgsql
as $$
begin
    perform from jobctl._lock as l
    where l.name = p_name and l.bucket = jobctl._lock_bucket(p_name, p_key)
    for update skip locked;
    return found;
end
$$;
