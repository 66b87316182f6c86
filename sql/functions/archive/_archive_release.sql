-- jobctl._archive_release: give up the archive exporter's lease (jobctl._archive_lease) if p_holder
-- holds it, at the end of `jobctl archive run`; true if it did. As the schema owner (granted to no
-- role). Writes: _archive_lease.
create or replace function jobctl._archive_release(p_holder uuid)
returns boolean
language plpgsql
as $$
begin
    update jobctl._archive_lease as l
    set holder = null, holder_pid = null, expires_at = null
    where l.holder = p_holder;
    return found;
end
$$;
