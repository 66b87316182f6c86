-- jobctl._take_queue_row: delete a waiting job's _ready or _delayed row, found by its exact key
-- (the job row's queue, tenant, priority and run_at); true if this call deleted it and so owns the
-- job's next transition, false if a claimer, a promotion or another call got there first.
create or replace function jobctl._take_queue_row(p_job jobctl.job)
returns boolean
language plpgsql
as $$
begin
    delete from jobctl._ready as r
    where r.queue = p_job.queue and r.tenant_id = p_job.tenant_id and r.priority = p_job.priority
        and r.run_at = p_job.run_at and r.job_id = p_job.job_id;
    if found then
        return true;
    end if;
    delete from jobctl._delayed as d where d.run_at = p_job.run_at and d.job_id = p_job.job_id;
    if found or p_job.concurrency_key is null then
        return found;
    end if;
    delete from jobctl._held as h
    where h.tenant_id = p_job.tenant_id and h.concurrency_key = p_job.concurrency_key and h.run_at = p_job.run_at
        and h.job_id = p_job.job_id;
    return found;
end
$$;
