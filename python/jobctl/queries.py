"""Every SQL statement the Python shell runs, by name: each is one call of a jobctl function.

Statements are static text (their plans are cached per session) with explicit casts, and use
named parameters. The client (jobctl.client, which the CLI and the HTTP API call), the worker, the
API's token check and health ping, and `jobctl token revoke`'s check of a full token import them from
here and nowhere else.
"""

from __future__ import annotations

# --- submitting: submit_jobs handles absent keys as the contract's defaults
SUBMIT_JOBS = "select job_id, duplicate from jobctl.submit_jobs(%(jobs)s::jsonb)"
# one job (a submit_jobs element) due `seconds` from now by the database clock
SUBMIT_JOB_AFTER = """
select job_id, duplicate from jobctl.submit_jobs(jsonb_build_array(
    %(job)s::jsonb || jsonb_build_object('run_at', now() + make_interval(secs => %(seconds)s::float8))
))
"""
SUBMIT_JOB = """
select job_id, duplicate from jobctl.submit_job(%(tenant_id)s::text, %(queue)s::text, %(payload)s::jsonb)
"""

# --- the worker's side. Payloads come as text: the worker decodes each job's on its own (one that
# cannot be decoded fails that job, not the claim). A claim's commit does not wait for its WAL flush
# (flush => false): one lost in a crash is claimed again, and its epoch is never handed out again
# (docs/design.md, Fencing across a crash)
CLAIM_JOB = """
select job_id, tenant_id, queue, payload::text, priority, attempt, max_attempts, lease_epoch,
    lease_expires_at, extract(epoch from timeout)::float8 as timeout_s, traceparent
from jobctl.claim_job(%(worker_id)s::text, %(queues)s::text[], %(max_jobs)s::int, %(lease)s::interval,
    flush => false)
"""
# a worker serving several shards shares its slots by each shard's claimable weight
CLAIMABLE_WEIGHT = "select jobctl.claimable_weight(%(queues)s::text[])"
# a multi-shard worker's slots shared by its shards' claimable weights (any shard answers alike)
SLOT_SHARES = "select jobctl.slot_shares(%(slots)s::int, %(weights)s::float8[])"
# progress (NULL: none new) over jobctl.heartbeat's bound (2,000 bytes as jsonb) is not sent, so that it
# cannot fail the other jobs' heartbeats: its size comes back as refused_bytes
HEARTBEATS = """
select a.job_id,
    jobctl.heartbeat(a.job_id, a.lease_epoch, %(extend)s::interval,
        case when pg_column_size(a.progress) <= 2000 then a.progress end) as status,
    nullif(greatest(pg_column_size(a.progress), 2000), 2000) as refused_bytes
from unnest(%(job_ids)s::bigint[], %(lease_epochs)s::bigint[], %(progress)s::jsonb[])
    as a (job_id, lease_epoch, progress)
"""
COMPLETE_JOB = "select jobctl.complete_job(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(result)s::jsonb)"
# the worker's batch completion: complete_jobs answers a row per job in input order; only the fenced
# ones come back (their place in the batch, from 1), since a batch of 1,000 is rarely fenced at all
COMPLETE_JOBS = """
select c.n
from jobctl.complete_jobs(%(job_ids)s::bigint[], %(lease_epochs)s::bigint[], %(results)s::jsonb[])
    with ordinality as c (job_id, completed, n)
where not c.completed
"""
FAIL_JOB = """
select jobctl.fail_job(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(error)s::text, %(retryable)s::boolean,
    %(traceback)s::text, %(cause)s::text)
"""
RELEASE_JOB = "select jobctl.release_job(%(job_id)s::bigint, %(lease_epoch)s::bigint)"
LISTEN = "listen jobctl"
# a hint's payload is its queue's tag, not its name: a worker with a queue filter wakes on its queues' tags
HINT_TAGS = "select jobctl.hint_tags(%(queues)s::text[]) as tags"
HINT_SENDERS = "select jobctl.hint_senders() as pids"
HINT_WINDOW = "select jobctl.hint_window() as seconds"  # how long to look again after a hint
TICK = "select jobctl.tick(false)"  # periodic work, a few times a second (one caller at a time does it)

