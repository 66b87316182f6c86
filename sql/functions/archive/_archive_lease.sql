-- jobctl._archive_lease: take or renew the archive exporter's lease for p_holder,
-- the run's random id, until p_seconds from now; true if p_holder holds it now. It is free when no
-- run holds it, when its holder's lease has expired, or when the backend that took it is gone (a run
-- killed with its connection). A renewal (p_holder already holding it) keeps the backend of the take.
-- Called by `jobctl archive run` as the schema owner (granted to no role): at its start, as it writes
-- files, and in each day's commit transaction, where false rolls the day back (another run took
-- over: docs/security.md, Locks). Never waits for another run. Locks: the lease row, until the
-- caller's commit. Writes: _archive_lease.
create or replace function jobctl._archive_lease(p_holder uuid, p_seconds integer)
returns boolean
language plpgsql
as $$
begin
    if p_holder is null or p_seconds is null or p_seconds not between 1 and 3600 then
        raise exception using errcode = 'JC001', message = 'the archive lease needs a holder and 1 to 3600 seconds',
            detail = 'field: p_seconds', hint = 'jobctl archive run takes it; there is nothing to call by hand.';
    end if;
    update jobctl._archive_lease as l
    set holder = p_holder,
        holder_pid = case when l.holder is not distinct from p_holder then l.holder_pid else pg_catalog.pg_backend_pid() end,
        expires_at = clock_timestamp() + make_interval(secs => p_seconds)
    where l.holder is null
        or l.holder = p_holder
        or l.expires_at < clock_timestamp()
        or not exists (select from pg_catalog.pg_stat_activity as a where a.pid = l.holder_pid);
    return found;
end
$$;
