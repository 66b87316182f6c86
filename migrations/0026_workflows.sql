-- Dependencies and batches (issue 22): a job may wait for other jobs (its parents) before it becomes
-- due, and a batch's callbacks wait for every member to end. docs/workflows.md.

-- waiting: submitted, waiting for its parents (or its batch's members); never claimed in this state
alter table jobctl.job drop constraint job_state_check;
alter table jobctl.job add constraint job_state_check check (
    state in ('pending', 'running', 'completed', 'failed', 'dead', 'cancelled', 'waiting')
);

-- depends_on: the parents named at submit (what parent_results reads); workflow_id: the first job id
-- of the submit_workflow call that made it; batch_id: the batch it is a member of
alter table jobctl.job add column depends_on bigint[];
alter table jobctl.job add column workflow_id bigint;
alter table jobctl.job add column batch_id bigint;
alter table jobctl.job_archive add column depends_on bigint[];
alter table jobctl.job_archive add column workflow_id bigint;
alter table jobctl.job_archive add column batch_id bigint;
create index job_workflow_idx on jobctl.job (workflow_id) where workflow_id is not null;
create index job_batch_idx on jobctl.job (batch_id) where batch_id is not null;

-- The narrow row of a waiting job, as _delayed holds a delayed one: its ownership token (whoever
-- deletes it moves the job on: released to _ready/_held/_delayed, or cancelled).
create table jobctl._waiting (
    job_id bigint primary key,
    created_at timestamptz not null,
    tenant_id text not null,
    queue text not null,
    priority smallint not null,
    run_at timestamptz not null,
    concurrency_key text,
    cancel_on_failure boolean not null,  -- a dead or cancelled parent cancels it (else it waits on)
    batch_id bigint                      -- a batch's callback: released when the batch ends
);
create index _waiting_batch_idx on jobctl._waiting (batch_id) where batch_id is not null;

-- One row per parent the child still waits for: deleted by the parent's completion (an on_end edge,
-- a batch member's, by its completion, death or cancellation). Insert and delete only: no row that
-- every parent's completion updates, so a wide fan-in's parents do not queue on one row lock.
create table jobctl._edge (
    parent_id bigint not null,
    child_id bigint not null,
    on_end boolean not null default false
) with (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000);
create index _edge_parent_idx on jobctl._edge (parent_id);
-- a child's edges by parent: probes walk from the newest parent, whose edges go last (parents end
-- roughly in id order), so they meet few dead entries (jobctl._release_waiting)
create index _edge_child_idx on jobctl._edge (child_id, parent_id);

-- A child some parent's end left waiting because other edges were still there when it looked: one
-- of them may have been deleted by a transaction not yet committed (two last parents completing at
-- once each see the other's edge). A later transaction (a claim's housekeeping, the tick) looks
-- again at what is committed by then: jobctl._recheck_waiting.
create table jobctl._recheck (
    child_id bigint not null
) with (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000);

-- A batch: its members carry batch_id; its callbacks (on_finish, on_success, on_discard) wait in
-- _waiting with batch_id until the last member ends; counts are the members' outcomes then.
create sequence jobctl.batch_id_seq;
create table jobctl.batch (
    batch_id bigint primary key default nextval('jobctl.batch_id_seq'),
    tenant_id text not null,
    created_at timestamptz not null default now(),
    size integer not null,
    on_finish bigint,
    on_success bigint,
    on_discard bigint,
    finished_at timestamptz,
    counts jsonb
);
create index batch_tenant_idx on jobctl.batch (tenant_id, batch_id desc);

-- the counters (migration 0025) count waiting jobs in a gauge of their own; job_counts ends with it
alter table jobctl._stat_delta add column waiting integer;
alter table jobctl._stat add column waiting bigint not null default 0;
drop function if exists jobctl.job_counts(text, text);

alter type jobctl._job_spec add attribute depends_on bigint[];
alter type jobctl._job_spec add attribute after integer[];  -- 1-based ordinals of earlier specs of the call
alter type jobctl._job_spec add attribute cancel_on_failure boolean;
alter type jobctl._job_spec add attribute batch_id bigint;     -- a member of this batch
alter type jobctl._job_spec add attribute callback_of bigint;  -- a callback of this batch: waits for it

-- Uniqueness scoped by state and period, and debounce: the key's holder is the newest job with it
-- (one index descent, however many finished jobs kept the key), if it is in one of dedup_states and
-- was created in the current dedup_period; dedup_mode replace / preserve_run_at updates a pending
-- holder instead of returning it unchanged.
alter type jobctl._job_spec add attribute dedup_states text[];
alter type jobctl._job_spec add attribute dedup_period interval;
alter type jobctl._job_spec add attribute dedup_mode text;
create index job_dedup_newest_idx on jobctl.job (tenant_id, dedup_key, job_id) where dedup_key is not null;
drop index jobctl.job_dedup_idx;

alter type jobctl.job_info add attribute depends_on bigint[];
alter type jobctl.job_info add attribute workflow_id bigint;
alter type jobctl.job_info add attribute batch_id bigint;
alter type jobctl.job_info add attribute parent_results jsonb;  -- get_job only (lists leave it NULL)

-- submit_job gains depends_on, on_parent_failure and the dedup scope (a new signature: the old one goes)
drop function if exists jobctl.submit_job(
    text, text, jsonb, integer, timestamptz, text, integer, jsonb, interval, text, text, text
);
-- _submit gains p_workflow (a new signature: the old one goes)
drop function if exists jobctl._submit(jobctl._job_spec[], boolean, boolean);
