-- Tenants through the router: each call on the tenant's shard (put_tenant places a new tenant);
-- lists and stats without a tenant gather every shard's rows.

create or replace function jobctl.put_tenant(
    tenant_id text,
    weight integer default 1,
    max_pending bigint default null,
    max_running integer default null,
    submit_rate numeric default null,
    submit_burst integer default null,
    claim_rate numeric default null,
    claim_burst integer default null,
    encrypt_payloads boolean default false
)
returns void
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id, true);
$$;

create or replace function jobctl.pause_tenant(tenant_id text, paused boolean default true)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;

create or replace function jobctl.put_concurrency_limit(tenant_id text, concurrency_key text, max_running integer)
returns void
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id, true);
$$;

create or replace function jobctl.list_concurrency_limits(tenant_id text)
returns table (concurrency_key text, max_running integer, active bigint, waiting bigint)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;

create or replace function jobctl.list_tenants()
returns table (
    tenant_id text, weight integer, max_pending bigint, max_running integer, submit_rate numeric, submit_burst integer,
    claim_rate numeric, claim_burst integer, paused boolean, created_at timestamptz, updated_at timestamptz,
    encrypt_payloads boolean
)
language plproxy
as $$
    cluster 'jobctl';
    run on all;
$$;

create or replace function jobctl.stats(tenant_id text default null, queue text default null)
returns table (tenant_id text, queue text, state text, jobs bigint, oldest_run_at timestamptz)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shards(tenant_id);
$$;
