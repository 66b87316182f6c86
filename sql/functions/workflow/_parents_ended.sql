-- jobctl._parents_ended: what the death or cancellation of jobs means for the jobs waiting on them
-- (a completion deletes all its edges itself: jobctl._complete). An ended batch member's on_end
-- edges go, and the children they led to are released when no edge is left
-- (jobctl._unblock_children: a batch's callbacks). The other edges stay: the children that asked for
-- it (cancel_on_failure) are cancelled, downstream too (jobctl._cancel_waiting); the others wait on,
-- and a retry of the parent that completes releases them. Called by _end_attempts (death), _cancel,
-- _cancel_waiting and submit_batch.
-- Writes: _edge (delete), and through the callees _waiting, job, the queue tables, _recheck.
create or replace function jobctl._parents_ended(p_ids bigint[])
returns void
language plpgsql
set plan_cache_mode = force_generic_plan
set jit = off
as $$
declare
    v_children bigint[];
    v_doomed bigint[];
begin
    with gone as (
        delete from jobctl._edge as e
        where e.parent_id = any(p_ids) and e.on_end
        returning e.child_id
    )
    select array_agg(distinct g.child_id) into v_children from gone as g;
    if v_children is not null then
        perform jobctl._unblock_children(v_children, true);
    end if;
    select array_agg(distinct e.child_id) into v_doomed
    from jobctl._edge as e
    inner join jobctl._waiting as w on w.job_id = e.child_id
    where e.parent_id = any(p_ids) and w.cancel_on_failure;
    if v_doomed is not null then
        perform jobctl._cancel_waiting(v_doomed, 'cancelled: a job it depends on was dead or cancelled');
    end if;
end
$$;
