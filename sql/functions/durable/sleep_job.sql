-- jobctl.sleep_job: end the attempt of a job running under lease_epoch without failing it: the
-- lease ends, the attempt does not count, and the job is pending again, due at until, with its
-- steps kept (jobctl._park). Fenced like release_job.
-- Calls: _acting_tenants, _park. Locks: the _running row, then the job row (_park).
-- Writes: _running (delete); through _park job, _event, _delayed, _stat_delta.
create or replace function jobctl.sleep_job(job_id bigint, lease_epoch bigint, until timestamptz)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
declare
    v_run jobctl._running;
begin
    if sleep_job.job_id is null or sleep_job.lease_epoch is null then
        raise exception using errcode = 'JC001', message = 'job_id and lease_epoch must not be NULL';
    end if;
    if sleep_job.until is null or not isfinite(sleep_job.until) or sleep_job.until > clock_timestamp() + interval '1 year' then
        raise exception using errcode = 'JC001',
            message = format('until must be a time at most 1 year ahead, not %s', coalesce(sleep_job.until::text, 'NULL')),
            detail = 'field: until', hint = 'A time in the past makes the job due at once.';
    end if;
    delete from jobctl._running as r
    where r.job_id = sleep_job.job_id and r.lease_epoch = sleep_job.lease_epoch
        and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]))  -- (another tenant's: fenced)
    returning * into v_run;
    if not found then
        return false;
    end if;
    perform jobctl._park(v_run, sleep_job.until, 'sleep', sleep_job.until::text);
    return true;
end
$$;

comment on function jobctl.sleep_job(bigint, bigint, timestamptz) is
'End the attempt of a job running under lease_epoch without failing it: the lease ends (the worker''s,
the tenant''s, the queue''s and a concurrency key''s places are free), the attempt does not count against
max_attempts, and the job is pending again, due at until, with its saved steps kept. Returns true, or false
when fenced (not running under that epoch: nothing changed). Bounds: until at most 1 year ahead; a past
time makes the job due at once.
Errors: JC001 NULL job_id or lease_epoch, until NULL, infinite or over 1 year ahead.
Example:
select jobctl.sleep_job(42, 7, now() + interval ''1 hour'');';
