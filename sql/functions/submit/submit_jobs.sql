-- jobctl.submit_jobs: submit a JSON array of jobs, all or nothing; rows in input order.
-- Each element has submit_job's keys: run_at ISO 8601, timeout an interval string or seconds.
-- Calls: _job_specs (the JSON read into specs, no table), then _submit.
-- Locks: through _submit the dedup lock on each dedup key and the key lock on each concurrency key
-- (_tenant_lock rows, waited for), the parents' job rows (FOR SHARE), _notify's try-locks hint-busy
-- and hint on each queue (jobctl._lock rows, skipped when held).
-- Writes: through _submit tenant (new tenants), job, _stat_delta, _ready, _held, _delayed, _waiting
-- (insert; _admit moves the admitted from _held to _ready), _tenant_lock (a lock row's first use),
-- _edge (children's edges) and, for children whose parents have ended, their rows as those parents'
-- ends would write them; debounced repeats update their holders' job rows and move their queue
-- rows; the sequences job_id_seq, submit rate buckets and admitted counts.
create or replace function jobctl.submit_jobs(jobs jsonb)
returns table (job_id bigint, duplicate boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select s.job_id, s.duplicate from jobctl._submit(jobctl._job_specs(jobs, false), true) as s;
end
$$;

comment on function jobctl.submit_jobs(jsonb) is
'Submit a JSON array of jobs (objects with submit_job''s keys; run_at ISO 8601, timeout an
interval string or seconds, depends_on an array of job ids), at most 10,000 a call, all or nothing; returns (job_id, duplicate) in input order.
Errors: JC001 a bad field (named with its element, as jobs[3].priority), not an array, or over 10,000 jobs,
JC002 a payload over 64 KiB, JC003 a bad backoff, JC004 over max_pending, JC005 over the submit rate, JC006 a
dedup_key under REPEATABLE READ, JC008 the tenant encrypts and the session lacks its key, 42501 another tenant.
Example:
select * from jobctl.submit_jobs(''[{"tenant_id": "acme", "queue": "email", "payload": {"to": "a@example.com"}},
    {"tenant_id": "acme", "queue": "email", "payload": {}, "run_at": "2030-01-01T00:00:00Z", "timeout": 60}]'');';
