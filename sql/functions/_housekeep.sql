-- jobctl._housekeep: what claim_job does before claiming. Due delayed jobs are promoted at once
-- (one index probe decides); at most once a second per session, expired leases are reaped (a scan
-- of the small _running table decides) and due schedules expanded (one index probe decides), so
-- an orphaned job is claimable again, and a schedule's run enqueued, about one second after its
-- time, whatever pg_cron's one-minute granularity; at most twice a second (the half-second slots),
-- past slot partitions are truncated (jobctl._rotate_slots).
create or replace function jobctl._housekeep(p_batch integer)
returns void
language plpgsql
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_epoch float8 := extract(epoch from v_now);
    v_last text := current_setting('jobctl.reaped_at', true);
    v_rotated text := current_setting('jobctl.rotated_at', true);
begin
    if exists (select from jobctl._delayed as d where d.run_at <= v_now) then
        perform jobctl._promote_due(greatest(p_batch * 4, 1000));
    end if;
    if v_last is null or v_last = '' or v_epoch - v_last::float8 >= 1 then
        perform set_config('jobctl.reaped_at', v_epoch::text, false);
        if exists (select from jobctl._running as r where r.lease_expires_at < v_now or r.deadline < v_now) then
            perform jobctl.reap_expired_leases();
        end if;
        if exists (select from jobctl.schedule as s where s.next_fire_at <= v_now) then
            perform jobctl.expand_schedules();
        end if;
    end if;
    if v_rotated is null or v_rotated = '' or v_epoch - v_rotated::float8 >= 0.5 then
        perform set_config('jobctl.rotated_at', v_epoch::text, false);
        perform jobctl._rotate_slots();
    end if;
end
$$;
