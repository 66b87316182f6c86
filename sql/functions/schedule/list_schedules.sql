-- jobctl.list_schedules: the schedules of one tenant (NULL: every tenant), paused ones included.
create or replace function jobctl.list_schedules(tenant_id text default null)
returns table (
    tenant_id text, name text, cron text, queue text, payload jsonb, priority integer, catch_up integer,
    skip_overlap boolean, next_fire_at timestamptz, last_fire_at timestamptz, last_job_id bigint,
    created_at timestamptz, updated_at timestamptz, paused boolean, time_zone text
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select s.tenant_id, s.name, s.cron, s.queue, s.payload, s.priority, s.catch_up, s.skip_overlap,
        s.next_fire_at, s.last_fire_at, s.last_job_id, s.created_at, s.updated_at, s.paused, s.time_zone
    from jobctl.schedule as s
    where (list_schedules.tenant_id is null or s.tenant_id = list_schedules.tenant_id)
        -- the caller's tenants only (NULL: all of them)
        and s.tenant_id = any(coalesce((select jobctl._acting_tenants('schedules:read')), array[s.tenant_id]))
    order by s.tenant_id, s.name
$$;

comment on function jobctl.list_schedules(text) is
'The schedules of a tenant (NULL: all of the caller''s), ordered by tenant_id and name, with
their next and last fire times, whether they are paused, and the time zone the expression is read in (pause_schedule: a paused schedule''s next_fire_at
is recomputed when it is resumed).
Errors: none.
Example:
select name, cron, next_fire_at from jobctl.list_schedules(''acme'');';
