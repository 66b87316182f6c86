-- 0033_epoch_guard: lease epochs stay above every epoch handed out before a crash, a restore or a
-- promotion, so that a claim may commit without waiting for its WAL flush (claim_job's flush =>
-- false) and a cluster may run with synchronous_commit = off (docs/design.md, Fencing across a
-- crash). Immutable once landed: later changes go into a new numbered migration.
--
-- An epoch comes from jobctl.lease_epoch_seq. A claim whose commit was not flushed when PostgreSQL
-- stopped is lost with the sequence's advance, and after recovery the sequence would hand the same
-- epochs out again: the lost claim's worker, still running, would hold the epoch of another worker's
-- claim of the same job. The guard is an UNLOGGED table, so it is emptied exactly when WAL may have
-- been lost: crash recovery, a base backup restored, a standby promoted (a clean shutdown keeps it,
-- and loses no WAL). The first claim that finds it empty moves the sequence 2^40 past its recovered
-- value (jobctl._raise_epochs), durably, before any epoch is handed out.
create unlogged table jobctl._epoch_guard (
    raised_at timestamptz not null,
    raised_to bigint not null  -- the sequence's value after the raise
);
-- no policy: no role but the owner (the claim's functions) sees a row
alter table jobctl._epoch_guard enable row level security;
-- this install's epochs so far were committed as claims always were: nothing to raise past yet
insert into jobctl._epoch_guard (raised_at, raised_to)
select
    clock_timestamp() as raised_at,
    s.last_value as raised_to
from jobctl.lease_epoch_seq as s;

-- claim_job gains a parameter (flush); a new signature is a new function, so the old one goes (if
-- there: a fresh install creates functions only after every migration), and the function file
-- creates the new one in the same migrate run
drop function if exists jobctl.claim_job(text, text[], integer, interval);
