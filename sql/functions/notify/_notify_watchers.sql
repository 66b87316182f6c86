-- jobctl._notify_watchers: wake the callers waiting for these jobs, which have just finished
-- (completed, dead or cancelled). Called by _complete, _end_attempts (for the jobs that died) and
-- _cancel, in their transaction: each watcher (jobctl.watch_job) is deleted and its channel gets
-- NOTIFY <channel>, '<job_id>' at commit, nothing on a rollback. A job nobody waits for costs one
-- index probe that finds nothing: no NOTIFY, no write (the cost: docs/design.md §7). The callers on
-- the hot path (_complete, _end_attempts) run with enable_seqscan off, so the probe stays an index
-- scan whatever statistics the session's cached plan was made with.
-- Writes: _watcher (delete).
create or replace function jobctl._notify_watchers(p_ids bigint[])
returns void
language plpgsql
as $$
declare
    v_watcher record;
begin
    -- a SELECT first: it locks the table and one index, where the DELETE locks every index of the
    -- table (half the cost of a probe that finds nothing: docs/design.md §7)
    if not exists (select from jobctl._watcher as w where w.job_id = any(p_ids)) then
        return;
    end if;
    for v_watcher in
        delete from jobctl._watcher as w where w.job_id = any(p_ids)
        returning w.channel, w.job_id
    loop
        -- the channel is the watcher's secret name: only its own session listens on it
        perform pg_notify(v_watcher.channel, v_watcher.job_id::text);
    end loop;
end
$$;
