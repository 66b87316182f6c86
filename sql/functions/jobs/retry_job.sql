-- jobctl.retry_job: make a failed, dead or cancelled job pending and due now; attempt is kept,
-- max_attempts rises to at least attempt + 1. The rules are jobctl._retry's (shared with
-- retry_jobs); this function turns its outcomes into the contract's errors.
-- Writes: as jobctl._retry.
create or replace function jobctl.retry_job(job_id bigint)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_r record;
begin
    select * into v_r from jobctl._retry(retry_job.job_id, jobctl._acting_tenants('jobs:retry'), false);
    case v_r.outcome
        when 'retried' then
            return 'pending';
        when 'missing' then
            perform jobctl._find_job(retry_job.job_id, 'jobs:retry');  -- P0002, or JC010 for an archived job
            raise exception using errcode = 'P0002', message = format('job %s not found', retry_job.job_id),
                detail = 'field: job_id';
        when 'state' then
            raise exception using errcode = 'JC010',
                message = format('job %s is %s; only failed, dead or cancelled jobs can be retried', (v_r.job).job_id, (v_r.job).state),
                detail = 'field: job_id';
        else
            raise exception using errcode = '40001', message = format('job %s kept changing state; try again', retry_job.job_id);
    end case;
end
$$;

comment on function jobctl.retry_job(bigint) is
'Make a failed, dead or cancelled job pending and due now; attempt is kept and max_attempts raised
to at least attempt + 1. Returns pending. A retry counts against the tenant''s max_pending and submit rate as a
submit does.
Errors: P0002 no job has this id (or it is another tenant''s), JC010 the job is not failed, dead or cancelled, or is
in the archive, JC004 over max_pending, JC005 over the submit rate, 40001 the job changed state five times while
the call tried (retry the call).
Example:
select jobctl.retry_job(42);';
