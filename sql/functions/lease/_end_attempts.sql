-- jobctl._end_attempts: the failure path shared by fail_job and the reaper. The caller has already
-- deleted the jobs' _running rows (that deletion is what makes it the one to end these attempts)
-- and passes what they held. Each job becomes failed (a retry queued after its backoff, or at
-- once when p_now_due) or dead (no attempts left, or not retryable). Records the attempt's
-- claim and its end in _event, and p_traceback as the job's last_traceback (NULL: none). A job
-- with a concurrency key keeps its place while it is due at once, and gives it up (jobctl._admit
-- lets the key's next job in) when it waits for its backoff or dies. The counters move them from
-- running to pending, retrying or dead, with their run times.
-- Calls: _backoff_delay, _stat_bucket; for jobs that died _count_finished, _parents_ended,
-- _notify_watchers; for keys given up _admit.
-- Locks: the job rows (the update); through _admit the key lock on each key (_tenant_lock rows,
-- waited for); through _parents_ended the edges and rows of the dead jobs' children it unblocks or
-- cancels.
-- Writes: job (update), _event, _ready or _delayed, _stat_delta (insert). For jobs that died:
-- _watcher (delete, _notify_watchers), the tenants' finished sequences (_count_finished), _edge
-- (delete) and the children's _waiting, job, _event, queue tables, _recheck and batch rows
-- (_parents_ended). Through _admit _held (delete), _ready (insert) and _tenant_lock (a lock row's
-- first use).
create or replace function jobctl._end_attempts(
    p_ended jsonb,          -- [{job_id, created_at, attempt, lease_epoch, worker_id, started_at, progress}]
    p_error text,
    p_retryable boolean,
    p_now_due boolean,
    p_traceback text default null  -- fail_job's, bounded there (the reaper has none)
)
returns table (job_id bigint, state text)
language plpgsql
set enable_seqscan = off  -- the job update stays an index probe per hot partition: docs/design.md §6
set jit = off  -- a generic plan's estimates at depth pass jit_above_cost, and JIT compiles per call (~14 ms)
as $$
#variable_conflict use_column
declare
    v_now timestamptz := clock_timestamp();
    v_ids bigint[];
    v_cas timestamptz[];
    v_first timestamptz;  -- created_at bounds: the executor prunes partitions by them (not by = any)
    v_last timestamptz;
    v_states text[];
    v_dead text[];  -- the tenants of the jobs that died, for max_pending
    v_key_tenants text[];  -- the keys whose jobs gave up their place
    v_keys text[];
    v_progress jsonb;  -- {job_id: progress} of the attempts that reported one
begin
    -- = any(array) probes the primary key per job; the bounds prune the partitions
    select array_agg(e.job_id), array_agg(e.created_at), min(e.created_at), max(e.created_at),
        jsonb_object_agg(e.job_id::text, e.progress) filter (where e.progress is not null)
    into v_ids, v_cas, v_first, v_last, v_progress
    from jsonb_to_recordset(p_ended) as e (job_id bigint, created_at timestamptz, progress jsonb);
    with ended as (
        select * from jsonb_to_recordset(p_ended) as e (
            job_id bigint, created_at timestamptz, attempt integer, lease_epoch bigint, worker_id text,
            started_at timestamptz
        )
    ),
    changed as (
        update jobctl.job as j
        set state = case when p_retryable and j.attempt < j.max_attempts then 'failed' else 'dead' end,
            run_at = case
                when not p_retryable or j.attempt >= j.max_attempts then j.run_at
                when p_now_due then v_now
                else v_now + jobctl._backoff_delay(j.backoff, j.attempt)
            end,
            finished_at = case when p_retryable and j.attempt < j.max_attempts then null else v_now end,
            last_error = p_error,
            last_traceback = p_traceback,
            progress = v_progress -> j.job_id::text  -- the attempt's last, kept by the job
        where j.job_id = any(v_ids) and j.created_at = any(v_cas) and j.created_at between v_first and v_last
        returning j.job_id, j.created_at, j.state, j.run_at, j.queue, j.tenant_id, j.priority, j.concurrency_key
    ),
    history as (
        insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id, detail)
        select e.job_id, e.created_at, e.started_at, 'claimed', e.attempt, e.lease_epoch, e.worker_id, null
        from ended as e
        union all
        select e.job_id, e.created_at, v_now, c.state, e.attempt, e.lease_epoch, e.worker_id, p_error
        from ended as e join changed as c on c.job_id = e.job_id
    ),
    now_due as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, concurrency_key)
        select c.queue, c.tenant_id, c.priority, c.run_at, c.job_id, c.created_at, c.concurrency_key
        from changed as c where c.state = 'failed' and c.run_at <= v_now
    ),
    later as (
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority, concurrency_key, retry)
        select c.run_at, c.job_id, c.created_at, c.queue, c.tenant_id, c.priority, c.concurrency_key, true
        from changed as c where c.state = 'failed' and c.run_at > v_now
    ),
    tally as (
        insert into jobctl._stat_delta (
            tenant_id, queue, running, pending, retrying, dead, failed, died, run_bucket, run_seconds
        )
        select c.tenant_id, c.queue, -count(*),
            count(*) filter (where c.state = 'failed' and c.run_at <= v_now),
            count(*) filter (where c.state = 'failed' and c.run_at > v_now),
            count(*) filter (where c.state = 'dead'), count(*), count(*) filter (where c.state = 'dead'),
            jobctl._stat_bucket(x.run), sum(x.run)
        from changed as c
        inner join ended as e on e.job_id = c.job_id
        cross join lateral (select greatest(extract(epoch from v_now - e.started_at), 0)::double precision as run) as x
        group by c.tenant_id, c.queue, 9
    )
    select array_agg(c.job_id), array_agg(c.state), array_agg(c.tenant_id) filter (where c.state = 'dead'),
        array_agg(c.tenant_id) filter (where c.concurrency_key is not null and (c.state = 'dead' or c.run_at > v_now)),
        array_agg(c.concurrency_key) filter (where c.concurrency_key is not null and (c.state = 'dead' or c.run_at > v_now))
    into v_ids, v_states, v_dead, v_key_tenants, v_keys
    from changed as c;
    if v_dead is not null then
        perform jobctl._count_finished(v_dead);
        -- the jobs waiting on the dead ones follow their policy (docs/workflows.md)
        perform jobctl._parents_ended(array(
            select u.id from unnest(v_ids, v_states) as u (id, state) where u.state = 'dead'
        ));
        perform jobctl._notify_watchers(array(
            select u.job_id from unnest(v_ids, v_states) as u (job_id, state) where u.state = 'dead'
        ));
    end if;
    if v_keys is not null then
        perform jobctl._admit(v_key_tenants, v_keys);
    end if;
    return query select u.job_id, u.state from unnest(v_ids, v_states) as u (job_id, state);
end
$$;
