-- jobctl.run_schedule: run a schedule now, by hand: one job of its queue, payload and priority, due
-- now, submitted as the expander submits a run (jobctl._submit for the schedule's tenant: its quota
-- and submit rate apply; the payload is stored as given). Paused or not, and whatever skip_overlap
-- says: it is an explicit request. The job is recorded as the schedule's last job (last_job_id), so
-- with skip_overlap the next fire time is skipped while it is unfinished; next_fire_at and
-- last_fire_at (fire times of the expression) are unchanged. The job records the schedule and
-- now as its fire time. Only for the caller's tenants.
-- Locks: the schedule row. Writes: schedule (last_job_id), through _submit job, _ready, audit_log.
create or replace function jobctl.run_schedule(tenant_id text, name text)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_s jobctl.schedule;
    v_spec jobctl._job_spec;  -- fields left unset are the submit defaults
    v_job bigint;
begin
    perform jobctl._require_tenant(run_schedule.tenant_id, 'schedules:write');
    select * into v_s from jobctl.schedule as s
    where s.tenant_id = run_schedule.tenant_id and s.name = run_schedule.name
    for update;
    if not found then
        raise exception using errcode = 'P0002',
            message = format('no schedule %s of tenant %s', run_schedule.name, run_schedule.tenant_id),
            detail = 'field: name';
    end if;
    v_spec.tenant_id := v_s.tenant_id;
    v_spec.queue := v_s.queue;
    v_spec.payload := v_s.payload;
    v_spec.priority := v_s.priority;
    -- its fire time is now: the schedule's runs list it with the others (jobctl.schedule_runs)
    select s.job_id into v_job
    from jobctl._submit(array[v_spec], false, p_caller => false, p_schedule => v_s.name, p_fire_time => now()) as s;
    update jobctl.schedule as s set last_job_id = v_job, last_job_created_at = now()
    where s.tenant_id = run_schedule.tenant_id and s.name = run_schedule.name;
    perform jobctl._audit('run_schedule', run_schedule.tenant_id, jsonb_build_object(
        'name', run_schedule.name, 'job_id', v_job
    ));
    return v_job;
end
$$;

comment on function jobctl.run_schedule(text, text) is
'Run a schedule now, by hand: submit one job of its queue, payload and priority, due now, and return
its id; also when the schedule is paused, and whatever skip_overlap says. The job becomes the schedule''s
last_job_id (so with skip_overlap the next fire time is skipped while it is unfinished); next_fire_at and
last_fire_at are unchanged. The job records the schedule and now as its fire time (schedule_runs lists it).
The tenant''s max_pending and submit rate apply. Audited.
Errors: P0002 no such schedule, 42501 the caller may not write the tenant''s schedules, JC004 over max_pending,
JC005 over the submit rate.
Example:
select jobctl.run_schedule(''acme'', ''nightly-report'');';
