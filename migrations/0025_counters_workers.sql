-- 0025_counters_workers: job counters kept without scanning the job partitions, a registry of
-- live workers, pausable schedules and a W3C traceparent stored with each job. Immutable once
-- landed: later changes go into a new numbered migration.
--
-- Counters. Every statement that moves jobs between the hot tables also inserts, in the same
-- transaction, one row per (tenant, queue) it touched into jobctl._stat_delta: signed changes of
-- the gauges and counts of the events. The table is insert-only and has no index, so writers never
-- meet on a row (a counter row that every claim updated would serialise the claims). jobctl.tick
-- folds the deltas into jobctl._stat (totals) and jobctl._stat_minute (per minute, for charts and
-- rates); a reader adds the deltas not yet folded, so what it reads is exact at its snapshot. The
-- gauges are defined by where a job is, which every statement knows without reading the job row:
--   pending   due: in _ready or _held (a retry whose backoff has passed is pending again)
--   delayed   in _delayed before its first attempt (run_at in the future)
--   retrying  in _delayed after a failed attempt, waiting out its backoff
--   running   in _running
--   dead, completed, cancelled   in that state in hot storage (retention and archiving take them out)
-- Wait (claim time - run_at) and run time (finish - start) go into fixed histogram buckets
-- (jobctl.histogram_bounds()); a delta row carries the bucket of its jobs, so a batch whose jobs fall
-- into several buckets writes one row per bucket.

alter table jobctl._delayed add column retry boolean not null default false;
update jobctl._delayed as d set retry = true
from jobctl.job as j
where j.job_id = d.job_id and j.created_at = d.created_at and j.state = 'failed';

create table jobctl._stat_delta (
    tenant_id text not null,
    queue text not null,
    at timestamptz not null default now(),
    -- gauge changes
    pending integer,
    delayed integer,
    retrying integer,
    running integer,
    dead integer,
    completed integer,
    cancelled integer,
    -- event counts
    submitted integer,
    claimed integer,
    succeeded integer,  -- completions (the completed gauge also falls with retention)
    failed integer,     -- failed attempts, whether retried or dead
    died integer,       -- attempts that made the job dead
    withdrawn integer,  -- cancellations
    retried integer,    -- dead or cancelled jobs made due again by retry_job(s)
    fenced integer,     -- acks refused for a stale lease epoch
    -- histograms: the jobs counted in claimed (wait) or succeeded + failed (run) fall into this bucket
    wait_bucket smallint,
    wait_seconds double precision,
    run_bucket smallint,
    run_seconds double precision
) with (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_cost_delay = 0
);

create table jobctl._stat (
    tenant_id text not null,
    queue text not null,
    pending bigint not null default 0,
    delayed bigint not null default 0,
    retrying bigint not null default 0,
    running bigint not null default 0,
    dead bigint not null default 0,
    completed bigint not null default 0,
    cancelled bigint not null default 0,
    submitted bigint not null default 0,
    claimed bigint not null default 0,
    succeeded bigint not null default 0,
    failed bigint not null default 0,
    died bigint not null default 0,
    withdrawn bigint not null default 0,
    retried bigint not null default 0,
    fenced bigint not null default 0,
    wait_buckets bigint[] not null default '{}',  -- per bucket, not cumulative
    wait_seconds double precision not null default 0,
    run_buckets bigint[] not null default '{}',
    run_seconds double precision not null default 0,
    -- the run_at of the lane's oldest due job in _ready, as the tick last probed it (jobctl._stat_probe:
    -- a probe per lane is too dear for every reader at thousands of lanes); NULL once the lane is empty
    oldest_due_at timestamptz,
    probed_at timestamptz,
    primary key (tenant_id, queue)
) with (fillfactor = 70);  -- the fold's and the probes' updates are HOT

-- when the tick last probed lanes for their oldest due job: at most one batch of probes a 100 ms
create unlogged table jobctl._stat_probed (at timestamptz not null);
insert into jobctl._stat_probed values ('-infinity');

