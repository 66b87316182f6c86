-- 0005_schedules: recurring schedules (jobctl.put_schedule, jobctl.expand_schedules).
-- Immutable once landed: later changes go into a new numbered migration.
--
-- One row per (tenant, name). next_fire_at is the first fire time not yet enqueued: the expander
-- locks due rows (FOR UPDATE SKIP LOCKED), enqueues their runs and moves next_fire_at past them
-- in one transaction, so each fire time is enqueued once however many expanders race. The row
-- changes once per run, so it stays small (a fillfactor leaves room for HOT updates).
create table jobctl.schedule (
    tenant_id text not null references jobctl.tenant (tenant_id),
    name text not null,
    cron text not null,
    queue text not null,
    payload jsonb not null,
    priority integer not null,
    catch_up integer not null,
    skip_overlap boolean not null,
    next_fire_at timestamptz not null,
    last_fire_at timestamptz,
    last_job_id bigint,
    last_job_created_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    primary key (tenant_id, name),
    constraint schedule_catch_up_check check (catch_up between 1 and 1000),
    constraint schedule_priority_check check (priority between -100 and 100)
) with (fillfactor = 70);

-- what is due: housekeeping probes it once a second per claiming session
create index schedule_next_fire_idx on jobctl.schedule (next_fire_at);
