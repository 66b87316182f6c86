"""The rows jobctl.client's calls return, one frozen dataclass per SQL row type (fields in the SQL's
column order; `JobInfo` is a row of `jobctl.job_info`), and the decoding of rows and JSON columns.
A leaf (of jobctl it imports only jobctl.errors), so that the worker and the archive can name these
types without importing the client's calls.

JSON columns are decoded with `load_json`: JSON nested deeper than MAX_JSON_DEPTH (possible only for
rows stored before the SQL layer's bound of 100 levels) comes as a `RawJson` holding its text, where
Python's decoder would fail with RecursionError.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import accumulate
from typing import TYPE_CHECKING, Any, TypeVar

from jobctl import errors

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Row = dict[str, Any]
T = TypeVar("T", bound="DataclassInstance")

# --- JSON columns

# JSON nested deeper than this is kept as its text, not decoded: Python's decoder (and encoder)
# recurse, and fail with RecursionError near 1,000 levels; the SQL layer refuses more than 100
MAX_JSON_DEPTH = 200
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


class RawJson:
    """JSON text nested too deeply to decode (more than MAX_JSON_DEPTH levels), as it is stored."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"RawJson({len(self.text)} characters)"


def json_depth(text: str) -> int:
    """How deeply JSON text nests (strings skipped)."""
    brackets = [1 if c in "[{" else -1 for c in _JSON_STRING.sub("", text) if c in "[]{}"]
    return max(accumulate(brackets), default=0)


def load_json(data: bytes | bytearray | memoryview | str) -> Any:
    """The loader of json and jsonb columns: decoded, unless nested deeper than MAX_JSON_DEPTH (then a
    RawJson). Counting brackets is cheap; only text with that many is scanned."""
    text = data if isinstance(data, str) else bytes(data).decode()
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and json_depth(text) > MAX_JSON_DEPTH:
        return RawJson(text)
    return json.loads(text)


# --- what the calls return: one dataclass per SQL row type, fields in the SQL's column order


@dataclass(frozen=True)
class Submitted:
    """A row of submit_job / submit_jobs: the job's id; `duplicate`: the job already holding the
    dedup key (nothing new was written)."""

    job_id: int
    duplicate: bool


@dataclass(frozen=True)
class JobInfo:
    """A row of `jobctl.job_info` (get_job, list_jobs)."""

    job_id: int
    tenant_id: str
    queue: str
    state: str
    priority: int
    payload: Any
    run_at: datetime
    attempt: int
    max_attempts: int
    dedup_key: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    last_error: str | None
    result: Any
    worker_id: str | None
    lease_expires_at: datetime | None
    lease_epoch: int | None
    timeout: timedelta | None
    backoff: Any
    concurrency_key: str | None
    traceparent: str | None = None  # the W3C trace context of the submit
    # workflows: the parents it waits for (or waited for), its workflow (the first job's
    # id), its batch; the parents' results {"<id>": result}, filled by get_job only
    depends_on: list[int] | None = None
    workflow_id: int | None = None
    batch_id: int | None = None
    parent_results: Any = None
    schedule_name: str | None = None  # the schedule whose run it is
    fire_time: datetime | None = None  # the fire time it stands for (run_schedule's: when it was run)
    # a running job's latest progress (jobctl.heartbeat), else its last attempt's last
    progress: Any = None
    # the traceback of the failure last_error describes (get_job only; lists leave it None) and the
    # name submit_workflow gave the job
    last_traceback: str | None = None
    workflow_name: str | None = None
    # a parked job (docs/durable.md): 'sleep', 'event' or 'job', and the event's name or the child's id
    parked: str | None = None
    awaiting: str | None = None


@dataclass(frozen=True)
class Workflow:
    """What submit_workflow returns: the workflow's id (its first job's) and each job's id by name,
    in the order given."""

    workflow_id: int
    job_ids: dict[str, int]


@dataclass(frozen=True)
class BatchSubmitted:
    """A row of submit_batch: the batch's id, its members' ids in input order, the callbacks' ids
    (None: not given)."""

    batch_id: int
    job_ids: list[int]
    on_finish_id: int | None
    on_success_id: int | None
    on_discard_id: int | None