# --- operating. Each function acts only for the caller's tenants (with an API token: the token's
# tenant): another tenant's job is as unknown as a missing one.
# get_job with the archive's fallback: the job's row (files NULL), or the archive files that may hold it
LOCATE_JOB = "select (l.job).*, l.files from jobctl.locate_job(%(job_id)s::bigint) as l"
LIST_JOBS = """
select * from jobctl.list_jobs(%(tenant_id)s::text, %(state)s::text, %(queue)s::text, %(before_id)s::bigint,
    %(max_rows)s::int)
"""
JOB_HISTORY = "select * from jobctl.job_history(%(job_id)s::bigint)"
CANCEL_JOB = "select jobctl.cancel_job(%(job_id)s::bigint) as state"
RETRY_JOB = "select jobctl.retry_job(%(job_id)s::bigint) as state"
# waiting for a job (jobctl.waiting): LISTEN on the watcher's random channel (an identifier, composed
# with psycopg.sql), then register it; watch_job returns the job as get_job does
LISTEN_CHANNEL = "listen {}"
WATCH_JOB = "select * from jobctl.watch_job(%(job_id)s::bigint, %(channel)s::text, %(wait)s::interval)"

# --- tenants and tokens
PUT_TENANT = """
select jobctl.put_tenant(%(tenant_id)s::text, %(weight)s::int, %(max_pending)s::bigint, %(max_running)s::int,
    %(submit_rate)s::numeric, %(submit_burst)s::int, %(claim_rate)s::numeric, %(claim_burst)s::int,
    %(encrypt_payloads)s::boolean)
"""
LIST_TENANTS = "select * from jobctl.list_tenants()"
GET_TENANT = "select * from jobctl.list_tenants() as t where t.tenant_id = %(tenant_id)s::text"
PAUSE_TENANT = "select jobctl.pause_tenant(%(tenant_id)s::text, %(paused)s::boolean) as changed"
PUT_CONCURRENCY_LIMIT = """
select jobctl.put_concurrency_limit(%(tenant_id)s::text, %(concurrency_key)s::text, %(max_running)s::int)
"""
LIST_CONCURRENCY_LIMITS = "select * from jobctl.list_concurrency_limits(%(tenant_id)s::text)"

# --- queues (shared by every tenant: administrators only)
PUT_QUEUE = """
select jobctl.put_queue(%(queue)s::text, %(max_running)s::int, %(claim_rate)s::numeric, %(claim_burst)s::int,
    %(paused)s::boolean)
"""
PAUSE_QUEUE = "select jobctl.pause_queue(%(queue)s::text, %(paused)s::boolean) as changed"
LIST_QUEUES = "select * from jobctl.list_queues()"
GET_QUEUE = "select * from jobctl.list_queues() as q where q.queue = %(queue)s::text"

# --- schedules: NULL priority, catch_up, skip_overlap or time_zone is the function's default
PUT_SCHEDULE = """
select jobctl.put_schedule(%(tenant_id)s::text, %(name)s::text, %(cron)s::text, %(queue)s::text,
    %(payload)s::jsonb, %(priority)s::int, %(catch_up)s::int, %(skip_overlap)s::boolean, %(time_zone)s::text)
"""
LIST_SCHEDULES = "select * from jobctl.list_schedules(%(tenant_id)s::text)"
GET_SCHEDULE = "select * from jobctl.list_schedules(%(tenant_id)s::text) as s where s.name = %(name)s::text"
DROP_SCHEDULE = "select jobctl.drop_schedule(%(tenant_id)s::text, %(name)s::text) as dropped"
PAUSE_SCHEDULE = "select jobctl.pause_schedule(%(tenant_id)s::text, %(name)s::text) as changed"
RESUME_SCHEDULE = "select jobctl.resume_schedule(%(tenant_id)s::text, %(name)s::text) as changed"
RUN_SCHEDULE = "select jobctl.run_schedule(%(tenant_id)s::text, %(name)s::text) as job_id"
SCHEDULE_RUNS = """
select * from jobctl.schedule_runs(%(tenant_id)s::text, %(name)s::text, %(before_id)s::bigint,
    %(max_rows)s::int)
"""
NEXT_FIRE_TIMES = """
select at from jobctl.next_fire_times(%(cron)s::text, %(count)s::int, %(time_zone)s::text)
"""

