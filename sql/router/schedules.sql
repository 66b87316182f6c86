-- Schedules through the router: on the tenant's shard, whose own pg_cron expands them.

create or replace function jobctl.put_schedule(
    tenant_id text,
    name text,
    cron text,
    queue text,
    payload jsonb,
    priority integer default 0,
    catch_up integer default 1,
    skip_overlap boolean default false,
    time_zone text default 'UTC'
)
returns void
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id, true);
$$;

create or replace function jobctl.drop_schedule(tenant_id text, name text)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;

create or replace function jobctl.list_schedules(tenant_id text default null)
returns table (
    tenant_id text, name text, cron text, queue text, payload jsonb, priority integer, catch_up integer,
    skip_overlap boolean, next_fire_at timestamptz, last_fire_at timestamptz, last_job_id bigint,
    created_at timestamptz, updated_at timestamptz, paused boolean, time_zone text
)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shards(tenant_id);
$$;

create or replace function jobctl.pause_schedule(tenant_id text, name text)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;

create or replace function jobctl.resume_schedule(tenant_id text, name text)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;

create or replace function jobctl.run_schedule(tenant_id text, name text)
returns bigint
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;

create or replace function jobctl.schedule_runs(
    tenant_id text,
    name text,
    before_id bigint default null,
    max_rows integer default 100
)
returns table (
    job_id bigint, fire_time timestamptz, state text, attempt integer, created_at timestamptz,
    started_at timestamptz, finished_at timestamptz, last_error text
)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;
