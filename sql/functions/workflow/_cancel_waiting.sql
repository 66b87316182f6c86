-- jobctl._cancel_waiting: cancel waiting jobs that will not run (a dead or cancelled parent's
-- children under cancel_on_failure, a batch's callbacks that do not fire), with p_reason as their
-- last error; each one's own children then follow their policy (jobctl._parents_ended), so a
-- failure cancels everything downstream that asked for it. Jobs another transaction took meanwhile
-- are skipped (whoever deletes the _waiting row owns the job). Returns how many it cancelled.
-- Writes: _waiting, _edge (delete), job (update), _event, _stat_delta.
create or replace function jobctl._cancel_waiting(p_ids bigint[], p_reason text)
returns integer
language plpgsql
set jit = off
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_ids bigint[];
    v_tenants text[];
begin
    -- their edges first, as a parent's end takes its edges before a child's _waiting row (an edge
    -- left by a job another transaction took meanwhile went with that job: nothing is lost)
    delete from jobctl._edge as e where e.child_id = any(p_ids);
    with taken as (
        delete from jobctl._waiting as w where w.job_id = any(p_ids)
        returning w.job_id, w.created_at, w.tenant_id, w.queue
    ),
    changed as (
        update jobctl.job as j
        set state = 'cancelled', finished_at = v_now, last_error = p_reason, last_traceback = null
        from taken as t
        where j.job_id = t.job_id and j.created_at = t.created_at
        returning j.job_id, j.created_at, j.tenant_id, j.queue, j.attempt
    ),
    history as (
        insert into jobctl._event (job_id, job_created_at, at, event, attempt, detail)
        select c.job_id, c.created_at, v_now, 'cancelled', c.attempt, p_reason from changed as c
    ),
    tally as (
        insert into jobctl._stat_delta (tenant_id, queue, waiting, cancelled, withdrawn)
        select c.tenant_id, c.queue, -count(*), count(*), count(*) from changed as c group by c.tenant_id, c.queue
    )
    select array_agg(c.job_id), array_agg(c.tenant_id) into v_ids, v_tenants from changed as c;
    if v_ids is null then
        return 0;
    end if;
    perform jobctl._count_finished(v_tenants);
    perform jobctl._notify_watchers(v_ids);  -- wakes their watchers, if any (watch_job)
    perform jobctl._parents_ended(v_ids);
    return cardinality(v_ids);
end
$$;
