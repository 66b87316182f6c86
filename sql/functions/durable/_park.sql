-- jobctl._park: the end of an attempt that gives up its lease without failing, shared by sleep_job,
-- await_event and await_job. The caller has deleted the job's _running row (that deletion is what
-- makes it the one to park the job) and passes it. The attempt does not count (as release_job's),
-- the job keeps its last progress, and its token is, by p_parked:
-- - 'sleep' or 'event': a _delayed row so marked: the job is pending, due at p_until;
-- - 'job': a _waiting row with one on_end edge from the child p_child, which it waits for as a
--   workflow's child waits for its parents: the job is waiting, released by the child's end.
-- A job with a concurrency key gives its place to the key's next job (jobctl._admit), as a retry's
-- backoff does; the tenant's and the queue's running places are free with the _running row. The
-- counters move it from running to delayed or waiting.
-- Calls: _admit (a keyed job). Locks: the job row; through _admit the key lock.
-- Writes: job (update), _event (insert: the claim and p_parked's event), _delayed or _waiting and
-- _edge, _stat_delta (insert); through _admit _held (delete), _ready (insert).
create or replace function jobctl._park(
    p_run jobctl._running, p_until timestamptz, p_parked text, p_detail text, p_child bigint default null
)
returns void
language plpgsql
as $$
declare
    v_job jobctl.job;
begin
    update jobctl.job as j
    set state = case p_parked when 'job' then 'waiting' else 'pending' end, attempt = j.attempt - 1,
        run_at = p_until, progress = p_run.progress
    where j.job_id = p_run.job_id and j.created_at = p_run.created_at
    returning j.* into v_job;
    insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id, detail)
    values
        (p_run.job_id, p_run.created_at, p_run.started_at, 'claimed', p_run.attempt, p_run.lease_epoch, p_run.worker_id, null),
        (p_run.job_id, p_run.created_at, clock_timestamp(), case p_parked when 'sleep' then 'slept' else 'awaiting' end,
            p_run.attempt, p_run.lease_epoch, p_run.worker_id, p_detail);
    if p_parked = 'job' then
        insert into jobctl._waiting (job_id, created_at, tenant_id, queue, priority, run_at, concurrency_key, cancel_on_failure)
        values (p_run.job_id, p_run.created_at, p_run.tenant_id, p_run.queue, v_job.priority, p_until, p_run.concurrency_key, false);
        insert into jobctl._edge (parent_id, child_id, on_end) values (p_child, p_run.job_id, true);
        insert into jobctl._stat_delta (tenant_id, queue, running, waiting) values (p_run.tenant_id, p_run.queue, -1, 1);
    else
        insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority, concurrency_key, retry, parked)
        values (p_until, p_run.job_id, p_run.created_at, p_run.queue, p_run.tenant_id, v_job.priority, p_run.concurrency_key, false, p_parked);
        insert into jobctl._stat_delta (tenant_id, queue, running, delayed) values (p_run.tenant_id, p_run.queue, -1, 1);
    end if;
    if p_run.concurrency_key is not null then
        perform jobctl._admit(array[p_run.tenant_id], array[p_run.concurrency_key]);
    end if;
end
$$;
