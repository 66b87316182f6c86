-- jobctl.list_jobs: a tenant's jobs, newest first, keyset-paginated by job_id.
-- Reads: job through job_tenant_idx (tenant_id, job_id desc) in every partition, merged.
create or replace function jobctl.list_jobs(
    tenant_id text,
    state text default null,
    queue text default null,
    before_id bigint default null,
    max_rows integer default 100
)
returns setof jobctl.job_info
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_column
begin
    if list_jobs.tenant_id is null then
        raise exception using errcode = 'JC001', message = 'tenant_id must not be NULL',
            detail = 'field: tenant_id';
    end if;
    perform jobctl._require_tenant(list_jobs.tenant_id, 'jobs:read');
    if list_jobs.state is not null
       and list_jobs.state not in ('pending', 'running', 'completed', 'failed', 'dead', 'cancelled', 'waiting') then
        raise exception using errcode = 'JC001',
            message = format('state must be one of pending, running, completed, failed, dead, cancelled, waiting, not %s', list_jobs.state),
            detail = 'field: state';
    end if;
    if max_rows is null or max_rows < 1 then
        raise exception using errcode = 'JC001', message = format('max_rows must be at least 1, not %s', coalesce(max_rows::text, 'NULL')),
            detail = 'field: max_rows';
    end if;
    return query
    select
        v.job_id, v.tenant_id, v.queue, v.state, v.priority,
        -- a sealed payload opened with the caller's key, if it holds one (docs/security.md)
        case when v.payload ? '$jobctl_sealed' then jobctl._unseal(v.tenant_id, v.payload) else v.payload end,
        v.run_at, v.attempt, v.max_attempts, v.dedup_key, v.created_at, v.started_at, v.finished_at,
        v.last_error, v.result, v.worker_id, v.lease_expires_at, v.lease_epoch, v.timeout, v.backoff,
        v.concurrency_key, v.traceparent, v.depends_on, v.workflow_id, v.batch_id, null::jsonb,
        v.schedule_name, v.fire_time, v.progress, null::text, v.workflow_name,  -- (last_traceback: get_job's)
        v.parked, v.awaiting
    from jobctl._job_view as v
    where v.tenant_id = list_jobs.tenant_id
        and (list_jobs.state is null or v.state = list_jobs.state)
        and (list_jobs.queue is null or v.queue = list_jobs.queue)
        and (before_id is null or v.job_id < before_id)
    order by v.job_id desc
    limit least(max_rows, 1000);
end
$$;

comment on function jobctl.list_jobs(text, text, text, bigint, integer) is
'A tenant''s jobs as jobctl.job_info, newest first (job_id descending), optionally filtered by state
and queue. Pass the last job_id seen as before_id for the next page. max_rows is capped at 1,000.
Errors: JC001 a bad state, queue or max_rows, 42501 another tenant, JC008 jobctl.payload_keys is not JSON.
Example:
select job_id, state, run_at from jobctl.list_jobs(''acme'', state => ''dead'', max_rows => 50);
select job_id, state from jobctl.list_jobs(''acme'', before_id => 1001);  -- the next page';
