-- The router database's own tables (schema jobctl_router) and the types its jobctl.* functions
-- return. Created once; the shards hold every job, the router only where each tenant and moved job is.
create extension if not exists plproxy;
create schema if not exists jobctl_router;
create schema if not exists jobctl;
create schema if not exists plproxy;  -- PL/Proxy's cluster configuration functions (cluster.sql)

-- the shards: PL/Proxy's cluster configuration is read from this table (cluster.sql)
create table if not exists jobctl_router.shard (
    shard integer primary key,
    connstr text not null,
    constraint shard_number_check check (shard between 0 and 63)
);

-- where each tenant lives; moving_to is set while a move is under way (shard moves: docs/operations.md)
create table if not exists jobctl_router.placement (
    tenant_id text primary key,
    shard integer not null references jobctl_router.shard,
    moving_to integer null references jobctl_router.shard,
    updated_at timestamptz not null default now()
);

-- jobs that live on another shard than the one their id names (moved with their tenant)
create table if not exists jobctl_router.job_route (
    job_id bigint primary key,
    shard integer not null references jobctl_router.shard
);

-- the tenant moves of the mover (`jobctl shards move`, python/jobctl/shard_move.py): each one's source,
-- target and the step it is at (jobctl_router.move_next holds their order, moves.sql). A finished
-- move stays, at step 'done', until the tenant's next move replaces it.
create table if not exists jobctl_router.move (
    tenant_id text primary key,
    from_shard integer not null references jobctl_router.shard,
    to_shard integer not null references jobctl_router.shard,
    step text not null,
    started_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint move_step_check check (
        step in ('begin', 'mark', 'open', 'copy', 'fence', 'keys', 'resume', 'flip', 'drain', 'end', 'done')
    )
);

-- the shard table's version, which PL/Proxy compares on every call (plproxy.get_cluster_version)
create table if not exists jobctl_router.cluster_version (
    singleton boolean primary key default true check (singleton),
    counter integer not null
);
insert into jobctl_router.cluster_version (counter) values (1) on conflict do nothing;

create sequence if not exists jobctl_router.claim_turn as bigint cycle;

-- jobctl.job_info as the shards define it (migrations/): a test compares the two
do $$
begin
    if to_regtype('jobctl.job_info') is null then
        create type jobctl.job_info as (
            job_id bigint, tenant_id text, queue text, state text, priority integer, payload jsonb,
            run_at timestamptz, attempt integer, max_attempts integer, dedup_key text, created_at timestamptz,
            started_at timestamptz, finished_at timestamptz, last_error text, result jsonb, worker_id text,
            lease_expires_at timestamptz, lease_epoch bigint, timeout interval, backoff jsonb,
            concurrency_key text, traceparent text, depends_on bigint[], workflow_id bigint, batch_id bigint,
            parent_results jsonb, schedule_name text, fire_time timestamptz, progress jsonb
        );
    end if;
    -- the attributes the shards' type gained since, on a router made before
    if not exists (
        select from pg_catalog.pg_attribute as a
        where a.attrelid = 'jobctl.job_info'::regclass and a.attname = 'last_traceback' and not a.attisdropped
    ) then
        alter type jobctl.job_info add attribute last_traceback text, add attribute workflow_name text;
    end if;
    -- a parked job (docs/durable.md), as the shards' migration 0042 added them
    if not exists (
        select from pg_catalog.pg_attribute as a
        where a.attrelid = 'jobctl.job_info'::regclass and a.attname = 'parked' and not a.attisdropped
    ) then
        alter type jobctl.job_info add attribute parked text, add attribute awaiting text;
    end if;
end
$$;