CREATE_API_TOKEN = """
select jobctl.create_api_token(%(tenant_id)s::text, %(scopes)s::text[], %(label)s::text) as token
"""
REVOKE_API_TOKEN = "select jobctl.revoke_api_token(%(token_id)s::bigint) as revoked"
LIST_API_TOKENS = "select * from jobctl.list_api_tokens(%(tenant_id)s::text)"
GRANT_TENANT = "select jobctl.grant_tenant(%(role)s::text, %(tenant_id)s::text) as granted"
REVOKE_TENANT = "select jobctl.revoke_tenant(%(role)s::text, %(tenant_id)s::text) as revoked"
# the grants of the caller's tenants (list_tenant_grants shows only those); with a tenant_id, that
# tenant's only, every-tenant grants left out
LIST_TENANT_GRANTS = """
select * from jobctl.list_tenant_grants() as g
where %(tenant_id)s::text is null or g.tenant_id = %(tenant_id)s::text
"""
AUTHENTICATE = "select token_id, tenant_id, scopes from jobctl.authenticate(%(token)s::text, %(scope)s::text)"

# --- figures and health
STATS = "select * from jobctl.stats(%(tenant_id)s::text, %(queue)s::text)"
CLAIM_METRICS = """
select * from jobctl.claim_metrics(%(window)s::interval, %(tenant_id)s::text, %(queue)s::text)
"""
HEALTH_CHECKS = "select * from jobctl.health_checks()"

# --- workers (shared by every tenant: listed for callers acting for every tenant; their beats:
# WORKER_BEAT, WORKER_GONE below) and the audit log
LIST_WORKERS = "select * from jobctl.list_workers(%(stale)s::interval)"
LIST_AUDIT = "select * from jobctl.list_audit(%(tenant_id)s::text, %(before_id)s::bigint, %(max_count)s::int)"
PING = "select 1"

# --- the database clock: the ages `jobctl stats` and `jobctl top` show
NOW = "select now() as now"

# --- bulk actions on a filter (jobctl._job_filter's keys): the count a confirmation states first, then
# one bounded batch a call, the caller looping on last_id (docs/design.md, Bulk actions)
COUNT_JOBS = "select * from jobctl.count_jobs(%(filter)s::jsonb, %(action)s::text, %(max_count)s::int)"
# a page of the filter's jobs, hot and archived, newest first (the dashboard's list)
FIND_JOBS = "select * from jobctl.find_jobs(%(filter)s::jsonb, %(before_id)s::bigint, %(max_rows)s::int)"
RETRY_JOBS = "select * from jobctl.retry_jobs(%(filter)s::jsonb, %(max_jobs)s::int, %(after_id)s::bigint)"
CANCEL_JOBS = "select * from jobctl.cancel_jobs(%(filter)s::jsonb, %(max_jobs)s::int, %(after_id)s::bigint)"
DELETE_JOBS = "select * from jobctl.delete_jobs(%(filter)s::jsonb, %(max_jobs)s::int, %(after_id)s::bigint)"

