-- jobctl.reap_expired_leases: end every attempt whose lease expired (failed, due at once: no
-- backoff) or whose job ran past its timeout (failed after its backoff), or dead when no attempts
-- are left. Deleting the _running row revokes the epoch. Rows being completed right now are
-- skipped, never waited for. Runs alone (the try-lock reap) and does nothing on a standby.
-- Returns the number reaped.
-- Calls: _try_lock, _end_attempts (once for expired leases, once for timeouts), _notify (the queues
-- of expired leases).
-- Locks: the try-lock reap (jobctl._lock row), _running rows FOR UPDATE SKIP LOCKED, then through
-- _end_attempts the job rows (and what jobctl._end_attempts lists); _notify's try-locks.
-- Writes: _running (delete); through _end_attempts job (update), _event, _ready or _delayed,
-- _stat_delta (insert), and for jobs that die or give up a key's place what jobctl._end_attempts
-- lists.
create or replace function jobctl.reap_expired_leases()
returns integer
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_expired jsonb;
    v_timed_out jsonb;
    v_count integer := 0;
    v_failure record;
begin
    if pg_is_in_recovery() or not jobctl._try_lock('reap') then
        return 0;
    end if;
    with expired as (
        select x.tableoid as rel, x.ctid as rid from jobctl._running as x
        where x.lease_expires_at < v_now or x.deadline < v_now
        limit 10000
        for update skip locked
    ),
    gone as (
        delete from jobctl._running as r
        where r.ctid = any(array(select x.rid from expired as x))
            -- a ctid names a row only within its partition
            and (r.tableoid::text || r.ctid::text) = any(array(select x.rel::text || x.rid::text from expired as x))
        returning r.job_id, r.created_at, r.attempt, r.lease_epoch, r.worker_id, r.started_at, r.queue, r.progress,
            r.deadline < v_now as timed_out
    )
    select
        jsonb_agg(to_jsonb(g) - 'timed_out') filter (where not coalesce(g.timed_out, false)),
        jsonb_agg(to_jsonb(g) - 'timed_out') filter (where g.timed_out)
    into v_expired, v_timed_out
    from gone as g;
    if v_expired is not null then
        v_count := v_count + jsonb_array_length(v_expired);
        select f.* into v_failure from jobctl._failure('lease_expired', null, true) as f;
        perform jobctl._end_attempts(v_expired, v_failure.error, v_failure.retryable, v_failure.now_due);
        -- those with attempts left are due at once: wake the workers of their queues
        perform jobctl._notify(array(select distinct e ->> 'queue' from jsonb_array_elements(v_expired) as e));
    end if;
    if v_timed_out is not null then
        v_count := v_count + jsonb_array_length(v_timed_out);
        select f.* into v_failure from jobctl._failure('timed_out', null, true) as f;
        perform jobctl._end_attempts(v_timed_out, v_failure.error, v_failure.retryable, v_failure.now_due);
    end if;
    return v_count;
end
$$;

comment on function jobctl.reap_expired_leases() is
'Return every running job whose lease expired to failed (due at once) or dead (no
attempts left), revoking its epoch; a job past its timeout is failed with backoff even if its worker still
heartbeats. Returns how many. Run by pg_cron through jobctl.tick(); safe to run by hand or concurrently (one run
at a time does the work).
Errors: none.
Example:
select jobctl.reap_expired_leases();';
