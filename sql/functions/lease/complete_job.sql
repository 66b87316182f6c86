-- jobctl.complete_job: complete one job held under lease_epoch. See jobctl._complete.
-- Calls: _complete.
-- Locks: through _complete the _running row, then the job row, and the job's _edge rows; with a
-- concurrency key its key lock, with children theirs (see jobctl._complete).
-- Writes: through _complete _running (delete), job (update), _edge (delete), _stat_delta (insert),
-- _watcher (delete); with a concurrency key _held and _ready, with children their rows (see
-- jobctl._complete).
create or replace function jobctl.complete_job(job_id bigint, lease_epoch bigint, result jsonb default null)
returns boolean
language plpgsql  -- not sql: a SQL function that is not inlined is planned on every call (docs/design.md §6)
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return (
        select c.completed
        from jobctl._complete(array[complete_job.job_id], array[complete_job.lease_epoch], array[complete_job.result]) as c
    );
end
$$;

comment on function jobctl.complete_job(bigint, bigint, jsonb) is
'Complete a job running under lease_epoch, storing result. true: now completed. false: fenced
(not running under that epoch; nothing changed). Call it in the same transaction as the job''s own writes to make
them exactly-once: roll back when it returns false.
Errors: JC001 NULL job_id or lease_epoch, or a result over 1 MiB or nested over 100 levels.
Example:
begin;
insert into app.sent_mail (job_id) values (42);
select jobctl.complete_job(42, 7, ''{"ok": true}'');  -- commit only if true
commit;';
