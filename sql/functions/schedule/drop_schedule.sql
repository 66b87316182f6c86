-- jobctl.drop_schedule: remove a schedule; runs already enqueued stay. Writes: schedule (delete).
create or replace function jobctl.drop_schedule(tenant_id text, name text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform jobctl._require_tenant(drop_schedule.tenant_id, 'schedules:write');
    delete from jobctl.schedule as s where s.tenant_id = drop_schedule.tenant_id and s.name = drop_schedule.name;
    return found;
end
$$;

comment on function jobctl.drop_schedule(text, text) is
'Remove a schedule; true if it existed. Runs already enqueued are kept. Only for the caller''s
tenants.
Errors: 42501 the caller may not write the tenant''s schedules.
Example:
select jobctl.drop_schedule(''acme'', ''nightly-report'');';
