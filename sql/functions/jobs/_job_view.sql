-- jobctl._job_view: every job, hot and archived, with its live lease (the _running row of its
-- current epoch). get_job and list_jobs read it. A view is re-defined over time, so it lives in the
-- re-applied layer, in this one file, not in the migrations that changed it (0001, 0008, 0010,
-- 0019, 0027, 0039, 0042). CREATE OR REPLACE VIEW may only add columns at the end: dropping or retyping one
-- needs a migration that drops the view first (this file then creates it again). Columns are added
-- at the end only, after progress's case (hence the noqa).
create or replace view jobctl._job_view as
select  -- noqa: ST06
    j.job_id,
    j.tenant_id,
    j.queue,
    j.state,
    j.priority::integer as priority,
    j.payload,
    j.run_at,
    j.attempt,
    j.max_attempts,
    j.dedup_key,
    j.created_at,
    j.started_at,
    j.finished_at,
    j.last_error,
    j.result,
    j.worker_id,
    r.lease_expires_at,
    j.lease_epoch,
    j.timeout,
    j.backoff,
    j.concurrency_key,
    j.traceparent,
    j.depends_on,
    j.workflow_id,
    j.batch_id,
    j.schedule_name,
    j.fire_time,
    -- a running job's: its attempt's, from its lease row; else the last attempt's
    case when j.state = 'running' then r.progress else j.progress end as progress,
    j.last_traceback,
    j.workflow_name,
    -- a parked job (docs/durable.md): why, by its token, probed by its key
    case
        when j.state = 'pending'
            then (
                select d.parked from jobctl._delayed as d
                where d.run_at = j.run_at and d.job_id = j.job_id
            )
        when j.state = 'waiting' then (
            select min('job') from jobctl._spawn as s
            inner join jobctl._edge as e on e.parent_id = s.child_id and e.child_id = j.job_id
            where s.parent_id = j.job_id
        )
    end as parked,
    case
        when j.state = 'pending'
            then (
                select min(a.event) from jobctl._awaiting as a
                inner join jobctl._delayed as d on d.run_at = a.run_at and d.job_id = a.job_id and d.parked = 'event'
                where a.job_id = j.job_id
            )
        when j.state = 'waiting' then (
            select min(s.child_id)::text from jobctl._spawn as s
            inner join jobctl._edge as e on e.parent_id = s.child_id and e.child_id = j.job_id
            where s.parent_id = j.job_id
        )
    end as awaiting
from (
    select * from jobctl.job
    union all
    select * from jobctl.job_archive
) as j
left join jobctl._running as r on r.job_id = j.job_id and r.lease_epoch = j.lease_epoch;
