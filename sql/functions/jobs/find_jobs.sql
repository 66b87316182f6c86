-- jobctl.find_jobs: a page of the jobs a bulk filter matches (the filter of jobctl.count_jobs), hot
-- and archived, newest first, keyset-paginated by job_id: what the dashboard's job list shows. The
-- ids come from jobctl._filter_jobs (one home for the filter's predicates), the rows from
-- jobctl._job_view. Reads: job, job_archive, _running.
create or replace function jobctl.find_jobs(filter jsonb, before_id bigint default null, max_rows integer default 50)
returns setof jobctl.job_info
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_variable
declare
    v_filter jsonb := jobctl._job_filter(filter);
    v_tenants text[];
    v_ids bigint[];
begin
    if max_rows is null or max_rows not between 1 and 1000 then
        raise exception using errcode = 'JC001',
            message = format('max_rows must be between 1 and 1000, not %s', coalesce(max_rows::text, 'NULL')),
            detail = 'field: max_rows';
    end if;
    if before_id < 1 then
        raise exception using errcode = 'JC001', message = format('before_id must be NULL or positive, not %s', before_id),
            detail = 'field: before_id';
    end if;
    v_tenants := jobctl._acting_tenants('jobs:read');
    if v_filter ? 'tenant_id' then
        perform jobctl._require_tenant(v_filter ->> 'tenant_id', 'jobs:read', 'filter.tenant_id');
    end if;
    v_ids := array(select f.id from jobctl._filter_jobs(v_filter, v_tenants, null, before_id, max_rows, true, true) as f (id));
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
    where v.job_id = any(v_ids)
    order by v.job_id desc;
end
$$;

comment on function jobctl.find_jobs(jsonb, bigint, integer) is
'A page of the jobs a filter matches (the filter of jobctl.count_jobs: tenant_id, queue, state, job_ids,
dedup_key, subject_key, concurrency_key, created and finished time ranges, error_contains), hot and archived, as
jobctl.job_info, newest first: at most max_rows (1..1000, default 50) with job_id below before_id (pass the last
job_id of a page for the next). Only the caller''s tenants.
Errors: JC001 a bad filter (field filter.<key>), max_rows or before_id, 42501 filter.tenant_id is another tenant.
Example:
select job_id, state, last_error from jobctl.find_jobs(''{"tenant_id": "acme", "state": ["dead", "failed"],
    "error_contains": "timeout"}'');';
