-- jobctl.tick: one pass of periodic work: promote due delayed jobs, reap expired leases, expand
-- due schedules, recount the unfinished jobs of max_pending tenants, rotate the slots of _ready,
-- _running and _lane_cache.
-- pg_cron runs it every minute as a backstop; the sub-second path is claim_job, which does the same
-- work at most once a second per session (jobctl._housekeep) and rotates up to twice. A long-running
-- pg_cron job would stall DROP DATABASE cluster-wide on PostgreSQL 15 (pg_cron's launcher does not
-- absorb the ProcSignalBarrier while a job runs, pg_cron issue #318), so this pass is short by
-- design.
-- Does nothing on a standby. Returns the number of jobs promoted, reaped and enqueued.
create or replace function jobctl.tick()
returns integer
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
begin
    if pg_is_in_recovery() then
        return 0;
    end if;
    perform jobctl._recount_pending(null);
    perform jobctl._rotate_slots();
    return jobctl._promote_due() + jobctl.reap_expired_leases() + jobctl.expand_schedules();
end
$$;

comment on function jobctl.tick() is
'One pass of periodic work: promote due delayed jobs, reap expired leases, expand due schedules; returns how many
jobs it moved or enqueued.
pg_cron runs it every minute; claim_job does the same work at most once a second per session. In manual mode
(no pg_cron) call it from any scheduler.';
