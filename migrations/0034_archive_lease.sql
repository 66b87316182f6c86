-- 0034_archive_lease: one `jobctl archive run` at a time, by a lease no other login can take.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- The exporter held pg_advisory_lock(hashtext('jobctl archive')) for its whole run: any login of the
-- database could take that key first, and every run then exited 1 (issue 33, item 5), so a
-- forget_subject's rows stayed in the Parquet files. A session lock and a session lock_timeout are
-- also unsound through a transaction pooler. A row lock held for the run would need a transaction
-- open for minutes, with a transaction ID that holds back VACUUM on the queue tables. So: one row, a
-- lease with a holder (the run's random id), the holder's backend and an expiry, taken and renewed
-- by jobctl._archive_lease and given up by jobctl._archive_release; only the schema owner has any
-- privilege on it. A run killed with its backend frees it at once; a run stopped, or cut off behind a
-- pooler, loses it at the expiry, and its next renewal, in the transaction of each day's commit,
-- finds the lease taken and rolls the day back.
create table jobctl._archive_lease (
    one_row boolean primary key default true check (one_row),
    holder uuid,             -- the run's id; null: free
    holder_pid integer,      -- the backend that took it (pg_stat_activity.pid)
    expires_at timestamptz
);
comment on table jobctl._archive_lease is
'Who runs the archive exporter (jobctl archive run) now: one row, a lease (jobctl._archive_lease). Only the schema
owner has privileges on it.';
-- no policy: no role but the owner sees the row
alter table jobctl._archive_lease enable row level security;
insert into jobctl._archive_lease (one_row) values (true);
