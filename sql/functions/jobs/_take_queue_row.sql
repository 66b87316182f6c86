-- jobctl._take_queue_row: delete an unstarted job's _ready, _delayed or _waiting row, found by its exact key
-- (the job row's queue, tenant, priority and run_at); true if this call deleted it and so owns the
-- job's next transition, false if a claimer, a promotion or another call got there first. The
-- counters lose the job from where it was (pending, delayed, retrying or waiting); the caller counts where
-- it goes. A job parked on an event (await_event) leaves its wait with its token. Writes: _ready,
-- _delayed, _held or _waiting (delete), _awaiting (delete), _stat_delta (insert).
create or replace function jobctl._take_queue_row(p_job jobctl.job)
returns boolean
language plpgsql
as $$
declare
    v_retry boolean;
    v_parked text;
begin
    if p_job.state = 'waiting' then
        -- its edges first, as a parent's end takes its edges before a child's _waiting row
        delete from jobctl._edge as e where e.child_id = p_job.job_id;
        delete from jobctl._waiting as w where w.job_id = p_job.job_id;
        if not found then
            return false;
        end if;
        insert into jobctl._stat_delta (tenant_id, queue, waiting) values (p_job.tenant_id, p_job.queue, -1);
        return true;
    end if;
    delete from jobctl._ready as r
    where r.queue = p_job.queue and r.tenant_id = p_job.tenant_id and r.priority = p_job.priority
        and r.run_at = p_job.run_at and r.job_id = p_job.job_id;
    if not found then
        delete from jobctl._delayed as d where d.run_at = p_job.run_at and d.job_id = p_job.job_id
        returning d.retry, d.parked into v_retry, v_parked;
        if found then
            if v_parked = 'event' then
                delete from jobctl._awaiting as a where a.job_id = p_job.job_id;
            end if;
            insert into jobctl._stat_delta (tenant_id, queue, delayed, retrying)
            values (p_job.tenant_id, p_job.queue, case when not v_retry then -1 end, case when v_retry then -1 end);
            return true;
        end if;
        if p_job.concurrency_key is null then
            return false;
        end if;
        delete from jobctl._held as h
        where h.tenant_id = p_job.tenant_id and h.concurrency_key = p_job.concurrency_key and h.run_at = p_job.run_at
            and h.job_id = p_job.job_id;
        if not found then
            return false;
        end if;
    end if;
    insert into jobctl._stat_delta (tenant_id, queue, pending) values (p_job.tenant_id, p_job.queue, -1);
    return true;
end
$$;
