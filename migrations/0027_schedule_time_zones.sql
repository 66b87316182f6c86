-- 0027_schedule_time_zones: schedules evaluated in a time zone, and each job recording the
-- schedule and fire time it came from. Immutable once landed: later changes go into a new
-- numbered migration.

-- the zone whose wall time a schedule's expression reads (a name of pg_timezone_names)
alter table jobctl.schedule add column time_zone text not null default 'UTC';

-- The time zone names PostgreSQL knows, for jobctl._time_zone to check a name without reading
-- pg_timezone_names (which reads every zone file: tens of milliseconds a call). A name missing
-- here (tzdata newer than this copy) is looked up in pg_timezone_names after all.
create table jobctl._time_zone_name (
    name text primary key
);
create index _time_zone_name_lower_idx on jobctl._time_zone_name (lower(name));
insert into jobctl._time_zone_name (name)
select z.name from pg_catalog.pg_timezone_names as z
on conflict do nothing;

-- the schedule and fire time a job is a run of (NULL: not a schedule's run); last in both tables,
-- which keep the same columns in the same order (ATTACH). A schedule's runs, newest first, are a
-- range of the partial indexes (jobctl.schedule_runs).
alter table jobctl.job add column schedule_name text, add column fire_time timestamptz;
alter table jobctl.job_archive add column schedule_name text, add column fire_time timestamptz;
create index job_schedule_idx on jobctl.job (tenant_id, schedule_name, job_id desc)
where schedule_name is not null;
create index job_archive_schedule_idx on jobctl.job_archive (tenant_id, schedule_name, job_id desc)
where schedule_name is not null;
alter type jobctl.job_info add attribute schedule_name text, add attribute fire_time timestamptz;

-- new signatures (each gains a time zone, _submit the schedule and fire time): the old ones go
drop function if exists jobctl.cron_next(text, timestamptz);
drop function if exists jobctl._cron_walk(text, timestamptz, boolean);
drop function if exists jobctl.put_schedule(text, text, text, text, jsonb, integer, integer, boolean);
drop function if exists jobctl._submit(jobctl._job_spec[], boolean, boolean);
-- list_schedules shows the zone: a new result type
drop function if exists jobctl.list_schedules(text);
