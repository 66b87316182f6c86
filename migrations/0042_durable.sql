-- 0042_durable: durable execution (docs/durable.md). A job's handler saves named steps whose
-- results later attempts read back, and gives up its lease to sleep or to wait for its tenant's
-- event. Immutable once landed: later changes go into a new numbered migration.

-- A job's saved steps: the first save of a (job, step) wins. Steps leave with their job's day,
-- after the hot retention (jobctl._expire_durable); the jobs carried over keep theirs.
create table jobctl._step (
    job_id bigint not null,
    step text not null,
    job_created_at timestamptz not null,
    tenant_id text not null,
    attempt integer not null,
    lease_epoch bigint not null,
    saved_at timestamptz not null default clock_timestamp(),
    result jsonb,
    constraint _step_pkey primary key (job_id, step)
);
create index _step_job_created_idx on jobctl._step (job_created_at);

-- A tenant's events: the first emit of an event wins; kept as long as hot jobs.
create table jobctl._emitted (
    tenant_id text not null,
    event text not null,
    emitted_at timestamptz not null default clock_timestamp(),
    payload jsonb,
    constraint _emitted_pkey primary key (tenant_id, event)
);
create index _emitted_at_idx on jobctl._emitted (emitted_at);

-- The event a parked job waits for. Its token is its _delayed row (parked 'event', due at the
-- timeout or never); this row tells emit_event whom to wake and a resumed await_event that its
-- wait timed out. run_at is the _delayed row's, so that the row is found by its key.
create table jobctl._awaiting (
    job_id bigint not null,
    event text not null,
    tenant_id text not null,
    job_created_at timestamptz not null,
    run_at timestamptz not null,
    timeout_at timestamptz,
    since timestamptz not null default clock_timestamp(),
    constraint _awaiting_pkey primary key (job_id, event)
);
create index _awaiting_event_idx on jobctl._awaiting (tenant_id, event);

-- why a delayed job is waiting: NULL (a delayed submit or a retry's backoff), 'sleep' (sleep_job),
-- 'event' (await_event). Metadata only: no row is rewritten.
alter table jobctl._delayed add column parked text;
-- the parked jobs, for the jobs list's filter (jobctl._filter_jobs): only they are in it
create index _delayed_parked_idx on jobctl._delayed (parked, job_id) where parked is not null;

-- a parked job as get_job and the lists show it: parked 'sleep', 'event' or 'job' (await_job), and
-- what it awaits (the event's name, the child's id)
alter type jobctl.job_info add attribute parked text, add attribute awaiting text;

-- The children a job spawned and waits for (await_job), one per step: the step's child is submitted
-- once. cancel_with_parent: a cancel of the parent cancels the child if it has not ended.
create table jobctl._spawn (
    parent_id bigint not null,
    step text not null,
    child_id bigint not null,
    cancel_with_parent boolean not null,
    constraint _spawn_pkey primary key (parent_id, step)
);

-- Emitting a tenant's events through the API needs the scope events:emit. A token made with every
-- scope there was (`jobctl token create` without --scope) gains it, so that it keeps having every
-- scope; a token made with chosen scopes keeps exactly those. Scopes are stored sorted and distinct.
update jobctl._api_token as t
set
    scopes = array(
        select distinct s.scope from unnest(t.scopes || 'events:emit'::text) as s (scope)
        order by 1
    )
where
    t.revoked_at is null
    and t.scopes @> array[
        'audit:read', 'jobs:cancel', 'jobs:delete', 'jobs:read', 'jobs:retry', 'jobs:submit', 'queues:read',
        'queues:write', 'schedules:read', 'schedules:write', 'tenants:read', 'tenants:write', 'workers:read'
    ]::text[];
