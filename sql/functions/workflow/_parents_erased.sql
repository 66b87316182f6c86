-- jobctl._parents_erased: the children still waiting on jobs that were just deleted (p_ids:
-- delete_jobs, forget_subject). Only a dead or cancelled parent can be deleted with its edges
-- still there (a completion deletes its edges; forget_subject cancels an active parent first), so
-- its `cancel` children were cancelled when it ended and those left waited under `wait`, for a
-- retry of the parent that completes. A deleted parent can never be retried: they are cancelled,
-- last_error 'cancelled: a job it depends on was deleted', and their own children follow their
-- policy (jobctl._cancel_waiting). No edge to a deleted job is left. Returns how many it cancelled.
-- Writes: _edge (delete), and through _cancel_waiting _waiting, job, _event, _stat_delta.
create or replace function jobctl._parents_erased(p_ids bigint[])
returns integer
language plpgsql
set jit = off
as $$
declare
    v_children bigint[];
    v_n integer := 0;
begin
    if p_ids is null then
        return 0;
    end if;
    select array_agg(distinct e.child_id) into v_children
    from jobctl._edge as e
    where e.parent_id = any(p_ids);
    if v_children is null then
        return 0;
    end if;
    v_n := jobctl._cancel_waiting(v_children, 'cancelled: a job it depends on was deleted');
    -- a child another transaction took meanwhile took its edges with it; none may point at nothing
    delete from jobctl._edge as e where e.parent_id = any(p_ids);
    return v_n;
end
$$;
