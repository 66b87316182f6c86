-- jobctl.release_job: give back the lease of a job the worker will not finish (graceful shutdown).
-- The attempt does not count: the job is pending again, due now, attempt back to what it was.
-- Calls: _acting_tenants, _notify.
-- Locks: the _running row, then the job row; _notify's try-locks hint-busy and hint on the queue.
-- Writes: _running (delete), job (update), _event (insert: the claim and the release), _ready
-- (insert), _stat_delta (insert: running to pending).
create or replace function jobctl.release_job(job_id bigint, lease_epoch bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
declare
    v_run jobctl._running;
    v_now timestamptz := clock_timestamp();
    v_prio smallint;
begin
    if release_job.job_id is null or release_job.lease_epoch is null then
        raise exception using errcode = 'JC001', message = 'job_id and lease_epoch must not be NULL';
    end if;
    delete from jobctl._running as r
    where r.job_id = release_job.job_id and r.lease_epoch = release_job.lease_epoch
        and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]))  -- (another tenant's: fenced)
    returning * into v_run;
    if not found then
        return false;
    end if;
    update jobctl.job as j
    set state = 'pending', attempt = j.attempt - 1, run_at = v_now, progress = v_run.progress
    where j.job_id = v_run.job_id and j.created_at = v_run.created_at
    returning j.priority into v_prio;
    insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id)
    values
        (v_run.job_id, v_run.created_at, v_run.started_at, 'claimed', v_run.attempt, v_run.lease_epoch, v_run.worker_id),
        (v_run.job_id, v_run.created_at, v_now, 'released', v_run.attempt, v_run.lease_epoch, v_run.worker_id);
    -- (a job with a concurrency key keeps its place)
    insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, concurrency_key)
    values (v_run.queue, v_run.tenant_id, v_prio, v_now, v_run.job_id, v_run.created_at, v_run.concurrency_key);
    insert into jobctl._stat_delta (tenant_id, queue, running, pending) values (v_run.tenant_id, v_run.queue, -1, 1);
    perform jobctl._notify(array[v_run.queue]);
    return true;
end
$$;

comment on function jobctl.release_job(bigint, bigint) is
'Give back the lease of a job running under lease_epoch without finishing it (a worker shutting
down): the job is pending again, due now, and the interrupted attempt does not count. Returns true, or false when
fenced (not running under that epoch: nothing changed).
Errors: JC001 NULL job_id or lease_epoch.
Example:
select jobctl.release_job(42, 7);';
