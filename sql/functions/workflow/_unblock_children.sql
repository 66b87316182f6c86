-- jobctl._unblock_children: look at waiting jobs some of whose parents just ended (p_children) and
-- release those with no edge left: each becomes pending, due at once (run_at moved up to now) or at
-- its own later run_at, into _ready, _held (a concurrency key: jobctl._admit) or _delayed. A
-- batch's callback with no edge left ends its batch (jobctl._end_batches): the callbacks that fire
-- are released, the others cancelled. Whoever deletes the _waiting row releases the job, so each
-- is released once however many parents end at once.
-- A child whose edges this statement still sees may be waiting on a parent whose end is not
-- committed yet (two last parents ending at once each see the other's edge): with p_recheck, each
-- child whose every edge in sight is being deleted gets a _recheck row, and a later transaction
-- looks again (jobctl._recheck_waiting).
-- Writes: _waiting (delete), job (update), _ready, _held, _delayed, _recheck, _stat_delta, batch.
create or replace function jobctl._unblock_children(p_children bigint[], p_recheck boolean)
returns integer
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
set jit = off
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_batches bigint[];
    v_fire bigint[];
    v_skip bigint[];
    v_ids bigint[];
    v_cas timestamptz[];
    v_first timestamptz;
    v_last timestamptz;
    v_queues text[];
    v_key_tenants text[];
    v_keys text[];
begin
    -- batches whose last member ended: each ends once (the batch row's update), firing its callbacks
    select array_agg(distinct w.batch_id) into v_batches
    from jobctl._waiting as w
    where w.job_id = any(p_children) and w.batch_id is not null and jobctl._edge_left(w.job_id) is null;
    if v_batches is not null then
        select b.fire, b.skip into v_fire, v_skip from jobctl._end_batches(v_batches) as b;
        if v_skip is not null then
            perform jobctl._cancel_waiting(v_skip, 'not run: the batch ended otherwise (jobctl.get_batch)');
        end if;
    end if;

    with freed as (
        delete from jobctl._waiting as w
        where w.job_id = any(p_children || coalesce(v_fire, '{}'))
            and (w.job_id = any(v_fire) or (w.batch_id is null and jobctl._edge_left(w.job_id) is null))
        returning w.job_id, w.created_at, w.tenant_id, w.queue, w.priority, w.concurrency_key,
            greatest(w.run_at, v_now) as run_at
    ),
    to_ready as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        select f.queue, f.tenant_id, f.priority, f.run_at, f.job_id, f.created_at from freed as f
        where f.run_at <= v_now and f.concurrency_key is null
    ),
    to_held as (
        insert into jobctl._held (tenant_id, concurrency_key, run_at, job_id, created_at, queue, priority)
        select f.tenant_id, f.concurrency_key, f.run_at, f.job_id, f.created_at, f.queue, f.priority from freed as f
        where f.run_at <= v_now and f.concurrency_key is not null
    ),
    to_delayed as (
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority, concurrency_key)
        select f.run_at, f.job_id, f.created_at, f.queue, f.tenant_id, f.priority, f.concurrency_key from freed as f
        where f.run_at > v_now
    ),
    tally as (
        -- from waiting to pending (due) or delayed
        insert into jobctl._stat_delta (tenant_id, queue, waiting, pending, delayed)
        select f.tenant_id, f.queue, -count(*), count(*) filter (where f.run_at <= v_now),
            count(*) filter (where f.run_at > v_now)
        from freed as f
        group by f.tenant_id, f.queue
    )
    select array_agg(f.job_id), array_agg(f.created_at), min(f.created_at), max(f.created_at),
        array_agg(distinct f.queue) filter (where f.run_at <= v_now and f.concurrency_key is null),
        array_agg(f.tenant_id) filter (where f.run_at <= v_now and f.concurrency_key is not null),
        array_agg(f.concurrency_key) filter (where f.run_at <= v_now and f.concurrency_key is not null)
    into v_ids, v_cas, v_first, v_last, v_queues, v_key_tenants, v_keys
    from freed as f;

    if v_ids is not null then
        update jobctl.job as j
        set state = 'pending', run_at = greatest(j.run_at, v_now)
        where j.job_id = any(v_ids) and j.created_at = any(v_cas) and j.created_at between v_first and v_last;
        if v_keys is not null then
            perform jobctl._admit(v_key_tenants, v_keys);
        end if;
        if v_queues is not null then
            perform jobctl._notify(v_queues);
        end if;
    end if;
    if p_recheck then
        -- a child some of whose edges no transaction has touched (xmax 0: no deleter, committed or
        -- not) waits for those parents, whose own ends will look again; only a child whose every
        -- edge in sight is being deleted by someone needs a look after they commit
        insert into jobctl._recheck (child_id)
        select c.id from unnest(p_children) as c (id)
        where c.id <> all(coalesce(v_ids, '{}')) and c.id <> all(coalesce(v_skip, '{}'))
            and jobctl._edge_left(c.id, true) is null;
    end if;
    return coalesce(cardinality(v_ids), 0);
end
$$;
