-- jobctl._move_in_jobs: a page of a moving tenant's jobs (jobctl._move_out_jobs on the source) into
-- this, the target shard, under the same ids (unique across shards: ids carry their shard), with
-- their attempts, run_at, priority, keys and payloads as they were, and their events. Each job gets
-- its queue row here: _delayed when run_at is ahead (a retry as retrying), _held when due with a
-- concurrency key (jobctl._admit), else _ready. Jobs already here are skipped, so a page imported
-- twice (a crash, a rerun) gives one copy. A job the drain brings holds its own key here: its
-- jobctl._move_key row (jobctl._move_in_keys) goes. A durable job keeps its saved steps, what it is
-- parked on and its wait for an event; a wait whose event is already recorded here (carried by
-- jobctl._move_in_events, or emitted here after the flip) is woken at once (jobctl._wake_awaiting),
-- under the events' locks taken before the inserts, so an emit here racing the page is never lost.
-- Returns how many jobs it inserted.
-- Calls: _wait_lock, _admit, _wake_awaiting, _notify. Locks: the page's events' _tenant_lock rows.
-- Writes: job, _event, _ready, _held, _delayed, _step, _awaiting, _stat_delta, _move_key (delete); a
-- NOTIFY when the tenant claims here.
create or replace function jobctl._move_in_jobs(p_page jsonb)
returns integer
language plpgsql
as $$
declare
    v_now timestamptz := now();
    v_n integer;
    v_key_tenants text[];
    v_keys text[];
    v_queues text[];  -- of the due jobs, for the workers' wake-up hint (jobctl._notify)
    v_tenant text := p_page -> 'jobs' -> 0 ->> 'tenant_id';
    v_events text[];  -- awaited by the page's jobs
begin
    select array_agg(distinct w.event order by w.event) into v_events
    from jsonb_to_recordset(p_page -> 'waits') as w (event text);
    if v_events is not null then
        perform jobctl._wait_lock('event', array_fill(v_tenant, array[cardinality(v_events)]), v_events);
    end if;
    with incoming as (
        select * from jsonb_populate_recordset(null::jobctl.job, p_page -> 'jobs')
    ),
    fresh as (
        insert into jobctl.job
        select * from incoming
        on conflict do nothing
        returning *
    ),
    ready as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        select f.queue, f.tenant_id, f.priority, f.run_at, f.job_id, f.created_at from fresh as f
        where f.run_at <= v_now and f.concurrency_key is null
    ),
    held as (
        insert into jobctl._held (tenant_id, concurrency_key, run_at, job_id, created_at, queue, priority)
        select f.tenant_id, f.concurrency_key, f.run_at, f.job_id, f.created_at, f.queue, f.priority from fresh as f
        where f.run_at <= v_now and f.concurrency_key is not null
    ),
    delayed as (
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority, concurrency_key, retry, parked)
        select f.run_at, f.job_id, f.created_at, f.queue, f.tenant_id, f.priority, f.concurrency_key, f.state = 'failed',
            p_page -> 'parked' ->> f.job_id::text
        from fresh as f
        where f.run_at > v_now
    ),
    steps as (
        insert into jobctl._step
        select s.* from jsonb_populate_recordset(null::jobctl._step, p_page -> 'steps') as s
        where s.job_id in (select f.job_id from fresh as f)
    ),
    waits as (
        insert into jobctl._awaiting
        select w.* from jsonb_populate_recordset(null::jobctl._awaiting, p_page -> 'waits') as w
        where w.job_id in (select f.job_id from fresh as f where f.run_at > v_now)
    ),
    tally as (
        insert into jobctl._stat_delta (tenant_id, queue, pending, delayed, retrying)
        select f.tenant_id, f.queue, count(*) filter (where f.run_at <= v_now),
            count(*) filter (where f.run_at > v_now and f.state <> 'failed'),
            count(*) filter (where f.run_at > v_now and f.state = 'failed')
        from fresh as f
        group by f.tenant_id, f.queue
    ),
    events as (
        insert into jobctl._event
        select e.* from jsonb_populate_recordset(null::jobctl._event, p_page -> 'events') as e
        where e.job_id in (select f.job_id from fresh as f)
    ),
    keys as (
        delete from jobctl._move_key as k where k.job_id in (select f.job_id from fresh as f where f.dedup_key is not null)
    )
    select count(*),
        array_agg(f.tenant_id) filter (where f.run_at <= v_now and f.concurrency_key is not null),
        array_agg(f.concurrency_key) filter (where f.run_at <= v_now and f.concurrency_key is not null),
        array_agg(distinct f.queue) filter (where f.run_at <= v_now and f.concurrency_key is null)
    into v_n, v_key_tenants, v_keys, v_queues
    from fresh as f;
    if v_keys is not null then
        perform jobctl._admit(v_key_tenants, v_keys);
    end if;
    if v_events is not null then
        perform jobctl._wake_awaiting(v_tenant, array(
            select e.event from jobctl._emitted as e where e.tenant_id = v_tenant and e.event = any(v_events)
        ), v_now);
    end if;
    -- after the flip (the drain's pages) the tenant claims here: wake the idle workers
    if v_queues is not null and exists (
        select from jobctl.tenant as t
        where t.tenant_id = v_tenant and not t.paused
    ) then
        perform jobctl._notify(v_queues);
    end if;
    return v_n;
end
$$;
