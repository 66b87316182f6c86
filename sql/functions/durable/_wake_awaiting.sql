-- jobctl._wake_awaiting: make the tenant's jobs parked on any of p_events (jobctl.await_event) due at
-- p_now, once their events are recorded in _emitted (by jobctl.emit_event, or carried by a tenant
-- move: jobctl._move_in_events, _move_in_jobs). The caller holds the events' locks (jobctl._wait_lock
-- 'event'). The job rows are locked first, as a tenant move's page takes them (jobctl._move_out_jobs:
-- the job rows, then their queue and wait rows), so the two cannot deadlock; a job the page took is
-- gone from here, woken where it lands. Each wait is deleted and its job's _delayed token (found by
-- its key; one a timeout promoted, or a cancel took, is gone) made due at p_now, then promoted by the
-- next claim. The woken job's await_event reads the payload from _emitted. Returns how many it woke,
-- and sends the workers' hint for their queues.
-- Calls: _notify. Locks: the job rows, then the _awaiting rows, the jobs' _delayed rows.
-- Writes: _awaiting (delete), _delayed and job (update), _event (insert: woken).
create or replace function jobctl._wake_awaiting(p_tenant_id text, p_events text[], p_now timestamptz)
returns integer
language plpgsql
as $$
declare
    v_woken integer;
    v_queues text[];
begin
    perform from jobctl.job as j
    inner join jobctl._awaiting as a on a.job_id = j.job_id and a.job_created_at = j.created_at
    where a.tenant_id = p_tenant_id and a.event = any(p_events)
    order by j.job_id
    for update of j;
    with gone as (
        delete from jobctl._awaiting as a
        where a.tenant_id = p_tenant_id and a.event = any(p_events)
        returning a.job_id, a.run_at, a.event
    ),
    due as (
        update jobctl._delayed as d set run_at = p_now, parked = null
        from gone as g
        where d.run_at = g.run_at and d.job_id = g.job_id and d.parked = 'event'
        returning d.job_id, d.created_at, d.queue, g.event
    ),
    woken as (
        update jobctl.job as j set run_at = p_now
        from due as d
        where j.job_id = d.job_id and j.created_at = d.created_at
        returning j.job_id, j.created_at, j.attempt, j.lease_epoch, j.queue, d.event
    ),
    history as (
        insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, detail)
        select w.job_id, w.created_at, p_now, 'woken', w.attempt + 1, w.lease_epoch, w.event
        from woken as w
    )
    select count(*), array_agg(distinct w.queue) into v_woken, v_queues from woken as w;
    if v_woken > 0 then
        perform jobctl._notify(v_queues);
    end if;
    return v_woken;
end
$$;
