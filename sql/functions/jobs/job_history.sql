-- jobctl.job_history: every transition of a job, oldest first. Off-path transitions are stored in
-- _event; the submission, the current attempt's claim and the completion are read from the job
-- row, which holds them exactly, so the common path writes no history rows.
create or replace function jobctl.job_history(job_id bigint)
returns table (at timestamptz, event text, attempt integer, lease_epoch bigint, worker_id text, detail text)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    with j as (
        -- another tenant's job is as unknown as a missing one
        select * from (
            select * from jobctl.job as j where j.job_id = job_history.job_id
            union all
            select * from jobctl.job_archive as j where j.job_id = job_history.job_id
        ) as j
        where j.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[j.tenant_id]))
    )
    select h.at, h.event, h.attempt, h.lease_epoch, h.worker_id, h.detail
    from (
        select j.created_at as at, 'submitted' as event, 0 as attempt, null::bigint as lease_epoch,
            null::text as worker_id, null::text as detail, 0 as seq
        from j
        union all
        select e.at, e.event, e.attempt, e.lease_epoch, e.worker_id, e.detail, 1
        from jobctl._event as e where e.job_id = job_history.job_id and exists (select from j)
        union all
        select e.at, e.event, e.attempt, e.lease_epoch, e.worker_id, e.detail, 1
        from jobctl._event_archive as e where e.job_id = job_history.job_id and exists (select from j)
        union all
        select j.started_at, 'claimed', j.attempt, j.lease_epoch, j.worker_id, null, 2
        from j where j.state in ('running', 'completed')
        union all
        select j.finished_at, 'completed', j.attempt, j.lease_epoch, j.worker_id, null, 3
        from j where j.state = 'completed'
    ) as h
    order by h.at, h.seq
$$;

comment on function jobctl.job_history(bigint) is
'Every transition of a job, oldest first: submitted, then claimed / completed / failed / dead /
cancelled / retried / released events with the attempt, lease epoch and worker of each. Zero rows for an unknown
id or another tenant''s job.
Errors: none.
Example:
select at, event, attempt, worker_id, detail from jobctl.job_history(42);';
