-- jobctl.resume_schedule: let a paused schedule fire again. Its next fire time is recomputed from
-- now (the first one strictly after now, and after the last run enqueued), so the fire times that
-- passed while it was paused are skipped, not caught up: a resume never enqueues a burst of missed
-- runs. In the schedule's time zone. A schedule that was not paused is left as it is. Only for the caller's tenants.
-- Locks: the schedule row. Writes: schedule (paused, next_fire_at), audit_log.
create or replace function jobctl.resume_schedule(tenant_id text, name text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_s jobctl.schedule;
begin
    perform jobctl._require_tenant(resume_schedule.tenant_id, 'schedules:write');
    select * into v_s from jobctl.schedule as s
    where s.tenant_id = resume_schedule.tenant_id and s.name = resume_schedule.name
    for update;
    if not found then
        raise exception using errcode = 'P0002',
            message = format('no schedule %s of tenant %s', resume_schedule.name, resume_schedule.tenant_id),
            detail = 'field: name';
    end if;
    if v_s.paused then
        -- (the clock, not the transaction's start: as put_schedule)
        update jobctl.schedule as s
        set paused = false,
            next_fire_at = jobctl._cron_walk(v_s.cron, greatest(clock_timestamp(), v_s.last_fire_at), false, v_s.time_zone),
            updated_at = now()
        where s.tenant_id = resume_schedule.tenant_id and s.name = resume_schedule.name;
        perform jobctl._audit('resume_schedule', resume_schedule.tenant_id, jsonb_build_object('name', resume_schedule.name));
    end if;
    return v_s.paused;
end
$$;

comment on function jobctl.resume_schedule(text, text) is
'Resume a paused schedule. Its next fire time becomes the first one after now: the runs it missed
while paused are skipped, never caught up (catch_up applies to downtime of the expanders, not to a pause). A
schedule that was not paused is left unchanged. Returns whether the state changed. Audited.
Errors: P0002 no such schedule, 42501 the caller may not write the tenant''s schedules.
Example:
select jobctl.resume_schedule(''acme'', ''nightly-report'');';
