-- jobctl.cancel_job: cancel a pending, failed or running job. Whoever deletes a job's _ready,
-- _delayed or _running row owns its next transition, so cancel takes that row first (waiting for a
-- claimer or completer that holds it, then looking again), then updates the job row.
-- A job with a concurrency key gives its place to the key's next job (jobctl._admit).
-- Writes: _ready/_delayed/_held/_running (delete), job (update), _event.
create or replace function jobctl.cancel_job(job_id bigint)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_job jobctl.job;
    v_run jobctl._running;
    v_owned boolean;
    v_now timestamptz := clock_timestamp();
begin
    for i in 1..5 loop
        v_job := jobctl._find_job(cancel_job.job_id, 'jobs:cancel');
        if v_job.state in ('completed', 'dead', 'cancelled') then
            raise exception using errcode = 'JC010',
                message = format('job %s is %s; only pending, failed or running jobs can be cancelled', v_job.job_id, v_job.state),
                detail = 'field: job_id';
        end if;
        if v_job.state = 'running' then
            delete from jobctl._running as r where r.job_id = v_job.job_id returning * into v_run;
            v_owned := found;
            if v_owned then
                insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id)
                values (v_job.job_id, v_job.created_at, v_run.started_at, 'claimed', v_run.attempt, v_run.lease_epoch, v_run.worker_id);
            end if;
        else
            v_owned := jobctl._take_queue_row(v_job);
        end if;
        if v_owned then
            update jobctl.job as j set state = 'cancelled', finished_at = v_now
            where j.job_id = v_job.job_id and j.created_at = v_job.created_at;
            perform jobctl._count_finished(array[v_job.tenant_id]);
            if v_job.concurrency_key is not null then
                perform jobctl._admit(array[v_job.tenant_id], array[v_job.concurrency_key]);  -- its place, if it had one
            end if;
            -- the event names a lease epoch only when the cancel revoked that (running) lease
            insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id)
            values (v_job.job_id, v_job.created_at, v_now, 'cancelled', coalesce(v_run.attempt, v_job.attempt),
                v_run.lease_epoch, v_run.worker_id);
            return 'cancelled';
        end if;
        -- the job moved on between our read and our delete (claimed, completed, reaped): look again
    end loop;
    raise exception using errcode = '40001', message = format('job %s kept changing state; try again', cancel_job.job_id);
end
$$;

comment on function jobctl.cancel_job(bigint) is
'Cancel a pending, failed or running job. A running job''s lease is revoked: its heartbeat answers
cancelled and its completion is fenced. Returns cancelled.
Errors: P0002 no job has this id (or it is another tenant''s), JC010 the job is already completed, dead or cancelled,
or in the archive, 40001 the job changed state five times while the call tried (retry the call).
Example:
select jobctl.cancel_job(42);';
