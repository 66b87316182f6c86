-- jobctl.get_job: one job with its live lease. Reads: job (every partition's primary key: the id
-- alone does not say which day it was created), _running.
create or replace function jobctl.get_job(job_id bigint)
returns setof jobctl.job_info
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    -- another tenant's job is as unknown as a missing one
    select
        v.job_id, v.tenant_id, v.queue, v.state, v.priority,
        -- a sealed payload opened with the caller's key, if it holds one (docs/security.md)
        case when v.payload ? '$jobctl_sealed' then jobctl._unseal(v.tenant_id, v.payload) else v.payload end,
        v.run_at, v.attempt, v.max_attempts, v.dedup_key, v.created_at, v.started_at, v.finished_at,
        v.last_error, v.result, v.worker_id, v.lease_expires_at, v.lease_epoch, v.timeout, v.backoff,
        v.concurrency_key, v.traceparent, v.depends_on, v.workflow_id, v.batch_id,
        -- NULL past the bound (8 MiB of JSON text together), where parent_results refuses
        (jobctl._parent_results(v.tenant_id, v.depends_on)).results,
        v.schedule_name, v.fire_time, v.progress, v.last_traceback, v.workflow_name, v.parked, v.awaiting
    from jobctl._job_view as v
    where v.job_id = get_job.job_id
        and v.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[v.tenant_id]))
$$;

comment on function jobctl.get_job(bigint) is
'The job with this id as jobctl.job_info (state, attempts, lease, result, last error, ...), from hot
storage or the archive; zero rows if unknown or another tenant''s. schedule_name and fire_time: the schedule
and fire time a schedule''s run came from (NULL for other jobs). progress: a running job''s latest (stored by
jobctl.heartbeat), else its last attempt''s last. last_traceback: the traceback fail_job was given with the
failure last_error describes (NULL: none; list_jobs and find_jobs leave it NULL). workflow_name: the name
submit_workflow gave the job. parked: a job that gave up its lease (docs/durable.md), sleep, event or
job (await_job), and awaiting: the event''s name or the child''s id (NULL otherwise; in the lists too).
Errors: JC008 jobctl.payload_keys is not JSON.
Example:
select job_id, state, attempt, last_error from jobctl.get_job(42);';
