-- jobctl._housekeep: what claim_job does before claiming. Due delayed jobs are promoted at once
-- (one index probe decides); at most once a second per session, expired leases are reaped (a scan
-- of the small _running table decides) and due schedules expanded (one index probe decides), so
-- an orphaned job is claimable again, and a schedule's run enqueued, about one second after its
-- time, whatever pg_cron's one-minute granularity; and it records in the session setting
-- jobctl.horizon_held whether a client transaction open for more than a second holds a snapshot
-- or an XID, so holds the xmin horizon back (claim_job's lane cursors are used only then).
-- Returns whether it made jobs due (the claim then lists the lanes afresh rather than trust a
-- shared list made before them, and starts at the lanes' heads).
-- (The rotation of the slot partitions comes after the claim: jobctl.claim_job.)
create or replace function jobctl._housekeep(p_batch integer)
returns boolean
language plpgsql
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_epoch float8 := extract(epoch from v_now);
    v_last text := current_setting('jobctl.reaped_at', true);
    v_made integer := 0;
begin
    if exists (select from jobctl._delayed as d where d.run_at <= v_now) then
        v_made := jobctl._promote_due(greatest(p_batch * 4, 1000));
    end if;
    if v_last is null or v_last = '' or v_epoch - v_last::float8 >= 1 then
        perform set_config('jobctl.reaped_at', v_epoch::text, false);
        -- (xact_start is shown to the function's owner: a superuser or pg_read_all_stats)
        perform set_config('jobctl.horizon_held', exists (
            select from pg_catalog.pg_stat_activity as a
            where a.backend_type = 'client backend' and a.xact_start < v_now - interval '1 second'
                and (a.backend_xmin is not null or a.backend_xid is not null)
        )::text, false);
        if exists (select from jobctl._running as r where r.lease_expires_at < v_now or r.deadline < v_now) then
            v_made := v_made + jobctl.reap_expired_leases();
        end if;
        if exists (select from jobctl.schedule as s where s.next_fire_at <= v_now) then
            v_made := v_made + jobctl.expand_schedules();
        end if;
    end if;
    return v_made > 0;
end
$$;
