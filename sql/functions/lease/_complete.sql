-- jobctl._complete: complete the jobs running under the given epochs (of the caller's tenants);
-- the rest are fenced.
-- A completed job with a concurrency key gives its place to the key's next job (jobctl._admit), and
-- its children whose last parent it was are released (its edges deleted, jobctl._unblock_children).
-- The counters move the completed jobs from running to completed, with their run times, and count
-- the fenced acks of the caller's tenants' jobs.
-- Calls: _too_deep (results), _acting_tenants, _stat_bucket, _count_finished, _notify_watchers; _admit
-- for jobs with a concurrency key, _unblock_children to unblock children left without an edge.
-- Locks: the _running rows, then the job rows, and the completed jobs' _edge rows (deletes and an
-- update); through _admit the key lock on each key (_tenant_lock rows, waited for); through
-- _unblock_children the children's _waiting and job rows (and batch rows, a batch's last member).
-- Writes: _running (delete), job (update), _edge (delete), _stat_delta (insert); the tenants'
-- finished sequences (_count_finished); _watcher (delete, _notify_watchers); through _admit _held
-- (delete), _ready (insert) and _tenant_lock (a lock row's first use); through _unblock_children
-- _waiting (delete), job (update), _ready, _held, _delayed, _recheck, _stat_delta (insert), batch
-- (update), and for a batch's callbacks that do not fire jobctl._cancel_waiting's writes.
create or replace function jobctl._complete(p_ids bigint[], p_epochs bigint[], p_results jsonb[])
returns table (job_id bigint, completed boolean)
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
set enable_seqscan = off
set jit = off  -- a generic plan's estimates at depth pass jit_above_cost, and JIT compiles per call (~14 ms)
as $$
#variable_conflict use_column
declare
    v_now timestamptz := clock_timestamp();
    v_bad record;
    v_ids bigint[];
    v_epochs bigint[];
    v_cas timestamptz[];
    v_first timestamptz;  -- created_at bounds: the executor prunes partitions by them (not by = any)
    v_last timestamptz;
    v_results jsonb;  -- {job_id: result} of the completed jobs that carry one
    v_progress jsonb;  -- {job_id: progress} of the completed jobs whose attempt reported one
    v_tenants text[];  -- the completed jobs' tenants, for max_pending
    v_keys text[];     -- parallel to v_tenants: the jobs' concurrency keys (NULL: none)
    v_children bigint[];  -- the jobs that waited on the completed ones
begin
    if p_ids is null or p_epochs is null or cardinality(p_ids) <> cardinality(p_epochs)
       or cardinality(p_results) <> cardinality(p_ids) then
        raise exception using errcode = 'JC001',
            message = 'job_ids, lease_epochs (and results, when given) must be arrays of the same length';
    end if;
    -- a result is read back by get_job, the API and the next attempt's tools: bounded like a payload
    select a.job_id, pg_catalog.pg_column_size(a.result) > 1048576 as big into v_bad
    from unnest(p_ids, p_results) as a (job_id, result)
    where a.result is not null and (pg_catalog.pg_column_size(a.result) > 1048576 or jobctl._too_deep(a.result))
    limit 1;
    if found then
        raise exception using errcode = 'JC001',
            message = format('the result of job %s %s', v_bad.job_id,
                case when v_bad.big then 'is over 1 MiB' else 'is nested more than 100 levels deep' end),
            detail = 'field: result',
            hint = 'Nothing was completed; store a smaller or flatter result, or fail the job.';
    end if;
    with arg as (
        select * from unnest(p_ids, p_epochs, p_results) as a (job_id, lease_epoch, result)
    ),
    gone as (
        delete from jobctl._running as r
        using arg as a
        where r.job_id = a.job_id and r.lease_epoch = a.lease_epoch
            -- another tenant's job is fenced like an unknown one
            and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]))
        returning r.job_id, r.lease_epoch, r.created_at, r.tenant_id, r.queue, r.concurrency_key, a.result, r.progress,
            greatest(extract(epoch from v_now - r.started_at), 0)::double precision as run
    ),
    tally as (
        insert into jobctl._stat_delta (tenant_id, queue, running, completed, succeeded, run_bucket, run_seconds)
        select g.tenant_id, g.queue, -count(*), count(*), count(*), jobctl._stat_bucket(g.run), sum(g.run)
        from gone as g
        group by 1, 2, 6
    ),
    unlinked as (
        -- the completed jobs' edges to the jobs waiting on them (docs/workflows.md): an index probe a
        -- job, nothing found for jobs without children
        delete from jobctl._edge as e
        where e.parent_id in (select g.job_id from gone as g)
        returning e.child_id
    )
    select array_agg(g.job_id), array_agg(g.lease_epoch), array_agg(g.created_at),
        min(g.created_at), max(g.created_at),
        jsonb_object_agg(g.job_id::text, g.result) filter (where g.result is not null),
        array_agg(g.tenant_id), array_agg(g.concurrency_key),
        jsonb_object_agg(g.job_id::text, g.progress) filter (where g.progress is not null),
        (select array_agg(distinct u.child_id) from unlinked as u)
    into v_ids, v_epochs, v_cas, v_first, v_last, v_results, v_tenants, v_keys, v_progress, v_children
    from gone as g;

    -- No join with the results: a generic plan makes it a nested loop over both arrays (1,000 jobs:
    -- 107 ms instead of a few). Results are looked up by id in one jsonb object instead.
    if v_ids is not null then
        update jobctl.job as j
        set state = 'completed', finished_at = v_now, result = v_results -> j.job_id::text, last_error = null, last_traceback = null,
            progress = v_progress -> j.job_id::text  -- the attempt's last, kept by the job
        where j.job_id = any(v_ids) and j.created_at = any(v_cas) and j.created_at between v_first and v_last;
        perform jobctl._count_finished(v_tenants);
        perform jobctl._notify_watchers(v_ids);  -- wakes the jobs' watchers, if any (watch_job)
        if cardinality(array_remove(v_keys, null)) > 0 then
            perform jobctl._admit(v_tenants, v_keys);
        end if;
        -- the children whose last parent this was are released (docs/workflows.md)
        if v_children is not null then
            perform jobctl._unblock_children(v_children, true);
        end if;
    end if;

    if cardinality(v_ids) = cardinality(p_ids) then
        -- as many rows left _running as pairs came, so every pair completed (none fenced)
        return query select a.job_id, true from unnest(p_ids) as a (job_id);
        return;
    end if;
    -- the fenced acks, counted on their jobs' tenants and queues (the caller's tenants only: acks
    -- of other tenants' jobs must not move their counters)
    insert into jobctl._stat_delta (tenant_id, queue, fenced)
    select j.tenant_id, j.queue, count(*)
    from jobctl.job as j
    where j.job_id = any(array(select a.job_id from unnest(p_ids) as a (job_id) where a.job_id <> all(coalesce(v_ids, '{}'))))
        and j.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[j.tenant_id]))
    group by j.tenant_id, j.queue;
    return query
    -- a join, not a per-row EXISTS over the completed list: batches of 1,000 stay linear
    select a.job_id, d.job_id is not null
    from unnest(p_ids, p_epochs) with ordinality as a (job_id, lease_epoch, ord)
    left join unnest(v_ids, v_epochs) as d (job_id, lease_epoch)
        on d.job_id = a.job_id and d.lease_epoch = a.lease_epoch
    order by a.ord;
end
$$;
