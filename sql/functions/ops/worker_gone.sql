-- jobctl.worker_gone: a worker that stops cleanly leaves the registry at once (one that dies is
-- forgotten by jobctl.tick an hour after its last beat). Its leases are untouched: a job it still
-- holds is reaped when its lease expires. Only the login that registered it removes it.
-- Writes: _worker (delete).
create or replace function jobctl.worker_gone(worker_id text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
begin
    if worker_id is null or worker_id = '' or length(worker_id) > 200 then
        raise exception using errcode = 'JC001', message = 'worker_id must be a string of 1 to 200 characters',
            detail = 'field: worker_id';
    end if;
    delete from jobctl._worker as w where w.worker_id = worker_gone.worker_id and w.login = session_user;
end
$$;

comment on function jobctl.worker_gone(text) is
'Remove a worker from the registry of workers (jobctl.worker_beat), as a worker does when it stops
cleanly; an unknown id changes nothing. Leases the worker still holds are not touched (they expire and are reaped).
Errors: JC001 worker_id NULL, empty or over 200 characters.
Example:
select jobctl.worker_gone(''web-1:4242'');';
