-- jobctl.fail_job: end the attempt held under lease_epoch as a failure. The traceback's bound
-- (8,192 characters, cut from the top: the innermost frames are at its end) is kept here, where
-- every caller passes.
-- cause says why the attempt ended when its handler did not fail it; jobctl._failure turns it into
-- the message and the retry decision (so the worker's timeout reads as the reaper's).
-- Calls: _acting_tenants, _failure, _end_attempts.
-- Locks: the _running row, then through _end_attempts the job row (and, a job that dies or gives up
-- its concurrency key's place, what jobctl._end_attempts lists).
-- Writes: _running (delete); through _end_attempts job (update), _event, _ready or _delayed,
-- _stat_delta (insert), and for a job that dies or gives up its key's place what
-- jobctl._end_attempts lists.
create or replace function jobctl.fail_job(
    job_id bigint, lease_epoch bigint, error text, retryable boolean default true, traceback text default null,
    cause text default null
)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
declare
    v_ended jsonb;
    v_state text;
    v_traceback text := nullif(traceback, '');
    v_failure record;
begin
    if fail_job.job_id is null or fail_job.lease_epoch is null then
        raise exception using errcode = 'JC001', message = 'job_id and lease_epoch must not be NULL';
    end if;
    if retryable is null then
        raise exception using errcode = 'JC001', message = 'retryable must be true or false';
    end if;
    if cause is not null and cause not in ('timed_out', 'refused') then
        raise exception using errcode = 'JC001', message = format('cause must be timed_out, refused or NULL, not %s', cause),
            detail = 'field: cause';
    end if;
    with gone as (
        delete from jobctl._running as r
        where r.job_id = fail_job.job_id and r.lease_epoch = fail_job.lease_epoch
            and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]))  -- (another tenant's: fenced)
        returning r.job_id, r.created_at, r.attempt, r.lease_epoch, r.worker_id, r.started_at, r.progress
    )
    select jsonb_agg(to_jsonb(g)) into v_ended from gone as g;
    if v_ended is null then
        return null;
    end if;
    if length(v_traceback) > 8192 then
        v_traceback := '...' || right(v_traceback, 8189);  -- the innermost frames (the end) stay
    end if;
    select f.* into v_failure from jobctl._failure(cause, error, retryable) as f;
    select e.state into v_state
    from jobctl._end_attempts(v_ended, v_failure.error, v_failure.retryable, v_failure.now_due, v_traceback) as e;
    return v_state;
end
$$;

comment on function jobctl.fail_job(bigint, bigint, text, boolean, text, text) is
'Fail the attempt of a job running under lease_epoch. Returns failed (a retry is scheduled after
the job''s backoff), dead (no attempts left, or retryable = false) or NULL when fenced (not running under that
epoch: nothing changed). error is kept as last_error (truncated to 10,000 characters); traceback (optional: the
failure''s stack trace, innermost frame last) as last_traceback (get_job), its last 8,192 characters when longer:
''...'' and its last 8,189. NULL or empty: none (a completion or a cancel clears it, as it clears last_error).
cause (optional) says why the attempt ended when its handler did not fail it: timed_out (it ran past its timeout:
last_error is the reaper''s ''timed out: ran past its timeout'', error is not kept, a retry after the backoff) or
refused (its payload or result cannot be taken: dead at once, error kept); NULL: the handler''s failure.
Errors: JC001 NULL job_id, lease_epoch or retryable, an unknown cause.
Example:
select jobctl.fail_job(42, 7, ''smtp: connection refused'');
select jobctl.fail_job(43, 8, ''no recipient'', retryable => false);  -- dead at once
select jobctl.fail_job(44, 9, ''KeyError: 42'', traceback => ''Traceback (most recent call last): ...'');
select jobctl.fail_job(45, 3, null, cause => ''timed_out'');';