# --- the dashboard's figures: the counters' gauges and rates, never a scan of the jobs
JOB_OVERVIEW = """
select * from jobctl.job_overview(%(window)s::interval, %(tenant_id)s::text, %(queue)s::text)
"""
MINUTE_RATES = """
select * from jobctl.minute_rates(%(since)s::timestamptz, %(tenant_id)s::text, %(queue)s::text)
"""
FAIRNESS = "select * from jobctl.fairness(%(window)s::interval)"

# --- Prometheus and the worker registry (metrics and tracing). The job series of /metrics:
# job_counts of the caller's tenants, bounded (jobctl.job_series: the busiest
# jobctl.metrics_queues tenant queues and one row, tenant and queue '', summing the rest), the oldest
# due job's age by the database clock; the buckets come per bucket (not cumulative), one more than
# histogram_bounds
METRICS_JOB_COUNTS = """
select c.tenant_id, c.queue, c.pending, c.delayed, c.retrying, c.running, c.dead, c.completed, c.cancelled,
    coalesce(greatest(extract(epoch from now() - c.oldest_due_at)::float8, 0::float8), 0::float8)
        as oldest_due_age,
    c.submitted, c.claimed, c.succeeded, c.failed, c.died, c.withdrawn, c.retried, c.fenced,
    c.wait_buckets, c.wait_seconds, c.run_buckets, c.run_seconds
from jobctl.job_series() as c
"""
HISTOGRAM_BOUNDS = "select jobctl.histogram_bounds() as bounds"
# the worker's own entry in the registry of workers, every few seconds from its tick loop; gone at exit
WORKER_BEAT = """
select jobctl.worker_beat(%(worker_id)s::text, %(host)s::text, %(pid)s::int, %(queues)s::text[],
    %(concurrency)s::int, %(in_flight)s::int)
"""
WORKER_GONE = "select jobctl.worker_gone(%(worker_id)s::text)"

# --- workflows and batches: dependencies, callbacks, the parents' results. submit_jobs
# (SUBMIT_JOBS) takes depends_on, on_parent_failure and the dedup_* keys as they are
SUBMIT_WORKFLOW = "select * from jobctl.submit_workflow(%(jobs)s::jsonb, %(on_parent_failure)s::text)"
SUBMIT_BATCH = """
select batch_id, job_ids, on_finish_id, on_success_id, on_discard_id
from jobctl.submit_batch(%(jobs)s::jsonb, %(on_finish)s::jsonb, %(on_success)s::jsonb, %(on_discard)s::jsonb)
"""
GET_BATCH = "select * from jobctl.get_batch(%(batch_id)s::bigint)"
PARENT_RESULTS = "select jobctl.parent_results(%(job_id)s::bigint) as results"
# the batch of a job (a member or a callback): get_job names it (zero rows: no batch, or not the
# caller's)
BATCH_OF_JOB = """
select b.* from jobctl.get_job(%(job_id)s::bigint) as j cross join lateral jobctl.get_batch(j.batch_id) as b
where j.batch_id is not null
"""
WORKFLOW_JOBS = "select * from jobctl.workflow_jobs(%(workflow_id)s::bigint)"

# --- durable execution (docs/durable.md): a running job's steps, sleeps and event waits, each fenced
# by its lease epoch; events emitted by tenant
SAVE_STEP = """
select jobctl.save_step(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(step)s::text, %(result)s::jsonb)
"""
JOB_STEPS = "select step, result, saved_at, attempt from jobctl.job_steps(%(job_id)s::bigint)"
SLEEP_JOB = "select jobctl.sleep_job(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(until)s::timestamptz)"
AWAIT_EVENT = """
select outcome, payload
from jobctl.await_event(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(event)s::text,
    make_interval(secs => %(timeout)s::float8))
"""
AWAIT_JOB = """
select outcome, child_id, state, result, error
from jobctl.await_job(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(step)s::text, %(child)s::jsonb,
    %(cancel_with_parent)s::boolean)
"""
EMIT_EVENT = "select jobctl.emit_event(%(tenant_id)s::text, %(event)s::text, %(payload)s::jsonb)"

