-- Reading and operating on jobs through the router: a call by job id runs on the job's shard
-- (jobctl_router.job_shard: its job_route row, else id % 64), a call by tenant on the tenant's.

create or replace function jobctl.get_job(job_id bigint)
returns setof jobctl.job_info
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.locate_job(job_id bigint)
returns table (job jobctl.job_info, files jsonb)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.job_history(job_id bigint)
returns table (at timestamptz, event text, attempt integer, lease_epoch bigint, worker_id text, detail text)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.cancel_job(job_id bigint)
returns text
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.retry_job(job_id bigint)
returns text
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.get_batch(batch_id bigint)
returns table (
    batch_id bigint, tenant_id text, created_at timestamptz, size integer, finished_at timestamptz,
    counts jsonb, on_finish bigint, on_success bigint, on_discard bigint
)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(batch_id);
$$;

-- a tenant's jobs, on its shard (a tenant moved away keeps its finished history on the old shard:
-- get_job finds those by id)
create or replace function jobctl.list_jobs(
    tenant_id text,
    state text default null,
    queue text default null,
    before_id bigint default null,
    max_rows integer default 100
)
returns setof jobctl.job_info
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;

-- jobctl_router._find_jobs: find_jobs on the filter's tenant's shard, or on every shard
create or replace function jobctl_router._find_jobs(filter jsonb, before_id bigint, max_rows integer)
returns setof jobctl.job_info
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shards(filter ->> 'tenant_id');
    select * from jobctl.find_jobs(filter, before_id, max_rows);
$$;

-- the shards' pages merged: the newest max_rows of them (each shard returns up to max_rows)
create or replace function jobctl.find_jobs(filter jsonb, before_id bigint default null, max_rows integer default 50)
returns setof jobctl.job_info
language sql
volatile
as $$
    select * from jobctl_router._find_jobs(filter, before_id, max_rows) as j
    order by j.job_id desc
    limit greatest(max_rows, 1)
$$;