create table jobctl._stat_minute (
    minute timestamptz not null,
    tenant_id text not null,
    queue text not null,
    submitted bigint not null default 0,
    claimed bigint not null default 0,
    succeeded bigint not null default 0,
    failed bigint not null default 0,
    died bigint not null default 0,
    fenced bigint not null default 0,
    wait_buckets bigint[] not null default '{}',
    wait_seconds double precision not null default 0,
    run_buckets bigint[] not null default '{}',
    run_seconds double precision not null default 0,
    primary key (minute, tenant_id, queue)
);

-- the gauges as they stand, from one scan now (later they move by deltas only)
-- noqa: disable=AL03
insert into jobctl._stat (tenant_id, queue, pending, delayed, retrying, running, dead, completed, cancelled)
select
    x.tenant_id,
    x.queue,
    sum(x.pending) as pending,
    sum(x.delayed) as delayed,
    sum(x.retrying) as retrying,
    sum(x.running) as running,
    sum(x.dead) as dead,
    sum(x.completed) as completed,
    sum(x.cancelled) as cancelled
from (
    select
        r.tenant_id,
        r.queue,
        count(*) as pending,
        0 as delayed,
        0 as retrying,
        0 as running,
        0 as dead,
        0 as completed,
        0 as cancelled
    from jobctl._ready as r
    group by 1, 2
    union all
    select
        h.tenant_id,
        h.queue,
        count(*),
        0,
        0,
        0,
        0,
        0,
        0
    from jobctl._held as h
    group by 1, 2
    union all
    select
        d.tenant_id,
        d.queue,
        0,
        count(*) filter (where not d.retry),
        count(*) filter (where d.retry),
        0,
        0,
        0,
        0
    from jobctl._delayed as d
    group by 1, 2
    union all
    select
        u.tenant_id,
        u.queue,
        0,
        0,
        0,
        count(*),
        0,
        0,
        0
    from jobctl._running as u
    group by 1, 2
    union all
    select
        j.tenant_id,
        j.queue,
        0,
        0,
        0,
        0,
        count(*) filter (where j.state = 'dead'),
        count(*) filter (where j.state = 'completed'),
        count(*) filter (where j.state = 'cancelled')
    from jobctl.job as j
    where j.state in ('dead', 'completed', 'cancelled')
    group by 1, 2
) as x
group by 1, 2;
-- noqa: enable=AL03

-- Workers report themselves with jobctl.worker_beat; the dashboard lists the live ones.
create table jobctl._worker (
    worker_id text primary key,
    host text not null,
    pid integer not null,
    queues text[] not null,
    concurrency integer not null,
    in_flight integer not null default 0,
    started_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    login text not null default session_user  -- only this login beats or removes it
) with (fillfactor = 50);  -- beats are HOT updates

-- a paused schedule fires nothing until resumed (jobctl.pause_schedule, jobctl.resume_schedule)
alter table jobctl.schedule add column paused boolean not null default false;

-- the W3C trace context of the submit, handed to the worker that runs the job (tracing)
alter table jobctl.job add column traceparent text;
alter table jobctl.job_archive add column traceparent text;
alter type jobctl._job_spec add attribute traceparent text;
alter type jobctl.job_info add attribute traceparent text;

-- submit_job gains traceparent (a new signature: the old one goes)
drop function if exists jobctl.submit_job(text, text, jsonb, integer, timestamptz, text, integer, jsonb, interval, text, text);
-- claim_job (and its last step) also return it: a new result type
drop function if exists jobctl.claim_job(text, text[], integer, interval);
drop function if exists jobctl._start_attempts(bigint[], timestamptz[], text, timestamptz, interval);
-- list_schedules shows whether a schedule is paused: a new result type
drop function if exists jobctl.list_schedules(text);
-- _filter_jobs can list newest first and the archive too (find_jobs): a new signature
drop function if exists jobctl._filter_jobs(jsonb, text[], text[], bigint, integer);
