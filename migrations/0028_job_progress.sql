-- 0028_job_progress: a running job reports its progress with its heartbeat (issue 22). Immutable
-- once landed: later changes go into a new numbered migration.
--
-- The latest progress of a running attempt lives on its _running row, written by the heartbeat's
-- own HOT update (no row version of its own; progress is in no index). The update that ends the
-- attempt (complete, fail, reap, cancel, release) copies it to the job row, which keeps it: no
-- extra row version there either. _running has no TOAST table (migration 0014), so its column is
-- PLAIN, in the same statement (an ALTER TABLE adds a TOAST table at its end if a column could need
-- one), and jobctl.heartbeat bounds it at 2,000 bytes: a wider row fails with "row is too big".
-- Every column added here is NULL: a metadata-only change on the existing rows.
alter table jobctl.job add column progress jsonb;
alter table jobctl.job_archive add column progress jsonb;
alter table jobctl._running add column progress jsonb, alter column progress set storage plain;
alter type jobctl.job_info add attribute progress jsonb;

-- heartbeat gains progress (a new signature: the old one goes)
drop function if exists jobctl.heartbeat(bigint, bigint, interval);
