-- jobctl.schedule_runs: the jobs a schedule enqueued (its runs, and the runs by hand of
-- run_schedule), newest first, keyset-paginated by job_id, hot and archived; also after the
-- schedule was dropped. Only for the caller's tenants (jobs:read: the runs are jobs).
-- Reads: job and job_archive through job_schedule_idx / job_archive_schedule_idx (tenant_id,
-- schedule_name, job_id desc) in every partition, merged; _running.
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
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_variable
begin
    if tenant_id is null or name is null then
        raise exception using errcode = 'JC001',
            message = format('%s must not be NULL', case when tenant_id is null then 'tenant_id' else 'name' end),
            detail = format('field: %s', case when tenant_id is null then 'tenant_id' else 'name' end);
    end if;
    perform jobctl._require_tenant(tenant_id, 'jobs:read');
    if max_rows is null or max_rows not between 1 and 1000 then
        raise exception using errcode = 'JC001',
            message = format('max_rows must be between 1 and 1000, not %s', coalesce(max_rows::text, 'NULL')),
            detail = 'field: max_rows',
            hint = 'Pass the last job_id of a page as before_id for the next.';
    end if;
    return query
    select v.job_id, v.fire_time, v.state, v.attempt, v.created_at, v.started_at, v.finished_at, v.last_error
    from jobctl._job_view as v
    where v.tenant_id = schedule_runs.tenant_id
        and v.schedule_name = schedule_runs.name
        and (before_id is null or v.job_id < before_id)
    order by v.job_id desc
    limit max_rows;
end
$$;

comment on function jobctl.schedule_runs(text, text, bigint, integer) is
'The runs of a schedule, newest first: each job its expander enqueued (fire_time: the fire time of the
expression it stands for) or run_schedule submitted (fire_time: when it was run), with its state, attempt, times
and last error; hot and archived, also after the schedule was dropped. At most max_rows (1..1000, default 100)
with job_id below before_id (pass the last job_id of a page for the next). The runs are jobs: jobs:read access to
the tenant.
Errors: JC001 a NULL tenant_id or name, or max_rows out of range; 42501 another tenant.
Example:
select job_id, fire_time, state, finished_at from jobctl.schedule_runs(''acme'', ''nightly-report'', max_rows => 10);';
