-- jobctl._promote_due: move delayed jobs whose run_at has come from _delayed to _ready, oldest
-- first, at most p_limit (a job with a concurrency key to _held, and jobctl._admit lets it in while
-- its key has room). Rows another session is promoting are skipped, never waited for.
-- The counters move them from delayed or retrying to pending. Returns the number made due.
-- Calls: _notify (when jobs went to _ready), _admit (when some have a concurrency key).
-- Locks: _delayed rows FOR UPDATE SKIP LOCKED; through _admit the key lock on each key
-- (_tenant_lock rows, waited for); _notify's try-locks hint-busy and hint on each queue.
-- Writes: _delayed (delete), _ready, _held and _stat_delta (insert); through _admit _held (delete),
-- _ready (insert) and _tenant_lock (a lock row's first use).
create or replace function jobctl._promote_due(p_limit integer default 10000)
returns integer
language plpgsql
as $$
declare
    v_queues text[];
    v_count integer;
    v_key_tenants text[];  -- the jobs with a concurrency key: they wait for a place (jobctl._admit)
    v_keys text[];
begin
    with due as (
        delete from jobctl._delayed as d
        where d.ctid = any(array(
            select x.ctid from jobctl._delayed as x
            where x.run_at <= (select clock_timestamp())  -- a bound of the index scan, not a filter
            order by x.run_at, x.job_id
            limit p_limit
            for update skip locked
        ))
        returning d.*
    ),
    moved as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        select due.queue, due.tenant_id, due.priority, due.run_at, due.job_id, due.created_at from due
        where due.concurrency_key is null
        returning queue
    ),
    waiting as (
        insert into jobctl._held (tenant_id, concurrency_key, run_at, job_id, created_at, queue, priority)
        select due.tenant_id, due.concurrency_key, due.run_at, due.job_id, due.created_at, due.queue, due.priority from due
        where due.concurrency_key is not null
        returning tenant_id, concurrency_key
    ),
    tally as (
        insert into jobctl._stat_delta (tenant_id, queue, pending, delayed, retrying)
        select due.tenant_id, due.queue, count(*), -count(*) filter (where not due.retry), -count(*) filter (where due.retry)
        from due
        group by due.tenant_id, due.queue
    )
    select (select array_agg(distinct m.queue) from moved as m), (select count(*) from moved),
        (select array_agg(w.tenant_id) from waiting as w), (select array_agg(w.concurrency_key) from waiting as w)
    into v_queues, v_count, v_key_tenants, v_keys;
    if v_count > 0 then
        perform jobctl._notify(v_queues);
    end if;
    if v_keys is not null then
        v_count := v_count + jobctl._admit(v_key_tenants, v_keys);
    end if;
    return v_count;
end
$$;
