-- 0001_core: the jobctl schema. Tables, indexes, types and periodic-job registration.
-- Immutable once landed: later changes go into a new numbered migration.

create schema if not exists partman;
create extension if not exists pg_partman schema partman;

create sequence jobctl.job_id_seq as bigint;
-- Fencing tokens: one global, strictly increasing sequence, so a new lease's epoch is greater than
-- every epoch any job ever had.
create sequence jobctl.lease_epoch_seq as bigint;

create table jobctl.tenant (
    tenant_id text primary key,
    weight integer not null default 1,
    max_pending bigint,
    max_running integer,
    submit_rate numeric,
    submit_burst integer,
    claim_rate numeric,
    claim_burst integer,
    paused boolean not null default false,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint tenant_weight_check check (weight between 1 and 10000),
    constraint tenant_max_pending_check check (max_pending >= 0),
    constraint tenant_max_running_check check (max_running >= 0),
    constraint tenant_submit_rate_check check (submit_rate > 0),
    constraint tenant_submit_burst_check check (submit_burst >= 1),
    constraint tenant_claim_rate_check check (claim_rate > 0),
    constraint tenant_claim_burst_check check (claim_burst >= 1)
);

-- The durable record of every job, partitioned by day of creation (pg_partman). No index mentions
-- `state`, `attempt` or lease columns, so claim and completion updates are HOT-eligible.
create table jobctl.job (
    job_id bigint not null default nextval('jobctl.job_id_seq'),
    created_at timestamptz not null default now(),
    tenant_id text not null,
    queue text not null,
    state text not null default 'pending',
    priority smallint not null default 0,
    run_at timestamptz not null,
    attempt integer not null default 0,
    max_attempts integer not null,
    lease_epoch bigint,
    worker_id text,
    started_at timestamptz,
    finished_at timestamptz,
    timeout interval,
    backoff jsonb,
    dedup_key text,
    last_error text,
    result jsonb,
    payload jsonb not null,
    constraint job_pkey primary key (job_id, created_at),
    constraint job_state_check check (
        state in ('pending', 'running', 'completed', 'failed', 'dead', 'cancelled')
    )
) partition by range (created_at);

create index job_tenant_idx on jobctl.job (tenant_id, job_id desc);
create index job_dedup_idx on jobctl.job (tenant_id, dedup_key) where dedup_key is not null;

-- Transitions off the happy path (failures, reaps, cancels, retries). Submitted, the current claim
-- and completion are read from the job row itself: see jobctl.job_history.
create table jobctl._event (
    job_id bigint not null,
    job_created_at timestamptz not null,
    at timestamptz not null default clock_timestamp(),
    event text not null,
    attempt integer,
    lease_epoch bigint,
    worker_id text,
    detail text
) partition by range (job_created_at);

create index _event_job_idx on jobctl._event (job_id);

-- Jobs that are due now, one narrow row each; claims delete from here. One lane per
-- (queue, tenant); within a lane, higher priority first, then due time, then id.
create table jobctl._ready (
    queue text not null,
    tenant_id text not null,
    priority smallint not null,
    run_at timestamptz not null,
    job_id bigint not null,
    created_at timestamptz not null
) with (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_vacuum_cost_delay = 0
);

create index _ready_lane_idx on jobctl._ready (queue, tenant_id, priority desc, run_at, job_id);

-- Jobs waiting for a future run_at (delayed submits and retry backoff); promoted to _ready when due.
create table jobctl._delayed (
    run_at timestamptz not null,
    job_id bigint not null,
    created_at timestamptz not null,
    queue text not null,
    tenant_id text not null,
    priority smallint not null
) with (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_cost_delay = 0
);

create index _delayed_run_at_idx on jobctl._delayed (run_at, job_id);

-- Leases of running jobs. Heartbeats change only lease_expires_at, which no index covers, so they
-- are HOT updates; fillfactor leaves room on the page for them. The reaper scans this small table.
create table jobctl._running (
    job_id bigint primary key,
    created_at timestamptz not null,
    tenant_id text not null,
    queue text not null,
    attempt integer not null,
    lease_epoch bigint not null,
    worker_id text not null,
    started_at timestamptz not null,
    lease_expires_at timestamptz not null,
    deadline timestamptz
) with (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_cost_delay = 0
);

