-- The worker's calls through the router. A claim runs on the next shard in turn (round robin over the
-- shards for all callers: jobctl_router.claim_shard); every call about a claimed job on its shard.
-- A completion through the router commits on the shard in a transaction of its own: it cannot join the
-- handler's transaction, so workers that want exactly-once effects connect to the shards themselves
-- (`jobctl worker --dsn A --dsn B ...`; docs/operations.md, Sharding).

-- claim_job's flush parameter came with a later shard schema: a router installed before it has
-- the old signature, which a new one would not replace
drop function if exists jobctl.claim_job(text, text[], integer, interval);
create or replace function jobctl.claim_job(
    worker_id text,
    queues text[] default null,
    max_jobs integer default 1,
    lease interval default '30 seconds',
    flush boolean default true
)
returns table (
    job_id bigint,
    tenant_id text,
    queue text,
    payload jsonb,
    priority integer,
    attempt integer,
    max_attempts integer,
    lease_epoch bigint,
    lease_expires_at timestamptz,
    timeout interval,
    traceparent text
)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.claim_shard();
$$;

create or replace function jobctl.heartbeat(
    job_id bigint, lease_epoch bigint, extend interval default '30 seconds', progress jsonb default null
)
returns text
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.complete_job(job_id bigint, lease_epoch bigint, result jsonb default null)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

-- jobctl_router._complete_jobs: the batch split by shard, element by element (PL/Proxy SPLIT)
create or replace function jobctl_router._complete_jobs(job_ids bigint[], lease_epochs bigint[], results jsonb[])
returns table (job_id bigint, completed boolean)
language plproxy
as $$
    cluster 'jobctl';
    split job_ids, lease_epochs, results;
    run on jobctl_router.job_shard(job_ids);
    select * from jobctl.complete_jobs(job_ids, lease_epochs, results);
$$;

-- rows by shard, not in the order of job_ids
create or replace function jobctl.complete_jobs(
    job_ids bigint[], lease_epochs bigint[], results jsonb[] default null
)
returns table (job_id bigint, completed boolean)
language sql
volatile
as $$
    select * from jobctl_router._complete_jobs(
        job_ids, lease_epochs, coalesce(results, array_fill(null::jsonb, array[cardinality(job_ids)]))
    )
$$;

-- the shards' fail_job gained a traceback, then a cause (0040_fail_job_cause): a new
-- signature is a new function
drop function if exists jobctl.fail_job(bigint, bigint, text, boolean);
drop function if exists jobctl.fail_job(bigint, bigint, text, boolean, text);
create or replace function jobctl.fail_job(
    job_id bigint, lease_epoch bigint, error text, retryable boolean default true, traceback text default null,
    cause text default null
)
returns text
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.release_job(job_id bigint, lease_epoch bigint)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

-- durable execution (docs/durable.md): each call about a claimed job on its shard. A save through the
-- router commits on the shard in a transaction of its own, as a completion does: it cannot join the
-- handler's transaction (transaction=True steps need a worker connected to the shards)
create or replace function jobctl.save_step(job_id bigint, lease_epoch bigint, step text, result jsonb default null)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.sleep_job(job_id bigint, lease_epoch bigint, until timestamptz)
returns boolean
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.await_event(job_id bigint, lease_epoch bigint, event text, timeout interval default null)
returns table (outcome text, payload jsonb)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.await_job(
    job_id bigint, lease_epoch bigint, step text, child jsonb, cancel_with_parent boolean default true
)
returns table (outcome text, child_id bigint, state text, result jsonb, error text)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

create or replace function jobctl.job_steps(job_id bigint)
returns table (step text, result jsonb, saved_at timestamptz, attempt integer)
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.job_shard(job_id);
$$;

-- an event is its tenant's: emitted on the tenant's shard, where its jobs wait
create or replace function jobctl.emit_event(tenant_id text, event text, payload jsonb default null)
returns integer
language plproxy
as $$
    cluster 'jobctl';
    run on jobctl_router.tenant_shard(tenant_id);
$$;
