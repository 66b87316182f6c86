-- jobctl._recheck_waiting: look again at the children some parent's end left waiting while other
-- edges were still in sight (jobctl._unblock_children, p_recheck): at most p_limit _recheck rows
-- (SKIP LOCKED: concurrent callers share them), their children released if no edge is left now.
-- A child some of whose edges are still being deleted (their transactions in progress, or committed
-- since the check's snapshot) gets a new _recheck row, as at a parent's end: an end that left the
-- child to such a parent (whose edge it saw untouched) is looked at again once that commits.
-- Called by claims before they list lanes, and by the tick. Returns the number released.
-- Writes: _recheck (delete), through _unblock_children the rest.
create or replace function jobctl._recheck_waiting(p_limit integer default 1000)
returns integer
language plpgsql
set plan_cache_mode = force_generic_plan
set jit = off
as $$
declare
    v_children bigint[];
begin
    with taken as (
        delete from jobctl._recheck as r
        where r.ctid = any(array(select x.ctid from jobctl._recheck as x limit p_limit for update skip locked))
        returning r.child_id
    )
    select array_agg(distinct t.child_id) into v_children from taken as t;
    if v_children is null then
        return 0;
    end if;
    return jobctl._unblock_children(v_children, true);
end
$$;
