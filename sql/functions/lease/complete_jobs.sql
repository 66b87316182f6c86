-- jobctl.complete_jobs: complete a batch of jobs. See jobctl._complete.
-- Calls: _complete.
-- Locks: through _complete the _running rows, then the job rows, and the jobs' _edge rows; with
-- concurrency keys their key locks, with children theirs (see jobctl._complete).
-- Writes: through _complete _running (delete), job (update), _edge (delete), _stat_delta (insert),
-- _watcher (delete); with concurrency keys _held and _ready, with children their rows (see
-- jobctl._complete).
create or replace function jobctl.complete_jobs(
    job_ids bigint[], lease_epochs bigint[], results jsonb[] default null
)
returns table (job_id bigint, completed boolean)
language plpgsql  -- not sql: a SQL function that is not inlined is planned on every call (docs/design.md §6)
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select c.job_id, c.completed from jobctl._complete(job_ids, lease_epochs, results) as c;
end
$$;

comment on function jobctl.complete_jobs(bigint[], bigint[], jsonb[]) is
'Complete a batch: job_ids[i] under lease_epochs[i], keeping results[i] as its result (results
NULL: none). One row per input in input order; completed = false where fenced.
Errors: JC001 the arrays are NULL or differ in length, or a result over 1 MiB or nested over 100 levels.
Example:
select * from jobctl.complete_jobs(array[42, 43], array[7, 8]);';
