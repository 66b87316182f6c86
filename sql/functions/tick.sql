-- jobctl.tick: the periodic driver. pg_cron CALLs it every minute (pg_cron 1.4 has no sub-minute
-- schedules); it loops for about a minute, each second promoting due delayed jobs and reaping
-- expired leases, committing after each pass so it never holds a snapshot for long. One runs at
-- a time (session advisory lock); on a standby it returns at once. Without pg_cron, run
-- `CALL jobctl.tick(0)` (one pass) from any scheduler, or let the worker do it.
create or replace procedure jobctl.tick(p_seconds integer default 58, p_every interval default '1 second')
language plpgsql
as $$
declare
    v_end timestamptz := clock_timestamp() + make_interval(secs => p_seconds);
begin
    if pg_is_in_recovery() or not pg_try_advisory_lock(19011, 0) then
        return;
    end if;
    loop
        perform jobctl._promote_due();
        perform jobctl.reap_expired_leases();
        commit;
        exit when clock_timestamp() >= v_end;
        perform pg_sleep_for(p_every);
    end loop;
    perform pg_advisory_unlock(19011, 0);
end
$$;

comment on procedure jobctl.tick(integer, interval) is
'Promote due delayed jobs and reap expired leases every p_every for p_seconds (one pass with 0), committing after
each pass. Registered with pg_cron every minute; call it by hand in manual mode.';