create index _running_tenant_idx on jobctl._running (tenant_id);

-- The claimable lanes per queue filter, shared by all claimers and refreshed at most ten times a
-- second (see jobctl._lanes): enumerating lanes costs a descent of _ready_lane_idx per lane.
create table jobctl._lane_cache (
    queues_key text primary key,
    refreshed_at timestamptz not null,
    queues text[] not null,
    tenants text[] not null,
    limited boolean[] not null,
    lows float8[] not null,
    total float8 not null
) with (fillfactor = 50);

-- What get_job / list_jobs return (a composite keeps parameter names free of output-column clashes).
create type jobctl.job_info as (
    job_id bigint,
    tenant_id text,
    queue text,
    state text,
    priority integer,
    payload jsonb,
    run_at timestamptz,
    attempt integer,
    max_attempts integer,
    dedup_key text,
    created_at timestamptz,
    started_at timestamptz,
    finished_at timestamptz,
    last_error text,
    result jsonb,
    worker_id text,
    lease_expires_at timestamptz,
    lease_epoch bigint,
    timeout interval,
    backoff jsonb
);

-- A job as jobctl.job_info, with its live lease: what get_job and list_jobs return.
create view jobctl._job_view as
select
    j.job_id,
    j.tenant_id,
    j.queue,
    j.state,
    j.priority::integer as priority,
    j.payload,
    j.run_at,
    j.attempt,
    j.max_attempts,
    j.dedup_key,
    j.created_at,
    j.started_at,
    j.finished_at,
    j.last_error,
    j.result,
    j.worker_id,
    r.lease_expires_at,
    j.lease_epoch,
    j.timeout,
    j.backoff
from jobctl.job as j
left join jobctl._running as r on r.job_id = j.job_id and r.lease_epoch = j.lease_epoch;

-- One job to submit: the parameters of submit_job, shared by submit_job and submit_jobs.
create type jobctl._job_spec as (
    tenant_id text,
    queue text,
    payload jsonb,
    priority integer,
    run_at timestamptz,
    dedup_key text,
    max_attempts integer,
    backoff jsonb,
    timeout interval
);

-- Daily partitions for jobs and their events. pg_partman's API differs between 4.x (p_type 'native')
-- and 5.x (p_type 'range', the default), so branch on the installed version.
do $$
declare
    v_major int := split_part(
        (select extversion from pg_catalog.pg_extension where extname = 'pg_partman'), '.', 1
    )::int;
    v_parent text;
begin
    foreach v_parent in array array['jobctl.job', 'jobctl._event'] loop
        if v_major < 5 then
            perform partman.create_parent(
                p_parent_table => v_parent,
                p_control => case v_parent when 'jobctl.job' then 'created_at' else 'job_created_at' end,
                p_type => 'native',
                p_interval => '1 day',
                p_premake => 4
            );
        else
            execute format(
                'select partman.create_parent(p_parent_table => %L, p_control => %L, p_interval => %L, p_premake => 4)',
                v_parent, case v_parent when 'jobctl.job' then 'created_at' else 'job_created_at' end, '1 day'
            );
        end if;
    end loop;
    update partman.part_config set infinite_time_partitions = true
    where parent_table in ('jobctl.job', 'jobctl._event');
end
$$;

-- Periodic work under pg_cron, when it is preloaded and this is its database. Without it, run the
-- same functions by hand or from the worker (docs/operations.md, "Manual mode").
do $$
begin
    if exists (select from pg_catalog.pg_available_extensions where name = 'pg_cron')
       and current_database() = current_setting('cron.database_name', true) then
        create extension if not exists pg_cron;
        perform cron.schedule('jobctl-tick', '* * * * *', 'SELECT jobctl.tick()');
        perform cron.schedule('jobctl-partitions', '*/15 * * * *', 'SELECT jobctl.maintain_partitions()');
        perform cron.schedule(
            'jobctl-cron-history', '17 3 * * *',
            $cmd$DELETE FROM cron.job_run_details WHERE end_time < now() - interval '7 days'$cmd$
        );
    end if;
end
$$;
