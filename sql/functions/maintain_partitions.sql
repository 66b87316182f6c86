-- jobctl.maintain_partitions: run pg_partman's maintenance (create partitions ahead) under a short
-- lock_timeout, so a session holding a lock on a partition makes this run give up instead of
-- queueing every claim behind its lock request. Returns 1 if it ran, 0 if skipped (next run retries).
create or replace function jobctl.maintain_partitions()
returns integer
language plpgsql
set lock_timeout = '200ms'
as $$
begin
    if pg_is_in_recovery() or not pg_try_advisory_xact_lock(19011, 2) then
        return 0;
    end if;
    perform partman.run_maintenance(p_jobmon => false);
    return 1;
exception when lock_not_available then
    return 0;
end
$$;

comment on function jobctl.maintain_partitions() is
'Run pg_partman maintenance for the jobctl tables with lock_timeout 200 ms; returns 1 when it ran, 0 when skipped
(standby, another run in progress, or a lock not granted in time).';
