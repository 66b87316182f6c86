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
# cannot be decoded fails that job, not the claim)
CLAIM_JOB = """
select job_id, tenant_id, queue, payload::text, priority, attempt, max_attempts, lease_epoch,
    lease_expires_at, extract(epoch from timeout)::float8 as timeout_s
from jobctl.claim_job(%(worker_id)s::text, %(queues)s::text[], %(max_jobs)s::int, %(lease)s::interval)
"""
HEARTBEATS = """
select a.job_id, jobctl.heartbeat(a.job_id, a.lease_epoch, %(extend)s::interval) as status
from unnest(%(job_ids)s::bigint[], %(lease_epochs)s::bigint[]) as a (job_id, lease_epoch)
"""
COMPLETE_JOB = "select jobctl.complete_job(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(result)s::jsonb)"
COMPLETE_JOBS = """
select job_id, completed
from jobctl.complete_jobs(%(job_ids)s::bigint[], %(lease_epochs)s::bigint[], %(results)s::jsonb[])
"""
FAIL_JOB = """
select jobctl.fail_job(%(job_id)s::bigint, %(lease_epoch)s::bigint, %(error)s::text, %(retryable)s::boolean)
"""
RELEASE_JOB = "select jobctl.release_job(%(job_id)s::bigint, %(lease_epoch)s::bigint)"
LISTEN = "listen jobctl"
# a hint's payload is its queue's tag, not its name: a worker with a queue filter wakes on its queues' tags
HINT_TAGS = "select jobctl.hint_tags(%(queues)s::text[]) as tags"
TICK = "select jobctl.tick(false)"  # periodic work, a few times a second (one caller at a time does it)

# --- operating. Each function acts only for the caller's tenants (with an API token: the token's
# tenant): another tenant's job is as unknown as a missing one.
GET_JOB = "select * from jobctl.get_job(%(job_id)s::bigint)"
LIST_JOBS = """
select * from jobctl.list_jobs(%(tenant_id)s::text, %(state)s::text, %(queue)s::text, %(before_id)s::bigint,
    %(max_rows)s::int)
"""
JOB_HISTORY = "select * from jobctl.job_history(%(job_id)s::bigint)"
CANCEL_JOB = "select jobctl.cancel_job(%(job_id)s::bigint) as state"
RETRY_JOB = "select jobctl.retry_job(%(job_id)s::bigint) as state"

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

# --- schedules: NULL priority, catch_up or skip_overlap is the function's default
PUT_SCHEDULE = """
select jobctl.put_schedule(%(tenant_id)s::text, %(name)s::text, %(cron)s::text, %(queue)s::text,
    %(payload)s::jsonb, %(priority)s::int, %(catch_up)s::int, %(skip_overlap)s::boolean)
"""
LIST_SCHEDULES = "select * from jobctl.list_schedules(%(tenant_id)s::text)"
GET_SCHEDULE = "select * from jobctl.list_schedules(%(tenant_id)s::text) as s where s.name = %(name)s::text"
DROP_SCHEDULE = "select jobctl.drop_schedule(%(tenant_id)s::text, %(name)s::text) as dropped"
# the next `count` fire times of an expression, each cron_next of the one before
CRON_TIMES = """
with recursive t (n, at) as (
    select 1, jobctl.cron_next(%(cron)s::text, now())
    union all
    select t.n + 1, jobctl.cron_next(%(cron)s::text, t.at) from t where t.n < %(count)s::int
)
select t.at from t order by t.n
"""

CREATE_API_TOKEN = """
select jobctl.create_api_token(%(tenant_id)s::text, %(scopes)s::text[], %(label)s::text) as token
"""
REVOKE_API_TOKEN = "select jobctl.revoke_api_token(%(token_id)s::bigint) as revoked"
LIST_API_TOKENS = "select * from jobctl.list_api_tokens(%(tenant_id)s::text)"
GRANT_TENANT = "select jobctl.grant_tenant(%(role)s::text, %(tenant_id)s::text) as granted"
REVOKE_TENANT = "select jobctl.revoke_tenant(%(role)s::text, %(tenant_id)s::text) as revoked"
LIST_TENANT_GRANTS = "select * from jobctl.list_tenant_grants()"
AUTHENTICATE = "select token_id, tenant_id, scopes from jobctl.authenticate(%(token)s::text, %(scope)s::text)"

# --- figures and health
STATS = "select * from jobctl.stats(%(tenant_id)s::text, %(queue)s::text)"
CLAIM_METRICS = """
select * from jobctl.claim_metrics(%(window)s::interval, %(tenant_id)s::text, %(queue)s::text)
"""
HEALTH_CHECKS = "select * from jobctl.health_checks()"
PING = "select 1"

# --- the database clock: the ages `jobctl stats` and `jobctl top` show
NOW = "select now() as now"
