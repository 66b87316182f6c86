-- jobctl._edge_left: a parent the child still waits for, as this statement sees the edges (NULL:
-- none). With p_untouched, only an edge no transaction is deleting: its xmax is 0, or names a
-- transaction that aborted (an edge whose deleter is in progress, or committed after this
-- statement's snapshot, is still in sight with the deleter's xid as xmax). Walks the child's edges
-- from the newest parent, whose edges go last, past few dead index entries.
create or replace function jobctl._edge_left(p_child bigint, p_untouched boolean default false)
returns bigint
language plpgsql  -- not sql: a SQL function that is not inlined is planned on every call
stable
set plan_cache_mode = force_generic_plan
as $$
begin
    return (
        select e.parent_id from jobctl._edge as e
        where e.child_id = p_child
            and (not p_untouched or e.xmax = '0'::xid
                 or pg_catalog.pg_xact_status(jobctl._xid8(e.xmax)) is not distinct from 'aborted')
        order by e.parent_id desc
        limit 1
    );
end
$$;
