-- jobctl.tick: one pass of periodic work, one caller at a time per database (a lock on
-- jobctl_owner._tick_lock, which takes no transaction id: another caller returns 0 at once): promote due
-- delayed jobs, release the children racing parents left waiting (jobctl._recheck_waiting), reap
-- expired leases, expand due schedules, fold the counters' deltas and probe
-- busy lanes for their oldest due job (at most a batch a 100 ms); while the xmin horizon is held back
-- (jobctl._horizon_held), rotate the slot partitions of _ready, _running and _lane_cache
-- (truncations, under ACCESS EXCLUSIVE locks held only by this short transaction), and otherwise
-- delete the lane-cache rows newer ones superseded and those of filters no claim used for a
-- minute (VACUUM can then remove them). With p_full, last, also recount the unfinished jobs of
-- max_pending tenants (a scan of the queue tables: once a minute; last, because a tenant row whose
-- offset it changes stays locked until commit, and claims skip a locked tenant row meanwhile), and
-- forget the counters' minutes older than 6 hours. Each pass also forgets the workers that have
-- not beaten for an hour (jobctl.worker_beat).
-- Workers call tick(false) a few times a second (jobctl worker: every 0.25 s), so orphans come back
-- and schedules fire within about a second of their time while any worker runs; pg_cron calls
-- tick() every minute as the backstop and for the recount (its own 1.4 has no sub-minute schedule,
-- and a looping job would stall DROP DATABASE: docs/operations.md).
-- Does nothing on a standby. Returns the number of jobs promoted, reaped and enqueued.
-- Calls, each only when it has work: _promote_due, _recheck_waiting, reap_expired_leases,
-- expand_schedules, _stat_fold; then _stat_probe, _horizon_held, and _rotate_periods while the horizon
-- is held; with p_full _recount_pending (also when another caller holds the tick lock).
-- Locks: jobctl_owner._tick_lock EXCLUSIVE NOWAIT; through the callees _delayed, _recheck, _running
-- and schedule rows (SKIP LOCKED), the try-locks reap and rotate, ACCESS EXCLUSIVE on each period's
-- partition it truncates (asked for with a 20 ms lock_timeout), the key locks of keyed jobs made
-- due, _submit's locks (expand_schedules), and the tenant rows whose pending_offset changes
-- (_recount_pending). All to the end of the transaction.
-- Writes: _lane_cache, _worker, _watcher (delete: superseded lane lists, gone workers, expired
-- watchers), with p_full _stat_minute (delete: older than 6 hours). Through the callees:
-- _promote_due's (_delayed, _ready, _held, _stat_delta); the unblocked children's (_recheck_waiting);
-- the reaper's (_running, job, _event, queue tables, _stat_delta); expand_schedules' (schedule, and
-- new jobs through _submit); _stat_delta (delete), _stat and _stat_minute (_stat_fold); _stat and
-- _stat_probed (_stat_probe); the rows of drained periods of _ready, _running and
-- _lane_cache, moved on and truncated (_rotate_periods); tenant (_recount_pending).
create or replace function jobctl.tick(p_full boolean default true)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_n integer := 0;
begin
    if pg_is_in_recovery() then
        return 0;
    end if;
    begin
        lock table jobctl_owner._tick_lock in exclusive mode nowait;
    exception when lock_not_available then
        if p_full then
            perform jobctl._recount_pending(null);  -- the recount needs no tick lock: pg_cron's must not be lost
        end if;
        return 0;
    end;
    if (select min(d.run_at) from jobctl._delayed as d) <= v_now then  -- the index's head (claim_job)
        v_n := v_n + jobctl._promote_due();
    end if;
    if exists (select from jobctl._recheck) then
        v_n := v_n + jobctl._recheck_waiting(100000);
    end if;
    if exists (select from jobctl._running as r where r.lease_expires_at < v_now or r.deadline < v_now) then
        v_n := v_n + jobctl.reap_expired_leases();
    end if;
    if exists (select from jobctl.schedule as s where s.next_fire_at <= v_now and not s.paused) then
        v_n := v_n + jobctl.expand_schedules();
    end if;
    -- the counters' deltas into their totals
    if exists (select from jobctl._stat_delta) then
        perform jobctl._stat_fold();
    end if;
    perform jobctl._stat_probe();
    if jobctl._horizon_held() then
        perform jobctl._rotate_periods();
    else
        delete from jobctl._lane_cache as c
        where c.fresh_until < v_now - interval '1 second'
            and (c.fresh_until < v_now - interval '1 minute'  -- a filter no claim used for a minute
                 or exists (select from jobctl._lane_cache as n where n.queues_key = c.queues_key and n.fresh_until > c.fresh_until));
    end if;
    -- the registry of workers forgets those not seen for an hour (jobctl.worker_beat; no match: no write)
    delete from jobctl._worker as w where w.last_seen_at < v_now - interval '1 hour';
    -- watchers whose wait ran out (jobctl.watch_job; no match: no write)
    delete from jobctl._watcher as w where w.expires_at < v_now;
    if p_full then
        perform jobctl._recount_pending(null);
        delete from jobctl._stat_minute as m where m.minute < v_now - interval '6 hours';
    end if;
    return v_n;
end
$$;

comment on function jobctl.tick(boolean) is
'One pass of periodic work: promote due delayed jobs, reap expired leases, expand due schedules, and
keep the queue tables small (while an old transaction holds the xmin horizon, by truncating their drained slot
partitions); with p_full (the default), also recount the unfinished jobs of max_pending tenants. Returns how many
jobs it moved or enqueued; 0 at once when another call is running or on a standby. Workers call tick(false) a few
times a second, pg_cron tick() every minute; in manual mode (no pg_cron) call it from any scheduler.
Errors: none.
Example:
select jobctl.tick();         -- every minute, from pg_cron or any scheduler
select jobctl.tick(false);    -- what each worker runs every 0.25 s';
