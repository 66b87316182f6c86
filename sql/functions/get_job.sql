-- jobctl.get_job: one job with its live lease. Reads: job (every partition's primary key: the id
-- alone does not say which day it was created), _running.
create or replace function jobctl.get_job(job_id bigint)
returns setof jobctl.job_info
language sql
stable
as $$
    select v.* from jobctl._job_view as v where v.job_id = get_job.job_id
$$;

comment on function jobctl.get_job(bigint) is
'The job with this id as jobctl.job_info (state, attempts, lease, result, last error, ...); zero rows if unknown.';
