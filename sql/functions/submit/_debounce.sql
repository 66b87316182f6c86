-- jobctl._debounce: a repeat of a dedup key in replace or preserve_run_at mode (p_spec) updates its
-- holder while the holder is pending: the payload always, run_at too in replace mode (the repeat's,
-- or now). Moving run_at moves the job's queue row, taken first as every writer does (whoever deletes
-- it owns the job's next transition): a claimer that got there first wins, and the repeat changes
-- nothing. Returns whether it updated the holder. The caller holds the key's dedup lock.
-- Writes: job (update); to move run_at, _ready/_delayed/_held (delete, insert), _stat_delta.
create or replace function jobctl._debounce(p_job_id bigint, p_spec jobctl._job_spec)
returns boolean
language plpgsql
set jit = off
as $$
declare
    v_now timestamptz := now();
    v_job jobctl.job;
    v_run_at timestamptz;
begin
    select * into v_job from jobctl.job as j
    where j.job_id = p_job_id and j.tenant_id = p_spec.tenant_id and j.state = 'pending';
    if not found then
        return false;
    end if;
    v_run_at := case when p_spec.dedup_mode = 'replace' then coalesce(p_spec.run_at, v_now) else v_job.run_at end;
    if v_run_at = v_job.run_at then
        update jobctl.job as j set payload = p_spec.payload
        where j.job_id = v_job.job_id and j.created_at = v_job.created_at and j.state = 'pending';
        return found;
    end if;
    if not jobctl._take_queue_row(v_job) then
        return false;
    end if;
    update jobctl.job as j set payload = p_spec.payload, run_at = v_run_at
    where j.job_id = v_job.job_id and j.created_at = v_job.created_at;
    if v_run_at > v_now then
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority, concurrency_key)
        values (v_run_at, v_job.job_id, v_job.created_at, v_job.queue, v_job.tenant_id, v_job.priority, v_job.concurrency_key);
        insert into jobctl._stat_delta (tenant_id, queue, delayed) values (v_job.tenant_id, v_job.queue, 1);
        if v_job.concurrency_key is not null then
            perform jobctl._admit(array[v_job.tenant_id], array[v_job.concurrency_key]);  -- its place, if it had one
        end if;
    elsif v_job.concurrency_key is not null then
        insert into jobctl._held (tenant_id, concurrency_key, run_at, job_id, created_at, queue, priority)
        values (v_job.tenant_id, v_job.concurrency_key, v_run_at, v_job.job_id, v_job.created_at, v_job.queue, v_job.priority);
        insert into jobctl._stat_delta (tenant_id, queue, pending) values (v_job.tenant_id, v_job.queue, 1);
        perform jobctl._admit(array[v_job.tenant_id], array[v_job.concurrency_key]);
    else
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        values (v_job.queue, v_job.tenant_id, v_job.priority, v_run_at, v_job.job_id, v_job.created_at);
        insert into jobctl._stat_delta (tenant_id, queue, pending) values (v_job.tenant_id, v_job.queue, 1);
        perform jobctl._notify(array[v_job.queue]);
    end if;
    return true;
end
$$;
