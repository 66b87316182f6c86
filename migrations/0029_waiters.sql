-- 0029_waiters: the registry of callers waiting for a job to finish (jobctl.watch_job). Immutable
-- once landed: later changes go into a new numbered migration.
--
-- A completion sends a NOTIFY only for a job somebody waits for: the end of an attempt (complete,
-- death, cancel) probes this table by job id (jobctl._hint_finished) and, when it finds waiters,
-- deletes them and notifies each one's channel. Most jobs have no waiter, so the hot path pays an
-- index probe that finds nothing, never a NOTIFY (a NOTIFY a job halves the completion rate:
-- docs/postgres-internals.md §2). A waiter's channel is a random name its caller chose and LISTENs
-- on ('jobctl_wait_' and 32 hex digits): no other login knows it, so none can hear which jobs finish.
-- Rows are only inserted by watch_job and deleted by the finish that notifies them or, once
-- expired, by jobctl.tick: no function updates a waiter or lets a caller delete one, so a caller's
-- open transaction never holds a lock that a completion waits for.
create table jobctl._waiter (
    job_id bigint not null,
    tenant_id text not null,
    channel text not null,
    expires_at timestamptz not null
);
create index _waiter_job on jobctl._waiter (job_id);  -- the completion's probe
create index _waiter_tenant on jobctl._waiter (tenant_id);  -- the tenant's cap (watch_job)
create index _waiter_expires on jobctl._waiter (expires_at);  -- the tick's prune
-- no policy: no role but the owner (the functions) sees a row, even if granted SELECT
alter table jobctl._waiter enable row level security;
