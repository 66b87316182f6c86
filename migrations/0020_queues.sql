-- 0020_queues: queues as objects: a queue may be paused, and may cap its running jobs and its claim
-- rate across all tenants. Immutable once landed: later changes go into a new numbered migration.
--
-- A queue without a row has no limit and is not paused: rows are made by jobctl.put_queue only. The
-- claim rate is a token bucket in a sequence, as a tenant's (jobctl._bucket_room): no hot row,
-- nothing updated per claim. jobctl._put_tenant_sequence becomes jobctl._put_sequence (the same
-- names for the tenants' sequences), since queues' buckets are made by it too.
create table jobctl.queue (
    queue text primary key check (queue <> '' and length(queue) <= 200),
    max_running integer check (max_running >= 0),
    claim_rate numeric check (claim_rate > 0 and claim_rate <= 1000000),
    claim_burst integer check (claim_burst >= 1),
    claim_bucket regclass,
    paused boolean not null default false,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

-- a limited queue's running jobs, counted by claim_job's cap step
create index _running_queue_idx on jobctl._running (queue);

drop function if exists jobctl._put_tenant_sequence(text, text, bigint);
drop function if exists jobctl._cap(text[], boolean[], jobctl._picks);