@dataclass(frozen=True)
class Batch:
    """A row of get_batch. `counts`: the members' outcomes ({"completed": n, "dead": n, "cancelled":
    n}) once the batch ended (`finished_at` set), their current states before; the callbacks' ids."""

    batch_id: int
    tenant_id: str
    created_at: datetime
    size: int
    finished_at: datetime | None
    counts: dict[str, int] | None
    on_finish: int | None
    on_success: int | None
    on_discard: int | None


@dataclass(frozen=True)
class HistoryEntry:
    """A row of job_history: one transition of a job."""

    at: datetime
    event: str
    attempt: int
    lease_epoch: int | None
    worker_id: str | None
    detail: str | None


@dataclass(frozen=True)
class Step:
    """A row of job_steps: a step a job saved (save_step), or an await's outcome (step `event:<name>`)."""

    step: str
    result: Any
    saved_at: datetime
    attempt: int


@dataclass(frozen=True)
class Schedule:
    """A row of list_schedules."""

    tenant_id: str
    name: str
    cron: str
    queue: str
    payload: Any
    priority: int
    catch_up: int
    skip_overlap: bool
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    last_job_id: int | None
    created_at: datetime
    updated_at: datetime
    paused: bool = False  # pause_schedule; resume_schedule recomputes next_fire_at from now
    time_zone: str = "UTC"  # the zone whose wall time the expression reads


@dataclass(frozen=True)
class ScheduleRun:
    """A row of schedule_runs: a job a schedule enqueued (or run_schedule submitted)."""

    job_id: int
    fire_time: datetime | None
    state: str
    attempt: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    last_error: str | None


@dataclass(frozen=True)
class Tenant:
    """A row of list_tenants. None: unlimited."""

    tenant_id: str
    weight: int
    max_pending: int | None
    max_running: int | None
    submit_rate: Decimal | None
    submit_burst: int | None
    claim_rate: Decimal | None
    claim_burst: int | None
    paused: bool
    created_at: datetime
    updated_at: datetime
    encrypt_payloads: bool


@dataclass(frozen=True)
class Queue:
    """A row of list_queues: a queue's settings (None: no limit) and its jobs due and running across
    tenants; `updated_at` None: it has no settings of its own."""

    queue: str
    paused: bool
    max_running: int | None
    claim_rate: Decimal | None
    claim_burst: int | None
    due: int
    running: int
    updated_at: datetime | None


@dataclass(frozen=True)
class ConcurrencyLimit:
    """A row of list_concurrency_limits: a key's limit (`concurrency_key` None: the tenant's default
    for keys without one), its jobs running or due (`active`, None for the default) and waiting."""

    concurrency_key: str | None
    max_running: int
    active: int | None
    waiting: int


@dataclass(frozen=True)
class ApiToken:
    """A row of list_api_tokens (never the token itself; `tenant_id` None: an admin token)."""

    token_id: int
    tenant_id: str | None
    scopes: list[str]
    label: str | None
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True)
class TenantGrant:
    """A row of list_tenant_grants: a role that acts for a tenant (`tenant_id` None: for every one)."""

    role_name: str
    tenant_id: str | None
    granted_at: datetime
    granted_by: str | None


@dataclass(frozen=True)
class Stats:
    """A row of jobctl.stats: the jobs of a tenant's queue in one state; on the pending row, the run_at
    of the oldest due job (None when none is due)."""

    tenant_id: str
    queue: str
    state: str
    jobs: int
    oldest_run_at: datetime | None


@dataclass(frozen=True)
class ClaimMetrics:
    """A row of claim_metrics: claims of a tenant's queue over the window, and the waits from due to
    claimed (seconds; None without claims)."""

    tenant_id: str
    queue: str
    claims: int
    claims_per_s: float
    wait_p50_s: float | None
    wait_p99_s: float | None


@dataclass(frozen=True)
class HealthCheck:
    """A row of health_checks: `verdict` is 'ok', 'warn' or 'fail'."""

    check_name: str
    verdict: str
    observed: str | None
    detail: str | None


