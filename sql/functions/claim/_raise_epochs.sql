-- jobctl._raise_epochs: move the lease epochs past every epoch that can have been handed out in WAL
-- lost to a crash, a restore or a promotion, once per such event (jobctl._epoch_guard, migration
-- 0033; docs/design.md, Fencing across a crash). jobctl._start_attempts calls it when the guard is
-- empty, before it hands out an epoch.
-- The sequence's recovered value is at or above every epoch whose WAL survived; those in lost WAL
-- are above it, and fewer than 2^40 (each is a job row's update in that WAL: 2^40 of them would be
-- over 100 TB). So last_value + 2^40 is above them all; bigint leaves room for 8 million raises.
-- The raise commits with the claim it is part of, flushed (synchronous_commit on for the rest of
-- the transaction, whatever the claim asked), and only then is the guard's row visible: a concurrent
-- claimer that found the guard empty waits on its lock and finds the row.
-- Calls: nothing.
-- Locks: _epoch_guard EXCLUSIVE (claimers' reads of it are not blocked).
-- Writes: the sequence lease_epoch_seq (setval), _epoch_guard (insert).
create or replace function jobctl._raise_epochs()
returns void
language plpgsql
as $$
declare
    v_to bigint;
begin
    lock table jobctl._epoch_guard in exclusive mode;
    if exists (select from jobctl._epoch_guard) then
        return;  -- another claim raised them while this one waited
    end if;
    v_to := (select s.last_value from jobctl.lease_epoch_seq as s) + 1099511627776;  -- 2^40
    perform setval('jobctl.lease_epoch_seq', v_to);
    insert into jobctl._epoch_guard (raised_at, raised_to) values (clock_timestamp(), v_to);
    perform set_config('synchronous_commit', 'on', true);
end
$$;