# --- shards and the router (jobctl.shards; docs/operations.md, Sharding)
INIT_SHARD = "select jobctl.init_shard(%(shard)s::int)"
ROUTER_PUT_SHARD = "select jobctl_router.put_shard(%(shard)s::int, %(connstr)s::text)"
ROUTER_SHARD_COUNT = "select jobctl_router.shard_count()"
MIGRATE_LOCK = "select pg_advisory_xact_lock(hashtext(%(key)s::text))"

# --- moving a tenant between shards (jobctl.shard_move): the router names each step in order
# (jobctl_router.move_next, sql/router/moves.sql) and routes each page's ids; the source and target
# shards' private steps (sql/functions/shard/_move_*.sql) run each in its own transaction
MOVE_NEXT = "select * from jobctl_router.move_next(%(tenant_id)s::text, %(to)s::int, %(done)s::text)"
MOVE_ROUTE = "select jobctl_router.move_route(%(tenant_id)s::text, %(ids)s::bigint[]) as routed"
MOVE_OUT_BEGIN = "select jobctl._move_out_begin(%(tenant_id)s::text, %(to)s::int)::text as config"
# a page as text (the importer's parameter, never decoded here) and its ids
MOVE_OUT_JOBS = """
select p::text as page,
    array(select (j ->> 'job_id')::bigint from jsonb_array_elements(p -> 'jobs') as j) as ids
from jobctl._move_out_jobs(%(tenant_id)s::text, %(after_id)s::bigint, %(max_jobs)s::int) as p
"""
MOVE_OUT_DELETE = "select jobctl._move_out_delete(%(tenant_id)s::text, %(ids)s::bigint[]) as deleted"
MOVE_OUT_FENCE = "select jobctl._move_out_fence(%(tenant_id)s::text) as fenced"
MOVE_OUT_FINISH = "select jobctl._move_out_finish(%(tenant_id)s::text) as status"
MOVE_IN_BEGIN = "select jobctl._move_in_begin(%(config)s::jsonb)"
MOVE_IN_JOBS = "select jobctl._move_in_jobs(%(page)s::jsonb) as inserted"
MOVE_IN_FINISH = "select jobctl._move_in_finish(%(tenant_id)s::text, %(paused)s::boolean)"
# the keys as text: the target's parameter, never decoded here
MOVE_OUT_KEYS = "select jobctl._move_out_keys(%(tenant_id)s::text)::text as keys"
MOVE_IN_KEYS = "select jobctl._move_in_keys(%(tenant_id)s::text, %(keys)s::jsonb) as recorded"
MOVE_OUT_EVENTS = "select jobctl._move_out_events(%(tenant_id)s::text)::text as events"
MOVE_IN_EVENTS = "select jobctl._move_in_events(%(tenant_id)s::text, %(events)s::jsonb) as woken"
MOVE_IN_END = "select jobctl._move_in_end(%(tenant_id)s::text) as forgotten"

