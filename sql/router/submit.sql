-- Submitting through the router: each call runs on the shard of its tenant (placed on first use,
-- routing.sql). Same signatures as the shards' functions (sql/functions/submit/submit_job.sql and
-- submit_jobs.sql).

create or replace function jobctl.submit_job(
    tenant_id text,
    queue text,
    payload jsonb,
    priority integer default 0,
    run_at timestamptz default null,
    dedup_key text default null,
    max_attempts integer default null,
    backoff jsonb default null,
    timeout interval default null,
    subject_key text default null,
    concurrency_key text default null,
    traceparent text default null,
    depends_on bigint[] default null,
    on_parent_failure text default 'cancel',
    dedup_states text[] default null,
    dedup_period interval default null,
    dedup_mode text default null
)
returns table (job_id bigint, duplicate boolean)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id, true);
$$;

-- one tenant's jobs a call (jobctl_router.jobs_shard refuses a mix: JC001)
create or replace function jobctl.submit_jobs(jobs jsonb)
returns table (job_id bigint, duplicate boolean)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.jobs_shard(jobs);
$$;
