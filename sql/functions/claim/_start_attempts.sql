-- jobctl._start_attempts: the second half of a claim. The caller has deleted these jobs' _ready
-- rows (so it owns them); each job becomes running with attempt + 1 and a new lease epoch, and its
-- lease goes into _running; the counters move them from pending to running, with their waits.
-- A statement of its own so that it alone runs with enable_seqscan off (docs/design.md §6).
-- Calls: _raise_epochs (after a crash, a restore or a promotion: the first call, when _epoch_guard is
-- empty), _stat_bucket, _unseal (a sealed payload).
-- Locks: the job rows (the update); through _raise_epochs _epoch_guard EXCLUSIVE.
-- Writes: job (HOT update), _running (insert), _stat_delta (insert), the sequence lease_epoch_seq;
-- through _raise_epochs _epoch_guard.
create or replace function jobctl._start_attempts(
    p_ids bigint[], p_cas timestamptz[], p_worker text, p_now timestamptz, p_lease interval
)
returns table (
    job_id bigint, tenant_id text, queue text, payload jsonb, priority integer, attempt integer,
    max_attempts integer, lease_epoch bigint, lease_expires_at timestamptz, timeout interval, traceparent text
)
language plpgsql  -- not sql: a SQL function would plan its statement on every call
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
as $$
#variable_conflict use_column
declare
    -- created_at bounds: variables, so the executor prunes partitions by them before it sets up
    -- the plan (it cannot prune by = any(array)); found by a loop of simple expressions, which
    -- plpgsql evaluates without starting an executor (a SELECT over unnest cost a statement)
    v_first timestamptz := p_cas[1];
    v_last timestamptz := p_cas[1];
    v_ca timestamptz;
begin
    -- no epoch is handed out while WAL may have been lost since the last raise (jobctl._raise_epochs)
    if not exists (select from jobctl._epoch_guard) then
        perform jobctl._raise_epochs();
    end if;
    foreach v_ca in array p_cas loop
        if v_ca < v_first then
            v_first := v_ca;
        elsif v_ca > v_last then
            v_last := v_ca;
        end if;
    end loop;
    return query
    with claimed as (
        update jobctl.job as j
        set state = 'running',
            attempt = j.attempt + 1,
            lease_epoch = nextval('jobctl.lease_epoch_seq'),
            worker_id = p_worker,
            started_at = p_now,
            finished_at = null
        where j.job_id = any(p_ids) and j.created_at = any(p_cas)
            and j.created_at between v_first and v_last
        returning j.job_id, j.created_at, j.tenant_id, j.queue, j.payload, j.priority, j.attempt,
            j.max_attempts, j.lease_epoch, j.timeout, j.concurrency_key, j.traceparent,
            greatest(extract(epoch from p_now - j.run_at), 0)::double precision as wait
    ),
    leased as (
        insert into jobctl._running (
            job_id, created_at, tenant_id, queue, attempt, lease_epoch, worker_id, started_at,
            lease_expires_at, deadline, concurrency_key
        )
        select c.job_id, c.created_at, c.tenant_id, c.queue, c.attempt, c.lease_epoch, p_worker, p_now,
            p_now + p_lease, p_now + c.timeout, c.concurrency_key
        from claimed as c
    ),
    tally as (
        insert into jobctl._stat_delta (tenant_id, queue, pending, running, claimed, wait_bucket, wait_seconds)
        select c.tenant_id, c.queue, -count(*), count(*), count(*), jobctl._stat_bucket(c.wait), sum(c.wait)
        from claimed as c
        group by 1, 2, 6
    )
    select c.job_id, c.tenant_id, c.queue,
        case when c.payload ? '$jobctl_sealed' then jobctl._unseal(c.tenant_id, c.payload) else c.payload end,
        c.priority::integer, c.attempt, c.max_attempts,
        c.lease_epoch, p_now + p_lease, c.timeout, c.traceparent
    from claimed as c;
end
$$;
