-- jobctl._submit: the one submit path behind submit_job and submit_jobs. All or nothing.
-- p_caller: the caller's own submit, for its tenants only (jobctl._acting_tenants), with the payloads
-- of tenants that encrypt theirs sealed with its key (jobctl._seal); false for a schedule's run,
-- which pg_cron or any claimer's housekeeping enqueues for the schedule's tenant, and whose payload
-- is configuration, stored as given.
-- Validates every spec (first bad one raises, naming the field and, for batches, its index),
-- registers unknown tenants, serialises submits that share a dedup key, inserts the new jobs and
-- their queue rows, and returns (job_id, duplicate) in input order. Commits synchronously.
-- A due job with a concurrency key goes to _held, and jobctl._admit lets it in while its key has
-- room. A key's holder may be a job on the other shard of the tenant's move (jobctl._move_key).
-- Locks: the dedup lock on the batch's dedup keys (jobctl._wait_lock), through _admit on keys.
-- Writes: tenant, job, _ready, _held, _delayed.
-- p_schedule, p_fire_time: the schedule whose run every job of the call is, and its fire time
-- (expand_schedules, run_schedule), recorded on the jobs (jobctl.schedule_runs).
-- p_names: submit_workflow's names of the jobs, in input order (job.workflow_name).
create or replace function jobctl._submit(
    p_specs jobctl._job_spec[], p_batch boolean, p_caller boolean default true, p_workflow boolean default false,
    p_schedule text default null, p_fire_time timestamptz default null, p_names text[] default null
)
returns table (job_id bigint, duplicate boolean)
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
set enable_seqscan = off
set jit = off  -- a generic plan's estimates at depth pass jit_above_cost, and JIT compiles per call (~14 ms)
as $$
#variable_conflict use_column
declare
    v_now timestamptz := now();
    v_bad record;
    v_tenants text[];
    v_sealing boolean;  -- a tenant of the batch encrypts its payloads
    v_msg text;
    v_field text;
    v_has_keys boolean;
    v_limited boolean;  -- a tenant of the batch has a submit rate or max_pending
    v_check integer;  -- rate pass 1 checks every tenant's bucket, pass 2 takes from them
    v_limit record;
    v_wait float8;
    v_specs jobctl._job_spec[] := p_specs;  -- the specs that become jobs
    v_ids bigint[];                         -- their ids, in v_specs order
    v_names text[] := p_names;              -- their names (submit_workflow's), in v_specs order
    v_slot bigint[];  -- keyed batches, per spec: -k the k-th new job, > 0 the id of the job holding its key
    v_dup boolean[];  -- keyed batches, per spec: whether it returns another spec's or an older job
    v_key_tenants text[];  -- the due jobs with a concurrency key, waiting for a place
    v_keys text[];
    v_extra boolean;   -- a spec has depends_on, after, callback_of or a dedup scope
    v_linked boolean;  -- a job of the call depends on an earlier one (after: a workflow)
    v_children bigint[];
    v_debounce record;
    v_moved text;  -- a tenant of the call that moved to another shard (jobctl._move_out_fence)
begin
    if p_specs is null or cardinality(p_specs) = 0 then
        return;
    end if;
    if cardinality(p_specs) > 10000 then
        raise exception using errcode = 'JC001',
            message = format('jobs holds %s jobs; at most 10000 may be submitted at once', cardinality(p_specs)),
            detail = 'field: jobs',
            hint = 'Nothing was submitted; submit them in batches of at most 10000.';
    end if;
    -- an acknowledged submit survives a failover: with a synchronous standby configured, this commit
    -- waits for it even where the cluster's default is local (docs/operations.md, failover). In the
    -- body: a SET clause would be undone before the commit it is meant for.
    perform set_config('synchronous_commit', 'on', true);
    -- whether a spec has a workflow's or a scoped key's options (most calls have none: their checks
    -- are skipped below), and whether one depends on an earlier spec of the call
    v_extra := exists (
        select from unnest(p_specs) as s
        where s.depends_on is not null or s.after is not null or s.callback_of is not null
            or s.dedup_states is not null or s.dedup_period is not null or s.dedup_mode is not null
    );
    v_linked := v_extra and exists (select from unnest(p_specs) as s where s.after is not null);

    -- One CASE per job (jobctl._spec_fault, inlined) finds its first failed condition; the message of
    -- the first failure is formatted once, below.
    select x.* into v_bad
    from (
        select o.*, jobctl._spec_fault(row(
                o.tenant_id, o.queue, o.payload, o.priority, o.run_at, o.dedup_key, o.max_attempts, o.backoff, o.timeout,
                o.subject_key, o.concurrency_key, o.traceparent, o.depends_on, o.after, o.cancel_on_failure, o.batch_id,
                o.callback_of, o.dedup_states, o.dedup_period, o.dedup_mode
            )::jobctl._job_spec, o.ord, v_now, v_extra, v_linked) as n
        from unnest(p_specs) with ordinality as o (
            tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, subject_key, concurrency_key, traceparent, depends_on, after, cancel_on_failure, batch_id, callback_of, dedup_states, dedup_period, dedup_mode, ord
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
            when 11 then 'run_at must be from 1970-01-01 to 10 years from now'
            when 12 then 'subject_key must be NULL or a string of 1 to 500 characters'
            when 13 then 'payload must not have the key $jobctl_sealed: it marks encrypted payloads'
            when 14 then 'concurrency_key must be NULL or a string of 1 to 200 characters'
            when 15 then 'payload is nested more than 100 levels deep'
            when 17 then 'traceparent must be NULL or a W3C traceparent: 2-32-16-2 lowercase hex digits joined by -'
            when 18 then 'depends_on must be an array of at most 10000 job ids, without NULL'
            when 19 then 'depends_on must name jobs listed before this one'
            when 20 then 'dedup_key cannot be used in a call whose jobs depend on each other (a workflow)'
            when 21 then 'dedup_states, dedup_period and dedup_mode need a dedup_key'
            when 22 then 'dedup_states must be a non-empty array of job states (waiting, pending, running, failed, completed, dead, cancelled)'
            when 23 then 'dedup_period must be from 1 second to 366 days'
            when 24 then format('dedup_mode must be keep, replace or preserve_run_at, not %s', left(v_bad.dedup_mode, 50))
        end;
        v_field := (array[
            'tenant_id', 'tenant_id', 'queue', 'queue', 'payload', 'payload', 'priority', 'max_attempts', 'timeout',
            'dedup_key', 'run_at', 'subject_key', 'payload', 'concurrency_key', 'payload', null, 'traceparent',
            'depends_on', 'depends_on', 'dedup_key', 'dedup_key', 'dedup_states', 'dedup_period', 'dedup_mode'
        ])[v_bad.n];
        if v_bad.n = 16 then
            v_field := case
                when v_bad.tenant_id ~ jobctl._unprintable() then 'tenant_id'
                when v_bad.queue ~ jobctl._unprintable() then 'queue'
                when v_bad.dedup_key ~ jobctl._unprintable() then 'dedup_key'
                when v_bad.subject_key ~ jobctl._unprintable() then 'subject_key'
                else 'concurrency_key'
            end;
            v_msg := v_field || ' must not contain control characters';
        end if;
        raise exception using
            errcode = case when v_bad.n = 6 then 'JC002' else 'JC001' end,
            message = case when p_batch then format('jobs[%s].%s', v_bad.ord - 1, v_msg) else v_msg end,
            detail = format('field: %s', v_field),
            hint = 'Nothing was submitted.';
    end if;

    -- only for the caller's tenants (NULL: all of them)
    v_tenants := case when p_caller then jobctl._acting_tenants('jobs:submit') end;
    if v_tenants is not null then
        select o.ord, o.tenant_id into v_bad
        from unnest(p_specs) with ordinality as o (
            tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, subject_key, concurrency_key, traceparent, depends_on, after, cancel_on_failure, batch_id, callback_of, dedup_states, dedup_period, dedup_mode, ord
        )
        where o.tenant_id <> all(v_tenants)
        order by o.ord
        limit 1;
        if found then
            raise exception using errcode = '42501',
                message = format('%stenant_id: no jobs:submit access to tenant %s',
                    case when p_batch then format('jobs[%s].', v_bad.ord - 1) end, v_bad.tenant_id),
                detail = 'field: tenant_id',
                hint = 'Nothing was submitted. An administrator grants a role its tenants with jobctl.grant_tenant(role, tenant).';
        end if;
    end if;

    -- unknown tenants are registered (in key order, so two batches registering the same new
    -- tenants cannot deadlock); whether any tenant of the batch has a submit rate, any spec a key,
    -- and any tenant encrypted payloads
    with known as (
        select t.tenant_id, t.submit_bucket, t.admitted, t.encrypt_payloads, t.moved_to from jobctl.tenant as t
        where t.tenant_id in (select s.tenant_id from unnest(p_specs) as s)
    ),
    registered as (
        insert into jobctl.tenant (tenant_id)
        select distinct s.tenant_id from unnest(p_specs) as s
        where s.tenant_id not in (select k.tenant_id from known as k)
        order by 1
        on conflict do nothing
    )
    select
        coalesce(bool_or(k.submit_bucket is not null or k.admitted is not null), false),
        exists (select from unnest(p_specs) as s where s.dedup_key is not null),
        coalesce(bool_or(k.encrypt_payloads), false) and p_caller,
        min(k.tenant_id) filter (where k.moved_to is not null)
    into v_limited, v_has_keys, v_sealing, v_moved
    from known as k;
    if v_moved is not null then
        perform jobctl._refuse_moved(v_moved);
    end if;

    if v_sealing then
        select o.ord, o.tenant_id into v_bad
        from unnest(p_specs) with ordinality as o (
            tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, subject_key, concurrency_key, traceparent, depends_on, after, cancel_on_failure, batch_id, callback_of, dedup_states, dedup_period, dedup_mode, ord
        )
        inner join jobctl.tenant as t on t.tenant_id = o.tenant_id and t.encrypt_payloads
        where jobctl._key_check(jobctl._payload_key(o.tenant_id)) is distinct from t.payload_key_check
        order by o.ord
        limit 1;
        if found then
            -- (a key other than the one put_tenant recorded would seal jobs its workers cannot open)
            raise exception using errcode = 'JC008',
                message = format('%stenant %s encrypts its payloads: jobctl.payload_keys has no key for it, or not its key',
                    case when p_batch then format('jobs[%s].', v_bad.ord - 1) end, v_bad.tenant_id),
                detail = 'field: jobctl.payload_keys',
                hint = 'Nothing was submitted. Set jobctl.payload_keys to {"<tenant>": "<key>"} for the session (docs/security.md).';
        end if;
        -- sealed in place: everything after works on the specs as given
        p_specs := array(
            select row(
                o.tenant_id, o.queue,
                case when t.encrypt_payloads then jobctl._seal(o.payload, jobctl._payload_key(o.tenant_id)) else o.payload end,
                o.priority, o.run_at, o.dedup_key, o.max_attempts, o.backoff, o.timeout, o.subject_key,
                o.concurrency_key, o.traceparent, o.depends_on, o.after, o.cancel_on_failure, o.batch_id, o.callback_of,
                o.dedup_states, o.dedup_period, o.dedup_mode
            )::jobctl._job_spec
            from unnest(p_specs) with ordinality as o (
                tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, subject_key, concurrency_key, traceparent, depends_on, after, cancel_on_failure, batch_id, callback_of, dedup_states, dedup_period, dedup_mode, ord
            )
            left join jobctl.tenant as t on t.tenant_id = o.tenant_id
            order by o.ord
        );
        v_specs := p_specs;
    end if;

    if v_has_keys then
        if current_setting('transaction_isolation') = 'repeatable read' then
            raise exception using errcode = 'JC006',
                message = 'dedup_key needs READ COMMITTED or SERIALIZABLE isolation, not REPEATABLE READ',
                hint = 'Submit jobs with a dedup_key outside REPEATABLE READ transactions.';
        end if;
        -- Submits sharing a key wait for each other here; the next statement then sees the winner's
        -- committed job (READ COMMITTED takes a new snapshot per statement). A tenant's keys hash
        -- into 256 buckets, locked in order: two batches cannot deadlock.
        perform jobctl._wait_lock('dedup',
            array(select s.tenant_id from unnest(p_specs) as s), array(select s.dedup_key from unnest(p_specs) as s));
        -- a move's fence may have committed while this call waited: the keys the target was handed
        -- (jobctl._move_out_keys, under these locks) do not include this call's
        select min(t.tenant_id) into v_moved from jobctl.tenant as t
        where t.tenant_id in (select s.tenant_id from unnest(p_specs) as s) and t.moved_to is not null;
        if v_moved is not null then
            perform jobctl._refuse_moved(v_moved);
        end if;
    end if;

    if v_has_keys then
        -- which specs become jobs: the first of each key in the batch, unless a committed job holds
        -- the key; each spec's answer is the k-th new job (slot -k) or the holder's id (slot > 0)
        select array_agg(row(
                m.tenant_id, m.queue, m.payload, m.priority, m.run_at, m.dedup_key, m.max_attempts, m.backoff,
                m.timeout, m.subject_key, m.concurrency_key, m.traceparent, m.depends_on, m.after,
                m.cancel_on_failure, m.batch_id, m.callback_of, m.dedup_states, m.dedup_period, m.dedup_mode
            )::jobctl._job_spec order by m.ord) filter (where m.is_new),
            array_agg(coalesce(m.held_by, -m.k) order by m.ord),
            array_agg(not m.is_new order by m.ord)
        into v_specs, v_slot, v_dup
        from (
            select n.*, max(n.k_new) over (partition by n.tenant_id, n.dedup_key, n.first_ord) as k
            from (
                select h.*, case when h.is_new then count(*) filter (where h.is_new) over (order by h.ord) end as k_new
                from (
                    select s.*, e.job_id as held_by, e.job_id is null and (s.dedup_key is null or s.ord = s.first_ord) as is_new
                    from (
                        select o.*, case when o.dedup_key is null then o.ord
                            else min(o.ord) over (partition by o.tenant_id, o.dedup_key) end as first_ord
                        from unnest(p_specs) with ordinality as o (
                            tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, subject_key, concurrency_key, traceparent, depends_on, after, cancel_on_failure, batch_id, callback_of, dedup_states, dedup_period, dedup_mode, ord
                        )
                    ) as s
                    -- the key's holder: its newest job, if in one of dedup_states and created in the
                    -- current dedup_period (each unset: any); during a move of the tenant, a job on
                    -- the move's other shard may hold it (jobctl._move_key: its state when recorded)
                    left join lateral (
                        select l.job_id from (
                            (
                                select j.job_id, j.state, j.created_at from jobctl.job as j
                                where j.tenant_id = s.tenant_id and j.dedup_key = s.dedup_key
                                order by j.job_id desc
                                limit 1
                            )
                            union all
                            (
                                select k.job_id, k.state, k.created_at from jobctl._move_key as k
                                where k.tenant_id = s.tenant_id and k.dedup_key = s.dedup_key
                                order by k.created_at desc
                                limit 1
                            )
                            order by 3 desc, 1 desc
                            limit 1
                        ) as l
                        where (s.dedup_states is null or l.state = any(s.dedup_states))
                            and (s.dedup_period is null
                                 or l.created_at >= date_bin(s.dedup_period, v_now, timestamptz '2000-01-01 00:00:00+00'))
                    ) as e on s.dedup_key is not null
                ) as h
            ) as n
        ) as m;
        if p_names is not null then  -- the names of the specs that become jobs
            v_names := array(select p_names[u.i] from unnest(v_dup) with ordinality as u (dup, i) where not u.dup order by u.i);
        end if;
    end if;

    -- max_pending and submit rates count the new jobs, not the repeats. Every limited tenant of the
    -- batch is checked (pass 1) before any bucket is taken from or counter advanced (pass 2), so a
    -- refused batch takes nothing; the take checks again (another submitter may have emptied the
    -- bucket since). Check-then-advance without a lock: concurrent submitters may each slip in
    -- one batch over a limit (docs/tenants.md).
    if v_limited then
        for v_check in 1..2 loop
            for v_limit in
                select t.tenant_id, t.submit_bucket as bucket, t.submit_rate as rate, t.submit_burst as burst,
                    t.max_pending, t.admitted,
                    jobctl._pending(t) as pending,
                    count(*)::integer as n
                from unnest(v_specs) as s
                inner join jobctl.tenant as t on t.tenant_id = s.tenant_id
                where t.submit_bucket is not null or t.admitted is not null
                group by t.tenant_id
                order by t.tenant_id
            loop
                if v_check = 1 and v_limit.admitted is not null and v_limit.pending + v_limit.n > v_limit.max_pending then
                    raise exception using errcode = 'JC004',
                        message = format('tenant %s is over its max_pending (%s unfinished + %s new > %s)',
                            v_limit.tenant_id, v_limit.pending, v_limit.n, v_limit.max_pending),
                        detail = format(E'field: tenant_id\npending: %s\nretry_after: 1', v_limit.pending),
                        hint = 'Nothing was submitted; room comes back as the tenant''s jobs finish.';
                end if;
                if v_check = 1 and v_limit.bucket is not null and v_limit.n > jobctl._bucket_size(v_limit.rate, v_limit.burst) then
                    raise exception using errcode = 'JC001',
                        message = format('%s new jobs for tenant %s are more than its submit burst', v_limit.n, v_limit.tenant_id),
                        detail = 'field: jobs',
                        hint = 'Nothing was submitted; submit them in smaller batches.';
                end if;
                v_wait := case when v_limit.bucket is null then 0 when v_check = 1
                    then (v_limit.n - jobctl._bucket_room(v_limit.bucket, v_limit.rate, v_limit.burst)) / v_limit.rate
                    else jobctl._take_tokens(v_limit.bucket, v_limit.rate, v_limit.burst, v_limit.n) end;
                if v_wait > 0 then
                    raise exception using errcode = 'JC005',
                        message = format('tenant %s is over its submit rate (%s a second)', v_limit.tenant_id, v_limit.rate),
                        detail = format(E'field: tenant_id\nretry_after: %s', round(v_wait::numeric, 3)),
                        hint = 'Nothing was submitted; try again after retry_after seconds.';
                end if;
                if v_check = 2 and v_limit.admitted is not null then
                    perform nextval(v_limit.admitted) from generate_series(1, v_limit.n);
                end if;
            end loop;
        end loop;
    end if;

    -- the new jobs, in input order; a job with parents waits (state waiting, a _waiting row) for
    -- them, its parents of the same call found by ordinal (after)
    if v_linked then
        v_ids := array(select nextval('jobctl.job_id_seq') from generate_series(1, cardinality(v_specs)));
    end if;
    with fresh as (
        select o.*, case when v_linked then v_ids[o.ord::integer] else nextval('jobctl.job_id_seq') end as new_id,
            coalesce(o.run_at, v_now) as due,
            o.depends_on is not null or o.after is not null or o.callback_of is not null as waits
        from unnest(v_specs) with ordinality as o (
            tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout, subject_key, concurrency_key, traceparent, depends_on, after, cancel_on_failure, batch_id, callback_of, dedup_states, dedup_period, dedup_mode, ord
        )
        order by o.ord
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
            f.new_id, v_now, f.tenant_id, f.queue, f.priority, f.due, coalesce(f.max_attempts, 3),
            f.timeout, f.backoff, f.dedup_key, f.payload, f.subject_key, f.concurrency_key, f.traceparent,
            case when f.waits then 'waiting' else 'pending' end, f.parents, f.workflow_id,
            coalesce(f.batch_id, f.callback_of), p_schedule, p_fire_time, v_names[f.ord]
        from linked as f
    ),
    tally as (
        -- the counters (migration 0025): due jobs are pending, the others delayed, or waiting
        insert into jobctl._stat_delta (tenant_id, queue, submitted, pending, delayed, waiting)
        select f.tenant_id, f.queue, count(*), count(*) filter (where f.due <= v_now and not f.waits),
            count(*) filter (where f.due > v_now and not f.waits), count(*) filter (where f.waits)
        from fresh as f
        group by f.tenant_id, f.queue
    ),
    new_ready as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        select f.queue, f.tenant_id, f.priority, f.due, f.new_id, v_now from fresh as f
        where f.due <= v_now and f.concurrency_key is null and not f.waits
    ),
    new_held as (
        -- a due job with a concurrency key waits for a place (jobctl._admit, below)
        insert into jobctl._held (tenant_id, concurrency_key, run_at, job_id, created_at, queue, priority)
        select f.tenant_id, f.concurrency_key, f.due, f.new_id, v_now, f.queue, f.priority from fresh as f
        where f.due <= v_now and f.concurrency_key is not null and not f.waits
    ),
    new_delayed as (
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority, concurrency_key)
        select f.due, f.new_id, v_now, f.queue, f.tenant_id, f.priority, f.concurrency_key from fresh as f
        where f.due > v_now and not f.waits
    ),
    new_waiting as (
        insert into jobctl._waiting (
            job_id, created_at, tenant_id, queue, priority, run_at, concurrency_key, cancel_on_failure, batch_id
        )
        select f.new_id, v_now, f.tenant_id, f.queue, f.priority, f.due, f.concurrency_key,
            coalesce(f.cancel_on_failure, true), f.callback_of
        from fresh as f
        where f.waits
    )
    select array_agg(f.new_id order by f.ord),
        array_agg(f.tenant_id) filter (where f.due <= v_now and f.concurrency_key is not null and not f.waits),
        array_agg(f.concurrency_key) filter (where f.due <= v_now and f.concurrency_key is not null and not f.waits),
        array_agg(f.new_id) filter (where f.waits and f.callback_of is null)
    from fresh as f
    into v_ids, v_key_tenants, v_keys, v_children;
    if v_children is not null then
        perform jobctl._link_parents(v_children);
    end if;
    if v_keys is not null then
        perform jobctl._admit(v_key_tenants, v_keys);
    end if;

    -- debounce: a repeat in replace or preserve_run_at mode updates its pending holder, in input order
    -- (the last repeat's payload wins); a holder that is no longer pending is returned unchanged
    if v_slot is not null then
        for v_debounce in
            select case when u.slot > 0 then u.slot else v_ids[-u.slot] end as job_id, u.ord
            from unnest(v_slot, v_dup) with ordinality as u (slot, dup, ord)
            where u.dup and (p_specs[u.ord::integer]).dedup_mode in ('replace', 'preserve_run_at')
            order by u.ord
        loop
            perform jobctl._debounce(v_debounce.job_id, p_specs[v_debounce.ord::integer]);
        end loop;
    end if;

    if v_slot is null then
        return query select u.id, false from unnest(v_ids) as u (id);
    else
        return query
        select case when u.slot > 0 then u.slot else v_ids[-u.slot] end, u.dup
        from unnest(v_slot, v_dup) as u (slot, dup);
    end if;

    perform jobctl._notify(array_agg(distinct s.queue))
    from unnest(p_specs) as s
    where (s.run_at is null or s.run_at <= v_now) and s.concurrency_key is null  -- (admitted ones: _admit's)
        and s.depends_on is null and s.after is null and s.callback_of is null;  -- (released ones: _release_waiting's)
end
$$;
