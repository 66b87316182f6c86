-- jobctl.save_step: record that a running job's step finished with result: the first save of a
-- (job, step) wins. Fenced like complete_job: the job's _running row under lease_epoch is locked
-- FOR KEY SHARE until the caller commits, so a save commits only while that lease is current (a
-- complete, fail, reap, cancel or park deletes the row and waits; heartbeats, which change no key,
-- go on). Called in the transaction of the step's own writes, it makes them once-only with it.
-- Calls: _acting_tenants. Locks: the _running row (FOR KEY SHARE). Writes: _step (insert).
create or replace function jobctl.save_step(job_id bigint, lease_epoch bigint, step text, result jsonb default null)
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
    if save_step.job_id is null or save_step.lease_epoch is null then
        raise exception using errcode = 'JC001', message = 'job_id and lease_epoch must not be NULL';
    end if;
    if save_step.step is null or length(save_step.step) not between 1 and 200 or save_step.step ~ jobctl._unprintable()
       or save_step.step like 'event:%' then
        raise exception using errcode = 'JC001',
            message = 'step must be 1 to 200 printable characters, not starting with "event:"',
            detail = 'field: step', hint = 'Steps named event:<name> hold the outcomes of jobctl.await_event.';
    end if;
    if octet_length(save_step.result::text) > 262144 or jobctl._too_deep(save_step.result) then
        raise exception using errcode = 'JC001',
            message = format('result is %s bytes or nests over 100 levels; the limits are 262144 bytes and 100 levels',
                octet_length(save_step.result::text)),
            detail = 'field: result';
    end if;
    select r.* into v_run from jobctl._running as r
    where r.job_id = save_step.job_id and r.lease_epoch = save_step.lease_epoch
        and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]))  -- (another tenant's: fenced)
    for key share;
    if not found then
        return false;
    end if;
    perform jobctl._save_step(v_run, save_step.step, save_step.result);
    return true;
end
$$;

comment on function jobctl.save_step(bigint, bigint, text, jsonb) is
'Record that step of a job running under lease_epoch finished with result (a JSON value, or NULL).
The first save of a step wins: saving it again returns true and keeps the first result. Called in the
transaction of the step''s own writes, it commits them once with the step: it locks the lease until that
transaction ends, and commits only while the lease is current. Returns true, or false when fenced (not running
under that epoch: nothing written). Bounds: step 1 to 200 printable characters, not starting with "event:";
result at most 262144 bytes as text and 100 levels deep; at most 1000 steps a job.
Errors: JC001 NULL job_id or lease_epoch, a step or result out of bounds, the job''s 1001st step.
Example:
select jobctl.save_step(42, 7, ''charge'', ''{"charge_id": "ch_1"}'');';
