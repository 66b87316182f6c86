-- jobctl._submit: the one submit path behind submit_job and submit_jobs. All or nothing.
-- Validates every spec (first bad one raises, naming the field and, for batches, its index),
-- registers unknown tenants, serialises submits that share a dedup key, inserts the new jobs and
-- their queue rows, and returns (job_id, duplicate) in input order.
-- Locks: advisory xact locks on dedup-key buckets (class 19011 + 1). Writes: tenant, job, _ready,
-- _delayed.
create or replace function jobctl._submit(p_specs jobctl._job_spec[], p_batch boolean)
returns table (job_id bigint, duplicate boolean)
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
set enable_seqscan = off
as $$
#variable_conflict use_column
declare
    v_now timestamptz := now();
    v_bad record;
    v_msg text;
    v_field text;
    v_has_keys boolean;
begin
    if p_specs is null or cardinality(p_specs) = 0 then
        return;
    end if;

    -- One CASE per job finds its first failed condition (no per-job subquery); the message of the
    -- first failure is formatted once, below.
    select x.ord, x.n, x.payload, x.priority, x.max_attempts into v_bad
    from (
        select o.ord, o.payload, o.priority, o.max_attempts, case
            when o.tenant_id is null or o.tenant_id = '' then 1
            when length(o.tenant_id) > 200 then 2
            when o.queue is null or o.queue = '' then 3
            when length(o.queue) > 200 then 4
            when o.payload is null or o.payload = 'null'::jsonb then 5
            when octet_length(o.payload::text) > 65536 then 6
            when o.priority is null or o.priority not between -100 and 100 then 7
            when o.max_attempts not between 1 and 1000 then 8
            when o.timeout <= interval '0' or o.timeout > interval '30 days' then 9
            when o.dedup_key = '' or length(o.dedup_key) > 500 then 10
            when not isfinite(o.run_at) then 11
        end as n
        from unnest(p_specs) with ordinality as o (
            tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, ord
        )
    ) as x
    where x.n is not null
    order by x.ord
    limit 1;
    if found then
        v_msg := case v_bad.n
            when 1 then 'tenant_id must be a non-empty string'
            when 2 then 'tenant_id must be at most 200 characters'
            when 3 then 'queue must be a non-empty string'
            when 4 then 'queue must be at most 200 characters'
            when 5 then 'payload must not be NULL (use {} for none)'
            when 6 then format('payload is %s bytes; the limit is 65536', octet_length(v_bad.payload::text))
            when 7 then format('priority must be an integer from -100 to 100, not %s', coalesce(v_bad.priority::text, 'NULL'))
            when 8 then format('max_attempts must be from 1 to 1000, not %s', v_bad.max_attempts)
            when 9 then 'timeout must be positive and at most 30 days'
            when 10 then 'dedup_key must be NULL or a string of 1 to 500 characters'
            when 11 then 'run_at must be a finite time, not infinity'
        end;
        v_field := (array[
            'tenant_id', 'tenant_id', 'queue', 'queue', 'payload', 'payload', 'priority', 'max_attempts', 'timeout',
            'dedup_key', 'run_at'
        ])[v_bad.n];
        raise exception using
            errcode = case when v_bad.n = 6 then 'JC002' else 'JC001' end,
            message = case when p_batch then format('jobs[%s].%s', v_bad.ord - 1, v_msg) else v_msg end,
            detail = format('field: %s', v_field),
            hint = 'Nothing was submitted.';
    end if;

    -- in key order, so two batches registering the same new tenants cannot deadlock
    insert into jobctl.tenant (tenant_id)
    select distinct s.tenant_id from unnest(p_specs) as s
    where not exists (select from jobctl.tenant as t where t.tenant_id = s.tenant_id)
    order by 1
    on conflict do nothing;

    v_has_keys := exists (select from unnest(p_specs) as s where s.dedup_key is not null);
    if v_has_keys then
        if current_setting('transaction_isolation') = 'repeatable read' then
            raise exception using errcode = 'JC006',
                message = 'dedup_key needs READ COMMITTED or SERIALIZABLE isolation, not REPEATABLE READ',
                hint = 'Submit jobs with a dedup_key outside REPEATABLE READ transactions.';
        end if;
        -- Submits sharing a key wait for each other here; the next statement then sees the winner's
        -- committed job (READ COMMITTED takes a new snapshot per statement). Keys hash into 256
        -- buckets, locked in order: a batch holds at most 256 entries of the shared lock table
        -- (its default size is 64 x max_connections), and two batches cannot deadlock.
        perform pg_advisory_xact_lock(19012, b.bucket)
        from (
            select distinct hashtext(s.tenant_id || chr(31) || s.dedup_key) & 255 as bucket
            from unnest(p_specs) as s where s.dedup_key is not null
            order by 1
        ) as b;
    end if;

    return query
    with spec as (
        select
            o.*,
            min(o.ord) over (partition by o.tenant_id, o.dedup_key) as first_ord
        from unnest(p_specs) with ordinality as o (
            tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, ord
        )
    ),
    existing as (
        select distinct on (j.tenant_id, j.dedup_key) j.tenant_id, j.dedup_key, j.job_id
        from jobctl.job as j
        where v_has_keys
            and j.dedup_key is not null
            and (j.tenant_id, j.dedup_key) in (
                select s.tenant_id, s.dedup_key from spec as s where s.dedup_key is not null
            )
        order by j.tenant_id, j.dedup_key, j.job_id
    ),
    fresh as (
        select s.*, nextval('jobctl.job_id_seq') as new_id, coalesce(s.run_at, v_now) as due
        from spec as s
        where s.dedup_key is null
            or (s.ord = s.first_ord and not exists (
                select from existing as e where e.tenant_id = s.tenant_id and e.dedup_key = s.dedup_key
            ))
        order by s.ord
    ),
    new_job as (
        insert into jobctl.job (
            job_id, created_at, tenant_id, queue, priority, run_at, max_attempts, timeout, backoff,
            dedup_key, payload
        )
        select
            f.new_id, v_now, f.tenant_id, f.queue, f.priority, f.due, coalesce(f.max_attempts, 3),
            f.timeout, f.backoff, f.dedup_key, f.payload
        from fresh as f
    ),
    new_ready as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        select f.queue, f.tenant_id, f.priority, f.due, f.new_id, v_now from fresh as f where f.due <= v_now
    ),
    new_delayed as (
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority)
        select f.due, f.new_id, v_now, f.queue, f.tenant_id, f.priority from fresh as f where f.due > v_now
    )
    select
        coalesce(f.new_id, e.job_id, lead_job.new_id),
        f.new_id is null
    from spec as s
    left join fresh as f on f.ord = s.ord
    left join existing as e on e.tenant_id = s.tenant_id and e.dedup_key = s.dedup_key
    left join fresh as lead_job on lead_job.ord = s.first_ord and s.dedup_key is not null
    order by s.ord;

    perform jobctl._notify(array_agg(distinct s.queue))
    from unnest(p_specs) as s
    where s.run_at is null or s.run_at <= v_now;
end
$$;
