-- jobctl._relist_lanes: after a change of what may be claimed (a pause of a queue or a tenant, a
-- queue's settings, a tenant move's steps), make every later claim list the lanes afresh: the
-- generation moves on and the shared lists are deleted. A listing that read the settings before the
-- caller's commit carries the old generation, so a list it shares after the deletion is never used
-- (jobctl._lanes). Locks: the generation row, to the end of the caller's transaction (concurrent
-- changes take turns; claims do not wait). Writes: _lane_generation, _lane_cache (delete).
create or replace function jobctl._relist_lanes()
returns void
language sql
as $$
    update jobctl._lane_generation set generation = generation + 1;
    delete from jobctl._lane_cache;
$$;
