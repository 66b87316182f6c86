-- jobctl.get_job: one job with its live lease. Reads: job (every partition's primary key: the id
-- alone does not say which day it was created), _running.
create or replace function jobctl.get_job(job_id bigint)
returns setof jobctl.job_info
language sql
stable
as $$
    select
        j.job_id, j.tenant_id, j.queue, j.state, j.priority::integer, j.payload, j.run_at, j.attempt,
        j.max_attempts, j.dedup_key, j.created_at, j.started_at, j.finished_at, j.last_error, j.result,
        j.worker_id, r.lease_expires_at, j.lease_epoch, j.timeout, j.backoff
    from jobctl.job as j
    left join jobctl._running as r on r.job_id = j.job_id and r.lease_epoch = j.lease_epoch
    where j.job_id = get_job.job_id
$$;

comment on function jobctl.get_job(bigint) is
'The job with this id as jobctl.job_info (state, attempts, lease, result, last error, ...); zero rows if unknown.';
