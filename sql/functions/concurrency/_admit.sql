-- jobctl._admit: admit the waiting jobs of the given concurrency keys (tenant, key pairs, parallel
-- arrays) while each key has room: its limit (jobctl.concurrency_limit, else the tenant's
-- key_max_running; none: unlimited) less its due and running jobs (_ready and _running rows).
-- The earliest waiting jobs (run_at, then job_id) move from _held to _ready, so a key with limit 1
-- runs its jobs one at a time in run_at order. Each key is locked first (the tenant's row lock,
-- jobctl._wait_lock: in bucket order, so two callers cannot deadlock), and counted in a later
-- statement, whose READ COMMITTED snapshot therefore sees what the lock's earlier holders
-- committed: the limit holds under any number of submitters, claimers and completers. Called wherever a keyed job becomes due
-- (it goes to _held first) or stops holding a place (completion, failure with a backoff, death,
-- cancellation), and when a limit is raised. Returns the number admitted.
-- Locks: the key lock on each key (jobctl._wait_lock). Writes: _held (delete), _ready (insert).
create or replace function jobctl._admit(p_tenants text[], p_keys text[])
returns integer
language plpgsql
set plan_cache_mode = force_generic_plan
set jit = off
as $$
declare
    v_queues text[];
    v_n integer;
begin
    perform jobctl._wait_lock('key', p_tenants, p_keys);
    with k as (
        select distinct u.tenant_id, u.concurrency_key from unnest(p_tenants, p_keys) as u (tenant_id, concurrency_key)
        where u.concurrency_key is not null
    ),
    room as (
        select k.tenant_id, k.concurrency_key,
            coalesce(coalesce(c.max_running, t.key_max_running)
                - (select count(*) from jobctl._ready as r where r.tenant_id = k.tenant_id and r.concurrency_key = k.concurrency_key)
                - (select count(*) from jobctl._running as r where r.tenant_id = k.tenant_id and r.concurrency_key = k.concurrency_key),
                1000000) as n
        from k
        inner join jobctl.tenant as t on t.tenant_id = k.tenant_id
        left join jobctl.concurrency_limit as c on c.tenant_id = k.tenant_id and c.concurrency_key = k.concurrency_key
    ),
    next_up as (
        select h.tenant_id, h.concurrency_key, h.run_at, h.job_id
        from room
        cross join lateral (
            select h.* from jobctl._held as h
            where h.tenant_id = room.tenant_id and h.concurrency_key = room.concurrency_key
            order by h.run_at, h.job_id
            limit greatest(room.n, 0)
        ) as h
    ),
    gone as (
        delete from jobctl._held as h
        using next_up as x
        where h.tenant_id = x.tenant_id and h.concurrency_key = x.concurrency_key and h.run_at = x.run_at
            and h.job_id = x.job_id
        returning h.*
    ),
    moved as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, concurrency_key)
        select g.queue, g.tenant_id, g.priority, g.run_at, g.job_id, g.created_at, g.concurrency_key from gone as g
        returning queue
    )
    select array_agg(distinct m.queue), count(*) into v_queues, v_n from moved as m;
    if v_n > 0 then
        perform jobctl._notify(v_queues);
    end if;
    return v_n;
end
$$;