@dataclass(frozen=True)
class Worker:
    """A row of list_workers: what a worker last reported (worker_beat; `queues` None: all), whether it
    beat within the staleness window (`alive`) and the leases it holds now (`running`)."""

    worker_id: str
    host: str
    pid: int
    queues: list[str] | None
    concurrency: int
    in_flight: int
    started_at: datetime
    last_seen_at: datetime
    alive: bool
    running: int


@dataclass(frozen=True)
class AuditEntry:
    """A row of list_audit: who (`actor`, the login; `token_id`, the API token) did what, for which
    tenant (None: no tenant, e.g. a queue's settings)."""

    audit_id: int
    at: datetime
    actor: str
    token_id: int | None
    action: str
    tenant_id: str | None
    detail: Any


# --- bulk actions and the dashboard's figures


@dataclass(frozen=True)
class JobCount:
    """A row of count_jobs: the jobs a filter matches, up to max_count; `capped`: at least that many."""

    jobs: int
    capped: bool


@dataclass(frozen=True)
class BulkBatch:
    """A row of retry_jobs / cancel_jobs: one batch. Pass `last_id` as after_id to the next call until
    `done`; `stopped` (JC004, JC005) with `retry_after` seconds when a tenant's room ran out."""

    acted: int
    skipped: int
    last_id: int | None
    done: bool
    stopped: str | None
    retry_after: Decimal | None


@dataclass(frozen=True)
class JobOverview:
    """A row of job_overview: a tenant's queue from the counters (gauges now; rates and wait
    quantiles, in seconds, over the window; None without claims)."""

    tenant_id: str
    queue: str
    pending: int
    delayed: int
    retrying: int
    running: int
    dead: int
    completed: int
    cancelled: int
    oldest_due_at: datetime | None
    wait_p50: float | None
    wait_p99: float | None
    claims_per_second: float | None
    completions_per_second: float | None
    waiting: int = 0  # the jobs waiting for their parents or batch


@dataclass(frozen=True)
class MinuteRates:
    """One minute of job_rates summed over the tenants and queues asked for, with the wait quantiles
    (seconds) of the summed histogram."""

    minute: datetime
    submitted: int
    claimed: int
    succeeded: int
    failed: int
    died: int
    fenced: int
    wait_p50: float | None
    wait_p99: float | None


@dataclass(frozen=True)
class Fairness:
    """A row of fairness: a tenant's share of the claims over the window against its weight's share,
    its running jobs against max_running (None: no limit), its claim-rate room (None: no rate)."""

    tenant_id: str
    weight: int
    weight_share: float | None
    claims: int
    claim_share: float | None
    running: int
    max_running: int | None
    rate_room: float | None
    paused: bool


@dataclass(frozen=True)
class StateCounts:
    """A row of count_job_states: the jobs a filter names, by the counters' gauges (capped: more
    matched than max_count)."""

    pending: int
    delayed: int
    retrying: int
    running: int
    dead: int
    completed: int
    cancelled: int
    waiting: int
    capped: bool


@dataclass(frozen=True)
class QueueRow:
    """A row of queue_overview: a queue's settings and its jobs summed over the tenants."""

    queue: str
    paused: bool
    max_running: int | None
    claim_rate: Decimal | None
    claim_burst: int | None
    configured: bool
    pending: int
    delayed: int
    retrying: int
    running: int
    dead: int
    waiting: int
    claims_per_second: float
    oldest_due_at: datetime | None


def typed(cls: type[T], row: Row) -> T:
    """A row as `cls`: its fields by name (columns the dataclass does not know are left out)."""
    return cls(**{f.name: row[f.name] for f in fields(cls)})


def one(cls: type[T], rows: list[Row]) -> T | None:
    return typed(cls, rows[0]) if rows else None


def saved(cls: type[T], rows: list[Row], what: str) -> T:
    """The row read back after a put (in the same transaction: it is there unless another session
    dropped it in between)."""
    if not rows:
        raise errors.NotFound(f"{what} was not saved")
    return typed(cls, rows[0])
