-- jobctl._parents_ended: what the end of jobs means for the jobs waiting on them. A completed job's
-- edges go (p_completed), and so do an ended batch member's (on_end edges: completion, death or
-- cancellation alike); their children are released when no edge is left (jobctl._release_waiting).
-- A dead or cancelled job keeps its other edges: its children that asked for it
-- (cancel_on_failure) are cancelled, the others wait on (a retry of the parent that completes
-- releases them). Called from every end: completion (_complete), death (_end_attempts), cancel.
-- Writes: _edge (delete), and through the callees _waiting, job, the queue tables, _recheck.
create or replace function jobctl._parents_ended(p_ids bigint[], p_completed boolean)
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
        where e.parent_id = any(p_ids) and (p_completed or e.on_end)
        returning e.child_id
    )
    select array_agg(distinct g.child_id) into v_children from gone as g;
    if v_children is not null then
        perform jobctl._release_waiting(v_children, true);
    end if;
    if not p_completed then
        select array_agg(distinct e.child_id) into v_doomed
        from jobctl._edge as e
        inner join jobctl._waiting as w on w.job_id = e.child_id
        where e.parent_id = any(p_ids) and w.cancel_on_failure;
        if v_doomed is not null then
            perform jobctl._cancel_waiting(v_doomed, 'cancelled: a job it depends on was dead or cancelled');
        end if;
    end if;
end
$$;
