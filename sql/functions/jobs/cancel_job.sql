-- jobctl.cancel_job: cancel a pending, failed or running job. The rules are jobctl._cancel's
-- (shared with cancel_jobs); this function turns its outcomes into the contract's errors.
-- Writes: as jobctl._cancel.
create or replace function jobctl.cancel_job(job_id bigint)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_r record;
begin
    select * into v_r from jobctl._cancel(cancel_job.job_id, jobctl._acting_tenants('jobs:cancel'));
    case v_r.outcome
        when 'cancelled' then
            return 'cancelled';
        when 'missing' then
            perform jobctl._find_job(cancel_job.job_id, 'jobs:cancel');  -- P0002, or JC010 for an archived job
            raise exception using errcode = 'P0002', message = format('job %s not found', cancel_job.job_id),
                detail = 'field: job_id';
        when 'state' then
            raise exception using errcode = 'JC010',
                message = format('job %s is %s; only pending, failed or running jobs can be cancelled', (v_r.job).job_id, (v_r.job).state),
                detail = 'field: job_id';
        else
            raise exception using errcode = '40001', message = format('job %s kept changing state; try again', cancel_job.job_id);
    end case;
end
$$;

comment on function jobctl.cancel_job(bigint) is
'Cancel a pending, waiting, failed or running job. A running job''s lease is revoked: its heartbeat answers
cancelled and its completion is fenced. Returns cancelled.
Errors: P0002 no job has this id (or it is another tenant''s), JC010 the job is already completed, dead or cancelled,
or in the archive, 40001 the job changed state five times while the call tried (retry the call).
Example:
select jobctl.cancel_job(42);';
