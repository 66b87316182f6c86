-- jobctl._insert_jobs: the "insert" step of jobctl._submit: the new jobs, in input order, by one
-- statement: the job rows and their counter rows, and each job's queue row: a due job in _ready, or
-- with a concurrency key in _held (jobctl._admit lets it in while its key has room), a later one in
-- _delayed, and a job with parents waiting (state waiting, a _waiting row; jobctl._link_parents
-- records its edges) with its parents of the same call found by position (after). Returns the new
-- jobs' ids in p_specs order. p_linked: a spec has after (their ids are drawn first); p_workflow:
-- each job gets the first one's id as workflow_id; p_schedule, p_fire_time: the schedule run every
-- job is; p_names: the jobs' names (submit_workflow's), in p_specs order.
-- Calls: _link_parents (jobs with parents), _admit (due jobs with a concurrency key).
-- Locks: through _link_parents the parents' job rows (FOR SHARE), through _admit the key lock on
-- each concurrency key (_tenant_lock rows, waited for).
-- Writes: job, _stat_delta, _ready, _held, _delayed, _waiting (insert), the sequence job_id_seq;
-- through _link_parents _edge; through _admit _held (delete) and _ready (insert).
create or replace function jobctl._insert_jobs(
    p_specs jobctl._job_spec[], p_now timestamptz, p_linked boolean, p_workflow boolean,
    p_schedule text, p_fire_time timestamptz, p_names text[]
)
returns bigint[]
language plpgsql
as $$
#variable_conflict use_column
declare
    v_ids bigint[];
    v_key_tenants text[];  -- the due jobs with a concurrency key, waiting for a place
    v_keys text[];
    v_children bigint[];   -- the jobs that wait for parents (not a batch's callbacks: _end_batches')
begin
    if p_linked then
        v_ids := array(select nextval('jobctl.job_id_seq') from generate_series(1, cardinality(p_specs)));
    end if;
    with fresh as (
        select o.*, case when p_linked then v_ids[o.ordinality::integer] else nextval('jobctl.job_id_seq') end as new_id,
            coalesce(o.run_at, p_now) as due,
            o.depends_on is not null or o.after is not null or o.callback_of is not null as waits
        from unnest(p_specs) with ordinality as o
        order by o.ordinality
    ),
    linked as (
        select f.*,
            case when f.after is null then f.depends_on
                else array(select v_ids[a.k] from unnest(f.after) as a (k)) || f.depends_on
            end as parents,
            case when p_workflow then min(f.new_id) over () end as workflow_id
        from fresh as f
    ),
    new_job as (
        insert into jobctl.job (
            job_id, created_at, tenant_id, queue, priority, run_at, max_attempts, timeout, backoff,
            dedup_key, payload, subject_key, concurrency_key, traceparent, state, depends_on, workflow_id, batch_id,
            schedule_name, fire_time, workflow_name
        )
        select
            f.new_id, p_now, f.tenant_id, f.queue, f.priority, f.due, coalesce(f.max_attempts, 3),
            f.timeout, f.backoff, f.dedup_key, f.payload, f.subject_key, f.concurrency_key, f.traceparent,
            case when f.waits then 'waiting' else 'pending' end, f.parents, f.workflow_id,
            coalesce(f.batch_id, f.callback_of), p_schedule, p_fire_time, p_names[f.ordinality]
        from linked as f
    ),
    tally as (
        -- the counters (docs/design.md §2): due jobs are pending, the others delayed, or waiting
        insert into jobctl._stat_delta (tenant_id, queue, submitted, pending, delayed, waiting)
        select f.tenant_id, f.queue, count(*), count(*) filter (where f.due <= p_now and not f.waits),
            count(*) filter (where f.due > p_now and not f.waits), count(*) filter (where f.waits)
        from fresh as f
        group by f.tenant_id, f.queue
    ),
    new_ready as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        select f.queue, f.tenant_id, f.priority, f.due, f.new_id, p_now from fresh as f
        where f.due <= p_now and f.concurrency_key is null and not f.waits
    ),
    new_held as (
        -- a due job with a concurrency key waits for a place (jobctl._admit, below)
        insert into jobctl._held (tenant_id, concurrency_key, run_at, job_id, created_at, queue, priority)
        select f.tenant_id, f.concurrency_key, f.due, f.new_id, p_now, f.queue, f.priority from fresh as f
        where f.due <= p_now and f.concurrency_key is not null and not f.waits
    ),
    new_delayed as (
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority, concurrency_key)
        select f.due, f.new_id, p_now, f.queue, f.tenant_id, f.priority, f.concurrency_key from fresh as f
        where f.due > p_now and not f.waits
    ),
    new_waiting as (
        insert into jobctl._waiting (
            job_id, created_at, tenant_id, queue, priority, run_at, concurrency_key, cancel_on_failure, batch_id
        )
        select f.new_id, p_now, f.tenant_id, f.queue, f.priority, f.due, f.concurrency_key,
            coalesce(f.cancel_on_failure, true), f.callback_of
        from fresh as f
        where f.waits
    )
    select array_agg(f.new_id order by f.ordinality),
        array_agg(f.tenant_id) filter (where f.due <= p_now and f.concurrency_key is not null and not f.waits),
        array_agg(f.concurrency_key) filter (where f.due <= p_now and f.concurrency_key is not null and not f.waits),
        array_agg(f.new_id) filter (where f.waits and f.callback_of is null)
    from fresh as f
    into v_ids, v_key_tenants, v_keys, v_children;
    if v_children is not null then
        perform jobctl._link_parents(v_children);
    end if;
    if v_keys is not null then
        perform jobctl._admit(v_key_tenants, v_keys);
    end if;
    return v_ids;
end
$$;
