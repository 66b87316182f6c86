-- 0008_archive: finished jobs leave hot storage by whole partitions, never by DELETE.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- A day's partition of jobctl.job (and of jobctl._event) older than the hot retention is detached
-- by pg_partman's retention into schema jobctl_archive and attached, by jobctl.maintain_partitions
-- in the same transaction, to jobctl.job_archive (jobctl._event_archive), where get_job, list_jobs
-- and job_history still read it; an archive partition older than the archive retention is
-- dropped. Jobs still unfinished in a retiring partition (delayed far ahead, failing for days, a
-- paused tenant's backlog) are carried over into the hot default partition first.
create schema if not exists jobctl_archive;

create table jobctl.retention (
    only_row boolean primary key default true,
    hot interval not null default '7 days',
    archive interval not null default '90 days',
    constraint retention_only_row_check check (only_row),
    constraint retention_hot_check check (hot >= interval '1 day'),
    constraint retention_archive_check check (archive >= hot)
);
insert into jobctl.retention default values;

-- The same columns in the same order as the hot tables (ATTACH needs that), and the indexes the
-- readers use; the detached partitions' own indexes match them, so ATTACH builds none.
create table jobctl.job_archive (like jobctl.job) partition by range (created_at);
alter table jobctl.job_archive add constraint job_archive_pkey primary key (job_id, created_at);
create index job_archive_tenant_idx on jobctl.job_archive (tenant_id, job_id desc);

create table jobctl._event_archive (like jobctl._event) partition by range (job_created_at);
create index _event_archive_job_idx on jobctl._event_archive (job_id);

-- jobs carried over past their day (see jobctl._retire_partitions) reach the archive one by one
-- when they finish, and land here; deleted past the archive retention
create table jobctl.job_archive_default partition of jobctl.job_archive default;
create table jobctl._event_archive_default partition of jobctl._event_archive default;

-- a partition as jobctl._partitions lists it
create type jobctl._partition as (
    parent regclass,
    part regclass,
    key_column text,
    lower_bound timestamptz,
    upper_bound timestamptz,
    seal_name text,
    sealed boolean
);

-- get_job and list_jobs read the archive too
create or replace view jobctl._job_view as
select
    j.job_id,
    j.tenant_id,
    j.queue,
    j.state,
    j.priority::integer as priority,
    j.payload,
    j.run_at,
    j.attempt,
    j.max_attempts,
    j.dedup_key,
    j.created_at,
    j.started_at,
    j.finished_at,
    j.last_error,
    j.result,
    j.worker_id,
    r.lease_expires_at,
    j.lease_epoch,
    j.timeout,
    j.backoff
from (
    select * from jobctl.job
    union all
    select * from jobctl.job_archive
) as j
left join jobctl._running as r on r.job_id = j.job_id and r.lease_epoch = j.lease_epoch;

-- pg_partman detaches into jobctl_archive instead of dropping; only jobctl.maintain_partitions runs
-- it for these sets (automatic_maintenance off: a bare run_maintenance() or pg_partman's background
-- worker would detach a partition without carrying its unfinished jobs over).
do $$
begin
    execute format(
        'update %I.part_config set retention = %L, retention_keep_table = true, retention_schema = %L,
             automatic_maintenance = %L
         where parent_table in (%L, %L)',
        (select e.extnamespace::regnamespace::text from pg_catalog.pg_extension as e where e.extname = 'pg_partman'),
        '7 days', 'jobctl_archive', 'off', 'jobctl.job', 'jobctl._event'
    );
end
$$;