# --- the object archive (jobctl.archive). ARCHIVED_JOB is the clients' fallback of job_history (a
# function of the contract, with the tenant rule); the rest is the exporter's (`jobctl archive run`, as
# the schema owner): the private jobctl._archive_* functions, which hold the export's order and checks
# (Python reads the rows they hand it, writes the Parquet files, and passes back what it wrote)
ARCHIVED_JOB = "select url, tenant_id, day, bytes, forgotten from jobctl.archived_job(%(job_id)s::bigint)"
# a sealed payload of an archived job, opened with the caller's key (as text: the client decodes it)
OPEN_ARCHIVED_PAYLOAD = """
select jobctl.open_archived_payload(%(tenant_id)s::text, %(payload)s::jsonb)::text as payload
"""
# one exporter at a time: a lease only the schema owner can take, taken and renewed (true: held) and
# given up at the end
ARCHIVE_LEASE = "select jobctl._archive_lease(%(holder)s::uuid, %(seconds)s::integer) as held"
ARCHIVE_RELEASE = "select jobctl._archive_release(%(holder)s::uuid) as released"
# what to export, in order: the due days, then the late jobs (zero rows: no archive_url)
ARCHIVE_UNITS = "select archive_url, part::text as part, before, late from jobctl._archive_units()"
# the columns of jobctl.job in table order, with their types (the files' schema follows them)
ARCHIVE_COLUMNS = "select name, type from jobctl._archive_columns()"
# a unit's files: a tenant's jobs of a UTC day each (jobctl._archive_commit checks the rows written)
ARCHIVE_TENANTS = """
select tenant_id, day from jobctl._archive_tenants(%(part)s::regclass, %(before)s::timestamptz)
"""
# a file's jobs, a chunk at a time in job_id order; `{columns}`: ARCHIVE_COLUMNS as a select list
# (psycopg.sql identifiers), JSON and types Arrow has no match for cast to text
ARCHIVE_CHUNK = """
select {columns}
from jobctl._archive_chunk(%(part)s::regclass, %(tenant_id)s::text, %(day)s::date, %(before)s::timestamptz,
    %(after)s::bigint, %(rows)s::int) as j
"""
ARCHIVE_EVENTS = "select * from jobctl._archive_events(%(job_ids)s::bigint[])"
# a file's URL, committed before the file is written; the ones a crash left, deleted by the next run
ARCHIVE_WRITING = "select jobctl._archive_record_writing(%(url)s::text)"
ARCHIVE_CRASHED = "select u.url from jobctl._archive_crashed() as u (url)"
ARCHIVE_WRITTEN = "select jobctl._archive_written(%(urls)s::text[]) as forgotten"
# a unit's files recorded and its day dropped (or late jobs deleted) in one transaction, after the lease,
# the lock and the check (held false: the lease was lost; changed: why the unit is left for the next run)
ARCHIVE_COMMIT = """
select * from jobctl._archive_commit(%(holder)s::uuid, %(seconds)s::integer, %(part)s::regclass,
    %(before)s::timestamptz, %(files)s::jsonb, %(id_sum)s::numeric, %(job_ids)s::bigint[])
"""
# forget_subject's requests, per file of each tenant; a file written again (NULL: gone); requests done
ARCHIVE_ERASURES = "select tenant_id, subjects, last_id, file_id, url, sha256 from jobctl._archive_erasures()"
ARCHIVE_REWRITTEN = """
select jobctl._archive_rewritten(%(holder)s::uuid, %(seconds)s::integer, %(file_id)s::bigint, %(file)s::jsonb)
    as held
"""
ARCHIVE_ERASED = "select jobctl._archive_erased(%(tenant_id)s::text, %(last_id)s::bigint) as erased"
ARCHIVE_LIST = """
select file_id, tenant_id, day, url, job_count as rows, bytes, min_job_id, max_job_id, sha256, written_at,
    rewritten_at
from jobctl._archive_files(%(tenant_id)s::text)
"""

# --- the dashboard's own reads: what the client's calls do not return
# the jobs a filter names by the counters' gauges: the jobs page's chips for a filter of job ids, keys,
# times or error text (the counters answer only a tenant and a queue)
COUNT_JOB_STATES = "select * from jobctl.count_job_states(%(filter)s::jsonb, %(max_count)s::int)"
# what the caller may see, area by area (the dashboard's tabs): the areas' own checks, in SQL
CALLER_ACCESS = "select area, scope, every_tenant, allowed, missing from jobctl.caller_access()"
# what a job in a state allows (retry, cancel, delete): the rule the actions follow, in SQL
JOB_ACTIONS = "select jobctl.job_actions(%(state)s::text) as actions"
# a page of the queues (the dashboard's /queues): settings and depth summed over the tenants, in name
# order after `after`; the next page starts after the last
QUEUE_OVERVIEW = """
select * from jobctl.queue_overview(%(after)s::text, %(max_rows)s::int, %(window)s::interval)
"""
