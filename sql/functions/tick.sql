-- jobctl.tick: one pass of periodic work: promote due delayed jobs and reap expired leases.
-- pg_cron runs it every minute as a backstop; the sub-second path is claim_job, which does the same
-- work at most once a second per session (jobctl._housekeep). A long-running pg_cron job would
-- stall DROP DATABASE cluster-wide on PostgreSQL 15 (pg_cron's launcher does not absorb the
-- ProcSignalBarrier while a job runs, pg_cron issue #318), so this pass is short by design.
-- Does nothing on a standby. Returns the number of jobs promoted plus reaped.
create or replace function jobctl.tick()
returns integer
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
begin
    if pg_is_in_recovery() then
        return 0;
    end if;
    return jobctl._promote_due() + jobctl.reap_expired_leases();
end
$$;

comment on function jobctl.tick() is
'One pass of periodic work: promote due delayed jobs and reap expired leases; returns how many jobs it moved.
pg_cron runs it every minute; claim_job does the same work at most once a second per session. In manual mode
(no pg_cron) call it from any scheduler.';
