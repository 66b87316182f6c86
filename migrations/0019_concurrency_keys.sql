-- 0019_concurrency_keys: jobs may carry a concurrency key (a customer, a downstream API, ...) and
-- a tenant may cap how many jobs of one key run at once: a key with limit 1 is a mutex. Immutable
-- once landed: later changes go into a new numbered migration.
--
-- A limited key's jobs are admitted, not claimed past a limit: a keyed job that becomes due waits
-- in jobctl._held, and jobctl._admit moves the key's earliest (run_at, job_id) into _ready while
-- the key has fewer due and running jobs than its limit, counted under a transaction advisory lock
-- per key in a later statement (the rule max_running uses). The claim never sees keys, so its cost
-- does not grow with their number. Every column added here is NULL for jobs without a key: a
-- metadata-only change on the existing rows.

alter table jobctl.job add column concurrency_key text;
alter table jobctl.job_archive add column concurrency_key text;
-- (PLAIN in the same statement: _ready and _running have no TOAST tables, migration 0014, and an
-- ALTER TABLE adds one at its end if a column could need it)
alter table jobctl._ready add column concurrency_key text, alter column concurrency_key set storage plain;
alter table jobctl._running add column concurrency_key text, alter column concurrency_key set storage plain;
alter table jobctl._delayed add column concurrency_key text;
alter type jobctl._job_spec add attribute concurrency_key text;

-- the due and running jobs of a key, counted by _admit (partial: jobs without a key are not in it)
create index _ready_key_idx on jobctl._ready (tenant_id, concurrency_key) where concurrency_key is not null;
create index _running_key_idx on jobctl._running (tenant_id, concurrency_key) where concurrency_key is not null;

-- due jobs of a limited key waiting for a place, earliest first
create table jobctl._held (
    tenant_id text not null,
    concurrency_key text not null,
    run_at timestamptz not null,
    job_id bigint not null,
    created_at timestamptz not null,
    queue text not null,
    priority smallint not null,
    primary key (tenant_id, concurrency_key, run_at, job_id)
);

-- a key's limit (max_running 0: none of its jobs is admitted until it is raised)
create table jobctl.concurrency_limit (
    tenant_id text not null references jobctl.tenant (tenant_id) on delete cascade,
    concurrency_key text not null,
    max_running integer not null check (max_running between 0 and 100000),
    primary key (tenant_id, concurrency_key)
);

-- the limit of the tenant's keys that have none of their own (NULL: unlimited)
alter table jobctl.tenant add column key_max_running integer check (key_max_running between 0 and 100000);

-- get_job and list_jobs show it
alter type jobctl.job_info add attribute concurrency_key text;
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
    j.backoff,
    j.concurrency_key
from (
    select * from jobctl.job
    union all
    select * from jobctl.job_archive
) as j
left join jobctl._running as r on r.job_id = j.job_id and r.lease_epoch = j.lease_epoch;

-- submit_job gains concurrency_key (a new signature: the old one goes)
drop function if exists jobctl.submit_job(text, text, jsonb, integer, timestamptz, text, integer, jsonb, interval, text);
