-- jobctl.pause_schedule: stop a schedule firing until it is resumed (jobctl.resume_schedule); the
-- expander skips it, and the fire times that pass meanwhile are never enqueued. Runs already
-- enqueued stay, and run_schedule still runs it by hand. Only for the caller's tenants.
-- Locks: the schedule row. Writes: schedule (paused), audit_log.
create or replace function jobctl.pause_schedule(tenant_id text, name text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_was boolean;
begin
    perform jobctl._require_tenant(pause_schedule.tenant_id, 'schedules:write');
    select s.paused into v_was from jobctl.schedule as s
    where s.tenant_id = pause_schedule.tenant_id and s.name = pause_schedule.name
    for update;
    if not found then
        raise exception using errcode = 'P0002',
            message = format('no schedule %s of tenant %s', pause_schedule.name, pause_schedule.tenant_id),
            detail = 'field: name';
    end if;
    if not v_was then
        update jobctl.schedule as s set paused = true, updated_at = now()
        where s.tenant_id = pause_schedule.tenant_id and s.name = pause_schedule.name;
        perform jobctl._audit('pause_schedule', pause_schedule.tenant_id, jsonb_build_object('name', pause_schedule.name));
    end if;
    return not v_was;
end
$$;

comment on function jobctl.pause_schedule(text, text) is
'Pause a schedule: it fires nothing until resume_schedule, which starts it again from the next fire
time after the resume (the runs missed meanwhile are never enqueued). Runs already enqueued stay; run_schedule
still runs it by hand; put_schedule keeps it paused. Returns whether the state changed. Audited.
Errors: P0002 no such schedule, 42501 the caller may not write the tenant''s schedules.
Example:
select jobctl.pause_schedule(''acme'', ''nightly-report'');';
