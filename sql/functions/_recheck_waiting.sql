-- jobctl._recheck_waiting: look again at the children some parent's end left waiting while other
-- edges were still in sight (jobctl._release_waiting, p_recheck): at most p_limit _recheck rows
-- (SKIP LOCKED: concurrent callers share them), their children released if no edge is left now.
-- The rows are taken in one statement and the edges read in a later one, so every end behind a
-- taken row is visible to the check; an end committed later brought a _recheck row of its own.
-- Called by claims before they list lanes, and by the tick. Returns the number released.
-- Writes: _recheck (delete), through _release_waiting the rest.
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
    return jobctl._release_waiting(v_children, false);
end
$$;
