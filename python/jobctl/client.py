"""`jobctl.Client` and `jobctl.AsyncClient`: the jobctl SQL functions as Python calls (docs/client.md).
The CLI calls Client, the HTTP API AsyncClient (with `conn=` each request's connection): one place
that speaks SQL.

Every call runs statements of queries.py, and this module is the one place that turns their rows into
typed values: frozen dataclasses named after the SQL's own types and columns (`JobInfo` is a row of
`jobctl.job_info`). A database error with a SQLSTATE of docs/errors.md is raised as its
`jobctl.errors` class (`InvalidInput`, `NotFound`, ...), carrying sqlstate, field, detail and hint;
any other error is psycopg's own.

Connections. Without `conn=`, a call runs on the client's own autocommit connection to its DSN
(default `jobctl.db.dsn()`: JOBCTL_DSN, else the local cluster's), opened at the first call, opened
again after it broke, one call at a time; it carries `jobctl.db.session_options()` (the tenants'
payload keys). With `conn=`, the call runs on the caller's psycopg connection inside whatever
transaction is open there: a job submitted so commits or rolls back with the caller's own writes. The
client never commits, rolls back or opens a transaction block on a caller's connection.

JSON columns are decoded with `load_json`: JSON nested deeper than MAX_JSON_DEPTH (possible only for
rows stored before the SQL layer's bound of 100 levels) comes as a `RawJson` holding its text, where
Python's decoder would fail with RecursionError.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import accumulate
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import set_json_loads

from jobctl import archive, db, errors, queries, tracing, waiting

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Row = dict[str, Any]
Conn = psycopg.Connection[Any]
AsyncConn = psycopg.AsyncConnection[Any]
Statement = tuple[str, Mapping[str, Any]]
T = TypeVar("T", bound="DataclassInstance")

BIGINT_MAX = 2**63 - 1  # job ids are positive bigints

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


def _depth(text: str) -> int:
    """How deeply JSON text nests (strings skipped)."""
    brackets = [1 if c in "[{" else -1 for c in _JSON_STRING.sub("", text) if c in "[]{}"]
    return max(accumulate(brackets), default=0)


def load_json(data: bytes | bytearray | memoryview | str) -> Any:
    """The loader of json and jsonb columns: decoded, unless nested deeper than MAX_JSON_DEPTH (then a
    RawJson). Counting brackets is cheap; only text with that many is scanned."""
    text = data if isinstance(data, str) else bytes(data).decode()
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(text) > MAX_JSON_DEPTH:
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
    traceparent: str | None = None  # the W3C trace context of the submit (migration 0025)
    # workflows (issue 22): the parents it waits for (or waited for), its workflow (the first job's
    # id), its batch; the parents' results {"<id>": result}, filled by get_job only
    depends_on: list[int] | None = None
    workflow_id: int | None = None
    batch_id: int | None = None
    parent_results: Any = None
    schedule_name: str | None = None  # the schedule whose run it is (migration 0027)
    fire_time: datetime | None = None  # the fire time it stands for (run_schedule's: when it was run)
    # a running job's latest progress (jobctl.heartbeat), else its last attempt's last (migration 0028)
    progress: Any = None
    # the traceback of the failure last_error describes (get_job only; lists leave it None) and the
    # name submit_workflow gave the job (migration 0039)
    last_traceback: str | None = None
    workflow_name: str | None = None


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
    time_zone: str = "UTC"  # the zone whose wall time the expression reads (migration 0027)


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


# --- bulk actions and the dashboard's figures (issue 21)


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


def _filter_json(job_filter: Mapping[str, Any]) -> str:
    """A bulk filter as count_jobs takes it (JSON null: the key left out)."""
    return json.dumps(dict(job_filter), allow_nan=False, default=str)


def _bulk(statement: str, job_filter: Mapping[str, Any], max_jobs: int, after_id: int | None) -> Statement:
    after = check_id(after_id, "after_id") if after_id is not None else None
    return statement, {"filter": _filter_json(job_filter), "max_jobs": max_jobs, "after_id": after}


def _find_jobs(job_filter: Mapping[str, Any], before_id: int | None, max_rows: int) -> Statement:
    before = check_id(before_id, "before_id") if before_id is not None else None
    return queries.FIND_JOBS, {"filter": _filter_json(job_filter), "before_id": before, "max_rows": max_rows}


def _seconds(window: timedelta | float) -> timedelta:
    return window if isinstance(window, timedelta) else timedelta(seconds=window)


@dataclass(frozen=True)
class JobSpec:
    """One job for `submit_many`, with submit_job's parameters. None leaves a parameter to the SQL
    default (priority 0, due now, 3 attempts, exponential backoff, no timeout)."""

    tenant_id: str
    queue: str
    payload: Any
    priority: int | None = None
    run_at: datetime | None = None
    dedup_key: str | None = None
    max_attempts: int | None = None
    backoff: Mapping[str, Any] | None = None  # {"strategy", "base", "max", "jitter"}, as in SQL
    timeout: timedelta | float | str | None = None  # seconds, or an interval such as '5 minutes'
    subject_key: str | None = None
    concurrency_key: str | None = None
    # the W3C trace context (00-<32 hex>-<16 hex>-<2 hex>) the worker's run span continues (tracing)
    traceparent: str | None = None
    # workflows (issue 22): the jobs (ids; in submit_workflow also names of earlier jobs) that must
    # complete first, and what a dead or cancelled one does to this job ('cancel' or 'wait')
    depends_on: Sequence[int | str] | None = None
    on_parent_failure: str | None = None
    # the dedup_key's scope: the states in which its newest job holds it, the period (seconds, a
    # timedelta or an interval such as '1 hour'), and 'keep', 'replace' (debounce) or 'preserve_run_at'
    dedup_states: Sequence[str] | None = None
    dedup_period: timedelta | float | str | None = None
    dedup_mode: str | None = None
    name: str | None = None  # submit_workflow only: the name depends_on refers to

    def to_json(self) -> dict[str, Any]:
        """The submit_jobs element: only the keys given, so that SQL applies its own defaults."""
        if isinstance(self.run_at, datetime) and self.run_at.tzinfo is None:
            raise errors.InvalidInput("run_at must have a time zone", field="run_at")
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        if isinstance(self.run_at, datetime):
            given["run_at"] = self.run_at.isoformat()
        if isinstance(self.timeout, timedelta):
            given["timeout"] = self.timeout.total_seconds()
        if isinstance(self.dedup_period, timedelta):
            given["dedup_period"] = self.dedup_period.total_seconds()
        for key in ("depends_on", "dedup_states"):
            if given[key] is not None and not isinstance(given[key], str):
                given[key] = list(given[key])
        return {k: v for k, v in given.items() if v is not None or k == "payload"}


def _typed(cls: type[T], row: Row) -> T:
    """A row as `cls`: its fields by name (columns the dataclass does not know are left out)."""
    return cls(**{f.name: row[f.name] for f in fields(cls)})


def _one(cls: type[T], rows: list[Row]) -> T | None:
    return _typed(cls, rows[0]) if rows else None


def _saved(cls: type[T], rows: list[Row], what: str) -> T:
    """The row read back after a put (in the same transaction: it is there unless another session
    dropped it in between)."""
    if not rows:
        raise errors.NotFound(f"{what} was not saved")
    return _typed(cls, rows[0])


# --- the statements, with their parameters checked and converted


def check_id(value: int, name: str = "job_id") -> int:
    """A job (or token) id as the database takes it: a whole number from 1 to BIGINT_MAX."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= BIGINT_MAX:
        raise errors.InvalidInput(
            f"{name} must be a whole number from 1 to {BIGINT_MAX}, not {value!r}",
            sqlstate="22003",
            field=name,
        )
    return value


def _jobs_json(jobs: Iterable[JobSpec | Mapping[str, Any]], traceparent: str | None = None) -> str:
    """The submit_jobs array; `traceparent` goes to every job that has none of its own (tracing)."""
    specs = [j.to_json() if isinstance(j, JobSpec) else dict(j) for j in jobs]
    if traceparent is not None:
        for spec in specs:
            spec.setdefault("traceparent", traceparent)
    try:
        return json.dumps(specs, allow_nan=False)
    except (TypeError, ValueError) as e:
        # 22P02: what the database answers for text that is not JSON
        raise errors.InvalidInput(f"a job is not JSON: {e}", sqlstate="22P02", field="payload") from None


def _submit(spec: JobSpec, delay: timedelta | float | None) -> Statement:
    if delay is None:
        return queries.SUBMIT_JOBS, {"jobs": _jobs_json([spec])}
    if spec.run_at is not None:
        raise errors.InvalidInput("give run_at or delay, not both", field="run_at")
    seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
    return queries.SUBMIT_JOB_AFTER, {"job": json.dumps(spec.to_json(), allow_nan=False), "seconds": seconds}


def _workflow(
    jobs: Sequence[JobSpec | Mapping[str, Any]], on_parent_failure: str | None, traceparent: str | None
) -> Statement:
    if not jobs:  # submit_workflow answers no rows: no workflow, no id
        raise errors.InvalidInput("a workflow needs at least one job", sqlstate="JC001", field="jobs")
    params = {"jobs": _jobs_json(jobs, traceparent), "on_parent_failure": on_parent_failure or "cancel"}
    return queries.SUBMIT_WORKFLOW, params


def _workflow_of(rows: list[Row]) -> Workflow:
    return Workflow(int(rows[0]["workflow_id"]), {str(r["name"]): int(r["job_id"]) for r in rows})


def _callback_json(spec: JobSpec | Mapping[str, Any] | None, name: str) -> str | None:
    """A batch's callback as submit_batch takes it (None: not given; tenant_id may be left out)."""
    if spec is None:
        return None
    given = spec.to_json() if isinstance(spec, JobSpec) else dict(spec)
    try:
        return json.dumps(given, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise errors.InvalidInput(f"{name} is not JSON: {e}", sqlstate="22P02", field=name) from None


def _batch(
    jobs: Iterable[JobSpec | Mapping[str, Any]],
    callbacks: Mapping[str, JobSpec | Mapping[str, Any] | None],
    traceparent: str | None,
) -> Statement:
    params: dict[str, str | None] = {"jobs": _jobs_json(jobs, traceparent)}
    params |= {name: _callback_json(spec, name) for name, spec in callbacks.items()}
    return queries.SUBMIT_BATCH, params


def _put_tenant(tenant_id: str, settings: Mapping[str, Any]) -> list[Statement]:
    return [
        (queries.PUT_TENANT, {"tenant_id": tenant_id, **settings}),
        (queries.GET_TENANT, {"tenant_id": tenant_id}),
    ]


def _put_schedule(params: Mapping[str, Any]) -> list[Statement]:
    key = {"tenant_id": params["tenant_id"], "name": params["name"]}
    return [(queries.PUT_SCHEDULE, params), (queries.GET_SCHEDULE, key)]


def _schedule_params(
    tenant_id: str,
    name: str,
    cron: str,
    queue: str,
    payload: Any,
    priority: int | None,
    catch_up: int | None,
    skip_overlap: bool | None,
    time_zone: str | None = "UTC",
) -> dict[str, Any]:
    try:
        payload_text = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise errors.InvalidInput(f"payload is not JSON: {e}", sqlstate="22P02", field="payload") from None
    return {
        "tenant_id": tenant_id,
        "name": name,
        "cron": cron,
        "queue": queue,
        "payload": payload_text,
        "priority": priority,
        "catch_up": catch_up,
        "skip_overlap": skip_overlap,
        "time_zone": time_zone,
    }


def _list_jobs(
    tenant_id: str, state: str | None, queue: str | None, before_id: int | None, max_rows: int
) -> Statement:
    before = check_id(before_id, "before_id") if before_id is not None else None
    params = {
        "tenant_id": tenant_id,
        "state": state,
        "queue": queue,
        "before_id": before,
        "max_rows": max_rows,
    }
    return queries.LIST_JOBS, params


def _put_queue(
    queue: str,
    max_running: int | None,
    claim_rate: float | Decimal | None,
    claim_burst: int | None,
    paused: bool,
) -> list[Statement]:
    params = {
        "queue": queue,
        "max_running": max_running,
        "claim_rate": claim_rate,
        "claim_burst": claim_burst,
        "paused": paused,
    }
    return [(queries.PUT_QUEUE, params), (queries.GET_QUEUE, {"queue": queue})]


def _put_limit(tenant_id: str, concurrency_key: str | None, max_running: int | None) -> Statement:
    params = {"tenant_id": tenant_id, "concurrency_key": concurrency_key, "max_running": max_running}
    return queries.PUT_CONCURRENCY_LIMIT, params


def _create_token(tenant_id: str | None, scopes: Iterable[str], label: str | None) -> Statement:
    return queries.CREATE_API_TOKEN, {"tenant_id": tenant_id, "scopes": list(scopes), "label": label}


def _claim_metrics(window: timedelta | float, tenant_id: str | None, queue: str | None) -> Statement:
    length = window if isinstance(window, timedelta) else timedelta(seconds=window)
    return queries.CLAIM_METRICS, {"window": length, "tenant_id": tenant_id, "queue": queue}


def _worker_beat(
    worker_id: str, host: str, pid: int, queues: Sequence[str] | None, concurrency: int, in_flight: int
) -> Statement:
    params = {
        "worker_id": worker_id,
        "host": host,
        "pid": pid,
        "queues": list(queues) if queues is not None else None,
        "concurrency": concurrency,
        "in_flight": in_flight,
    }
    return queries.WORKER_BEAT, params


def _list_workers(stale: timedelta | float) -> Statement:
    return queries.LIST_WORKERS, {
        "stale": stale if isinstance(stale, timedelta) else timedelta(seconds=stale)
    }


def _list_audit(tenant_id: str | None, before_id: int | None, max_count: int) -> Statement:
    before = check_id(before_id, "before_id") if before_id is not None else None
    return queries.LIST_AUDIT, {"tenant_id": tenant_id, "before_id": before, "max_count": max_count}


def _grants(tenant_id: str | None) -> Statement:
    if tenant_id is None:
        return queries.LIST_TENANT_GRANTS, {}
    return queries.LIST_GRANTS_OF, {"tenant_id": tenant_id}


def _archived_job(row: Row) -> JobInfo:
    """A row of an object-archive file as get_job returns a job (no lease; parent_results not read)."""
    return JobInfo(**archive.job_fields(row, [f.name for f in fields(JobInfo)]))


def _mapped(e: psycopg.Error) -> BaseException:
    """The jobctl.errors exception for a database error with a known SQLSTATE, else the error itself."""
    return errors.from_db(e) or e


def _execute(conn: Conn, statement: Statement) -> list[Row]:
    with conn.cursor(row_factory=dict_row) as cur:
        set_json_loads(load_json, cur)
        cur.execute(*statement)
        return cur.fetchall() if cur.description is not None else []


async def _execute_async(conn: AsyncConn, statement: Statement) -> list[Row]:
    async with conn.cursor(row_factory=dict_row) as cur:
        set_json_loads(load_json, cur)
        await cur.execute(*statement)
        return await cur.fetchall() if cur.description is not None else []


def _connect_kwargs(dsn: str) -> dict[str, Any]:
    return db.connection_kwargs(dsn, "jobctl", autocommit=True)


class Client:
    """The jobctl functions on a connection of its own (`dsn`, default jobctl.db.dsn()) or, per call,
    on the caller's (`conn=`). Safe to share between threads: its own connection serves one call at
    a time (for calls in parallel, pass connections of your own pool)."""

    def __init__(self, dsn: str | None = None, *, listen_dsn: str | None = None) -> None:
        self.dsn = dsn if dsn is not None else db.dsn()
        # where wait() LISTENs: this, else JOBCTL_LISTEN_DSN, else dsn unless JOBCTL_POOLER=transaction
        # (then no hints: wait() polls)
        self.listen_dsn = listen_dsn
        self._conn: Conn | None = None
        self._lock = threading.Lock()
        self._listener = waiting.Listener()  # the waits' one LISTEN connection, open while any runs

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's own connection and the waits' listener (a later call opens them again)."""
        self._listener.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, statements: Sequence[Statement], conn: Conn | None) -> list[list[Row]]:
        """Each statement's rows. On the client's own connection several statements run in one
        transaction; on the caller's, in the caller's transaction, as they come."""
        try:
            if conn is not None:
                return [_execute(conn, s) for s in statements]
            with self._lock:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self.dsn, **_connect_kwargs(self.dsn))
                own = self._conn
                if len(statements) == 1:
                    return [_execute(own, statements[0])]
                with own.transaction():
                    return [_execute(own, s) for s in statements]
        except psycopg.Error as e:
            raise _mapped(e) from e

    def _rows(self, statement: Statement, conn: Conn | None) -> list[Row]:
        return self._run([statement], conn)[0]

    # --- jobs

    def submit(
        self,
        tenant_id: str,
        queue: str,
        payload: Any,
        *,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay: timedelta | float | None = None,
        dedup_key: str | None = None,
        max_attempts: int | None = None,
        backoff: Mapping[str, Any] | None = None,
        timeout: timedelta | float | str | None = None,
        subject_key: str | None = None,
        concurrency_key: str | None = None,
        traceparent: str | None = None,
        depends_on: Sequence[int] | None = None,
        on_parent_failure: str | None = None,
        dedup_states: Sequence[str] | None = None,
        dedup_period: timedelta | float | str | None = None,
        dedup_mode: str | None = None,
        conn: Conn | None = None,
    ) -> Submitted:
        """Submit one job. `delay`: due that long from now by the database clock (not with `run_at`).
        With `conn`, the job commits or rolls back with the caller's transaction. `traceparent`: the
        W3C trace context the job belongs to; with OpenTelemetry, the parent of the `jobctl submit`
        span, whose context the job stores (jobctl.tracing). `depends_on`: jobs of the tenant that must
        complete first (the job is `waiting` until then), `on_parent_failure` 'cancel' (default) or
        'wait'; `dedup_states`, `dedup_period`, `dedup_mode` scope the dedup_key (docs/client.md)."""
        with tracing.submitting(traceparent, 1, tenant_id, queue) as context:
            spec = JobSpec(
                tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout,
                subject_key, concurrency_key, context, depends_on, on_parent_failure, dedup_states,
                dedup_period, dedup_mode,
            )  # fmt: skip
            return _typed(Submitted, self._rows(_submit(spec, delay), conn)[0])

    def submit_many(
        self,
        jobs: Iterable[JobSpec | Mapping[str, Any]],
        *,
        traceparent: str | None = None,
        conn: Conn | None = None,
    ) -> list[Submitted]:
        """Submit a batch (at most 10,000), all or nothing; results in input order. A job may also be a
        mapping with submit_jobs' keys. An error about one job says which in `index`. `traceparent`
        (or, with OpenTelemetry, the batch's `jobctl submit` span) goes to every job without one."""
        jobs = list(jobs)
        with tracing.submitting(traceparent, len(jobs)) as context:
            rows = self._rows((queries.SUBMIT_JOBS, {"jobs": _jobs_json(jobs, context)}), conn)
        return [_typed(Submitted, r) for r in rows]

    def get_job(self, job_id: int, *, conn: Conn | None = None) -> JobInfo | None:
        """The job, or None when no job has this id (or it is another tenant's). A job that has left
        the database for the object archive is read from its file (jobctl.archive)."""
        rows = self._rows((queries.LOCATE_JOB, {"job_id": check_id(job_id)}), conn)
        if rows and rows[0]["files"] is not None:  # not in the database: read from the archive's files
            row = self._archived(job_id, conn, rows[0]["files"])
            return None if row is None else _archived_job(row)
        return _one(JobInfo, rows)

    def _archived(self, job_id: int, conn: Conn | None, files: list[Row] | None = None) -> Row | None:
        """The job's row in the object archive (None: no file of the caller's tenants holds it); files:
        jobctl.locate_job's, else jobctl.archived_job's."""
        files = self._rows((queries.ARCHIVED_JOB, {"job_id": job_id}), conn) if files is None else files
        row = archive.find_archived(files, job_id) if files else None
        if row is not None and archive.sealed(row):
            opened = self._rows((queries.OPEN_ARCHIVED_PAYLOAD, archive.payload_of(row)), conn)
            row["payload"] = opened[0]["payload"]
        return row

    def wait(self, job_id: int, timeout: timedelta | float = 60.0, *, hint: bool = True) -> JobInfo:
        """The job once it is finished (completed, dead or cancelled), waiting up to `timeout` (seconds,
        or a timedelta) for it: woken by its completion hint on the client's one listening connection
        (its waits share it), and polling as well (jobctl.waiting; hint=False: polling only). Raises
        `WaitTimeout` (a TimeoutError; `.job` is the job as last read) when the time runs out,
        NotFound for an unknown id or another tenant's job."""
        return waiting.wait(self, check_id(job_id), waiting.seconds(timeout), hint)

    def watch_job(
        self, job_id: int, channel: str, wait: timedelta | float = 300, *, conn: Conn | None = None
    ) -> JobInfo | None:
        """jobctl.watch_job: the job (None: unknown), and, unless it is finished, a hint on `channel`
        when it finishes (LISTEN on it first, on the same connection: `conn`)."""
        params = {"job_id": check_id(job_id), "channel": channel, "wait": _seconds(wait)}
        return _one(JobInfo, self._rows((queries.WATCH_JOB, params), conn))

    def list_jobs(
        self,
        tenant_id: str,
        *,
        state: str | None = None,
        queue: str | None = None,
        before_id: int | None = None,
        max_rows: int = 100,
        conn: Conn | None = None,
    ) -> list[JobInfo]:
        """A tenant's jobs, newest first; the next page: `before_id` = the last job_id of this one."""
        rows = self._rows(_list_jobs(tenant_id, state, queue, before_id, max_rows), conn)
        return [_typed(JobInfo, r) for r in rows]

    def job_history(self, job_id: int, *, conn: Conn | None = None) -> list[HistoryEntry]:
        """Every transition of the job, oldest first ([] for an unknown job)."""
        rows = self._rows((queries.JOB_HISTORY, {"job_id": check_id(job_id)}), conn)
        if not rows and (row := self._archived(job_id, conn)) is not None:
            rows = archive.history_rows(row)
        return [_typed(HistoryEntry, r) for r in rows]

    def cancel_job(self, job_id: int, *, conn: Conn | None = None) -> str:
        """Cancel a pending, failed or running job; returns its state ('cancelled')."""
        return str(self._rows((queries.CANCEL_JOB, {"job_id": check_id(job_id)}), conn)[0]["state"])

    def retry_job(self, job_id: int, *, conn: Conn | None = None) -> str:
        """Make a failed, dead or cancelled job pending, due now; returns its state ('pending')."""
        return str(self._rows((queries.RETRY_JOB, {"job_id": check_id(job_id)}), conn)[0]["state"])

    # --- workflows and batches (issue 22)

    def submit_workflow(
        self,
        jobs: Iterable[JobSpec | Mapping[str, Any]],
        *,
        on_parent_failure: str | None = None,
        traceparent: str | None = None,
        conn: Conn | None = None,
    ) -> Workflow:
        """Submit a DAG of named jobs at once, all or nothing: each job (a JobSpec with `name`, or a
        mapping with submit_jobs' keys and `name`) may depend on jobs listed before it, by name, and on
        existing jobs, by id. `on_parent_failure` ('cancel' or 'wait') is the default of each job's own.
        Returns the workflow's id and each job's id by name."""
        jobs = list(jobs)
        with tracing.submitting(traceparent, len(jobs)) as context:
            rows = self._rows(_workflow(jobs, on_parent_failure, context), conn)
        return _workflow_of(rows)

    def submit_batch(
        self,
        jobs: Iterable[JobSpec | Mapping[str, Any]],
        *,
        on_finish: JobSpec | Mapping[str, Any] | None = None,
        on_success: JobSpec | Mapping[str, Any] | None = None,
        on_discard: JobSpec | Mapping[str, Any] | None = None,
        traceparent: str | None = None,
        conn: Conn | None = None,
    ) -> BatchSubmitted:
        """Submit one tenant's jobs (without dedup_key) as a batch with callbacks, jobs of their own
        (a callback's tenant_id defaults to the members'): on_finish is enqueued once the last member
        ends, on_success then if all completed, on_discard then if any did not. At least one."""
        jobs = list(jobs)
        callbacks = {"on_finish": on_finish, "on_success": on_success, "on_discard": on_discard}
        with tracing.submitting(traceparent, len(jobs)) as context:
            row = self._rows(_batch(jobs, callbacks, context), conn)[0]
        return _typed(BatchSubmitted, row)

    def get_batch(self, batch_id: int, *, conn: Conn | None = None) -> Batch | None:
        """The batch with its counts, or None when unknown (or another tenant's)."""
        params = {"batch_id": check_id(batch_id, "batch_id")}
        return _one(Batch, self._rows((queries.GET_BATCH, params), conn))

    def parent_results(self, job_id: int, *, conn: Conn | None = None) -> dict[str, Any] | None:
        """The results of the job's parents, {"<parent id>": result} (None until a parent completes);
        None for a job without parents, an unknown job or another tenant's."""
        rows = self._rows((queries.PARENT_RESULTS, {"job_id": check_id(job_id)}), conn)
        results: dict[str, Any] | None = rows[0]["results"] if rows else None
        return results

    def workflow_jobs(self, workflow_id: int, *, conn: Conn | None = None) -> list[JobInfo]:
        """The jobs of a workflow (its id: its first job's), oldest first; those among the 1,000 ids
        from the workflow's on."""
        params = {"workflow_id": check_id(workflow_id, "workflow_id")}
        return [_typed(JobInfo, r) for r in self._rows((queries.WORKFLOW_JOBS, params), conn)]

    # --- schedules

    def put_schedule(
        self,
        tenant_id: str,
        name: str,
        cron: str,
        queue: str,
        payload: Any,
        *,
        priority: int | None = 0,
        catch_up: int | None = 1,
        skip_overlap: bool | None = False,
        time_zone: str | None = "UTC",
        conn: Conn | None = None,
    ) -> Schedule:
        """Create or replace a schedule; returns it as saved, with its next fire time. None for
        priority, catch_up, skip_overlap or time_zone: the SQL function's default (0, 1, False, UTC).
        `time_zone`: a pg_timezone_names name whose wall time the expression reads (InvalidInput
        naming time_zone otherwise)."""
        params = _schedule_params(
            tenant_id, name, cron, queue, payload, priority, catch_up, skip_overlap, time_zone
        )
        return _saved(Schedule, self._run(_put_schedule(params), conn)[1], f"schedule {name}")

    def list_schedules(self, tenant_id: str | None = None, *, conn: Conn | None = None) -> list[Schedule]:
        """The schedules of a tenant (None: of every tenant the caller acts for)."""
        rows = self._rows((queries.LIST_SCHEDULES, {"tenant_id": tenant_id}), conn)
        return [_typed(Schedule, r) for r in rows]

    def get_schedule(self, tenant_id: str, name: str, *, conn: Conn | None = None) -> Schedule | None:
        return _one(
            Schedule, self._rows((queries.GET_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        )

    def drop_schedule(self, tenant_id: str, name: str, *, conn: Conn | None = None) -> bool:
        """Remove a schedule; False when there was none (jobs it enqueued stay)."""
        rows = self._rows((queries.DROP_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return bool(rows[0]["dropped"])

    def pause_schedule(self, tenant_id: str, name: str, *, conn: Conn | None = None) -> bool:
        """Stop a schedule firing; False when it was paused already. Unknown schedule: NotFound."""
        rows = self._rows((queries.PAUSE_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return bool(rows[0]["changed"])

    def resume_schedule(self, tenant_id: str, name: str, *, conn: Conn | None = None) -> bool:
        """Let a paused schedule fire again from its next fire time after now (the runs missed while it
        was paused are skipped); False when it was not paused."""
        rows = self._rows((queries.RESUME_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return bool(rows[0]["changed"])

    def run_schedule(self, tenant_id: str, name: str, *, conn: Conn | None = None) -> int:
        """Submit one run of the schedule now (paused or not); returns the new job's id."""
        rows = self._rows((queries.RUN_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return int(rows[0]["job_id"])

    def schedule_runs(
        self,
        tenant_id: str,
        name: str,
        *,
        before_id: int | None = None,
        max_rows: int = 100,
        conn: Conn | None = None,
    ) -> list[ScheduleRun]:
        """A schedule's runs (the jobs it enqueued, with their fire times), newest first; the next
        page: `before_id` = the last job_id of this one. Also after the schedule was dropped."""
        params = {"tenant_id": tenant_id, "name": name, "before_id": before_id, "max_rows": max_rows}
        return [_typed(ScheduleRun, r) for r in self._rows((queries.SCHEDULE_RUNS, params), conn)]

    def next_fire_times(
        self, cron: str, count: int = 5, *, time_zone: str | None = "UTC", conn: Conn | None = None
    ) -> list[datetime]:
        """The next `count` fire times of a cron expression after now, read in `time_zone`, as
        jobctl.cron_next computes them."""
        rows = self._rows((queries.CRON_TIMES, {"cron": cron, "count": count, "time_zone": time_zone}), conn)
        return [r["at"] for r in rows]

    # --- tenants

    def put_tenant(
        self,
        tenant_id: str,
        *,
        weight: int = 1,
        max_pending: int | None = None,
        max_running: int | None = None,
        submit_rate: float | Decimal | None = None,
        submit_burst: int | None = None,
        claim_rate: float | Decimal | None = None,
        claim_burst: int | None = None,
        encrypt_payloads: bool = False,
        conn: Conn | None = None,
    ) -> Tenant:
        """Create or replace a tenant's settings: every one is set, those left out to their defaults."""
        settings = {
            "weight": weight, "max_pending": max_pending, "max_running": max_running,
            "submit_rate": submit_rate, "submit_burst": submit_burst, "claim_rate": claim_rate,
            "claim_burst": claim_burst, "encrypt_payloads": encrypt_payloads,
        }  # fmt: skip
        return _saved(Tenant, self._run(_put_tenant(tenant_id, settings), conn)[1], f"tenant {tenant_id}")

    def list_tenants(self, *, conn: Conn | None = None) -> list[Tenant]:
        return [_typed(Tenant, r) for r in self._rows((queries.LIST_TENANTS, {}), conn)]

    def get_tenant(self, tenant_id: str, *, conn: Conn | None = None) -> Tenant | None:
        return _one(Tenant, self._rows((queries.GET_TENANT, {"tenant_id": tenant_id}), conn))

    def pause_tenant(self, tenant_id: str, *, conn: Conn | None = None) -> bool:
        """Stop claims of the tenant's jobs; False when it was paused already. Unknown tenant: NotFound."""
        return self._pause(tenant_id, True, conn)

    def resume_tenant(self, tenant_id: str, *, conn: Conn | None = None) -> bool:
        """Let its jobs be claimed again; False when it was not paused."""
        return self._pause(tenant_id, False, conn)

    def _pause(self, tenant_id: str, paused: bool, conn: Conn | None) -> bool:
        rows = self._rows((queries.PAUSE_TENANT, {"tenant_id": tenant_id, "paused": paused}), conn)
        return bool(rows[0]["changed"])

    # --- queues (shared by every tenant: administrators only)

    def put_queue(
        self,
        queue: str,
        *,
        max_running: int | None = None,
        claim_rate: float | Decimal | None = None,
        claim_burst: int | None = None,
        paused: bool = False,
        conn: Conn | None = None,
    ) -> Queue:
        """Create or replace a queue's settings (left out: no limit, not paused); returns it as saved."""
        statements = _put_queue(queue, max_running, claim_rate, claim_burst, paused)
        return _saved(Queue, self._run(statements, conn)[1], f"queue {queue}")

    def list_queues(self, *, conn: Conn | None = None) -> list[Queue]:
        """The queues with settings, or with jobs due or running, by name."""
        return [_typed(Queue, r) for r in self._rows((queries.LIST_QUEUES, {}), conn)]

    def get_queue(self, queue: str, *, conn: Conn | None = None) -> Queue | None:
        return _one(Queue, self._rows((queries.GET_QUEUE, {"queue": queue}), conn))

    def pause_queue(self, queue: str, *, conn: Conn | None = None) -> bool:
        """Stop claims from the queue for every tenant; False when it was paused already."""
        return self._pause_queue(queue, True, conn)

    def resume_queue(self, queue: str, *, conn: Conn | None = None) -> bool:
        """Let its jobs be claimed again; False when it was not paused."""
        return self._pause_queue(queue, False, conn)

    def _pause_queue(self, queue: str, paused: bool, conn: Conn | None) -> bool:
        rows = self._rows((queries.PAUSE_QUEUE, {"queue": queue, "paused": paused}), conn)
        return bool(rows and rows[0]["changed"])

    # --- concurrency keys

    def put_concurrency_limit(
        self,
        tenant_id: str,
        concurrency_key: str | None,
        max_running: int | None,
        *,
        conn: Conn | None = None,
    ) -> None:
        """At most `max_running` jobs of the key run at once (key None: the tenant's default for keys
        without a limit of their own; max_running None: remove the limit)."""
        self._rows(_put_limit(tenant_id, concurrency_key, max_running), conn)

    def list_concurrency_limits(self, tenant_id: str, *, conn: Conn | None = None) -> list[ConcurrencyLimit]:
        rows = self._rows((queries.LIST_CONCURRENCY_LIMITS, {"tenant_id": tenant_id}), conn)
        return [_typed(ConcurrencyLimit, r) for r in rows]

    # --- API tokens and tenant grants

    def create_api_token(
        self,
        tenant_id: str | None,
        scopes: Iterable[str],
        label: str | None = None,
        *,
        conn: Conn | None = None,
    ) -> str:
        """A new token (tenant_id None: an admin token), `jct_<id>_<secret>`: the only time it is shown."""
        return str(self._rows(_create_token(tenant_id, scopes, label), conn)[0]["token"])

    def revoke_api_token(self, token_id: int, *, conn: Conn | None = None) -> bool:
        """False when there is no active token with this id."""
        params = {"token_id": check_id(token_id, "token_id")}
        rows = self._rows((queries.REVOKE_API_TOKEN, params), conn)
        return bool(rows and rows[0]["revoked"])

    def list_api_tokens(self, tenant_id: str | None = None, *, conn: Conn | None = None) -> list[ApiToken]:
        """The tokens (of one tenant, or all), revoked ones included."""
        rows = self._rows((queries.LIST_API_TOKENS, {"tenant_id": tenant_id}), conn)
        return [_typed(ApiToken, r) for r in rows]

    def grant_tenant(self, role: str, tenant_id: str | None = None, *, conn: Conn | None = None) -> bool:
        """Let a role act for a tenant (None: for every tenant); False when it already did."""
        rows = self._rows((queries.GRANT_TENANT, {"role": role, "tenant_id": tenant_id}), conn)
        return bool(rows[0]["granted"])

    def revoke_tenant(self, role: str, tenant_id: str | None = None, *, conn: Conn | None = None) -> bool:
        """Take the grant back; False when there was none."""
        rows = self._rows((queries.REVOKE_TENANT, {"role": role, "tenant_id": tenant_id}), conn)
        return bool(rows and rows[0]["revoked"])

    def list_tenant_grants(
        self, tenant_id: str | None = None, *, conn: Conn | None = None
    ) -> list[TenantGrant]:
        """The roles acting for the caller's tenants (tenant_id: for that one only, every-tenant grants
        left out)."""
        return [_typed(TenantGrant, r) for r in self._rows(_grants(tenant_id), conn)]

    # --- figures and health

    def stats(
        self, tenant_id: str | None = None, queue: str | None = None, *, conn: Conn | None = None
    ) -> list[Stats]:
        """Jobs per tenant, queue and state (None: every tenant the caller acts for, every queue)."""
        rows = self._rows((queries.STATS, {"tenant_id": tenant_id, "queue": queue}), conn)
        return [_typed(Stats, r) for r in rows]

    def claim_metrics(
        self,
        window: timedelta | float = 60,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: Conn | None = None,
    ) -> list[ClaimMetrics]:
        """Claims and waits per tenant and queue over the last `window` (a timedelta, or seconds)."""
        rows = self._rows(_claim_metrics(window, tenant_id, queue), conn)
        return [_typed(ClaimMetrics, r) for r in rows]

    def health_checks(self, *, conn: Conn | None = None) -> list[HealthCheck]:
        return [_typed(HealthCheck, r) for r in self._rows((queries.HEALTH_CHECKS, {}), conn)]

    # --- workers and the audit log

    def worker_beat(
        self,
        worker_id: str,
        host: str,
        pid: int,
        queues: Sequence[str] | None,
        concurrency: int,
        in_flight: int,
        *,
        conn: Conn | None = None,
    ) -> None:
        """Report a worker to the registry (queues None: all); a worker calls it every few seconds."""
        self._rows(_worker_beat(worker_id, host, pid, queues, concurrency, in_flight), conn)

    def worker_gone(self, worker_id: str, *, conn: Conn | None = None) -> None:
        """Take a worker out of the registry (a clean stop)."""
        self._rows((queries.WORKER_GONE, {"worker_id": worker_id}), conn)

    def list_workers(self, stale: timedelta | float = 60, *, conn: Conn | None = None) -> list[Worker]:
        """The registered workers; `alive`: seen within `stale` (a timedelta, or seconds; 1 s to 1 h)."""
        return [_typed(Worker, r) for r in self._rows(_list_workers(stale), conn)]

    def list_audit(
        self,
        tenant_id: str | None = None,
        *,
        before_id: int | None = None,
        max_count: int = 100,
        conn: Conn | None = None,
    ) -> list[AuditEntry]:
        """Audit entries of the caller's tenants (or one), newest first; the next page: `before_id` = the
        last audit_id of this one. max_count 1..1000."""
        return [_typed(AuditEntry, r) for r in self._rows(_list_audit(tenant_id, before_id, max_count), conn)]

    def now(self, *, conn: Conn | None = None) -> datetime:
        """The database clock (the transaction's start on `conn`), which every age is measured by."""
        now: datetime = self._rows((queries.NOW, {}), conn)[0]["now"]
        return now

    # --- bulk actions and the dashboard's figures (issue 21)

    def count_jobs(
        self,
        job_filter: Mapping[str, Any],
        action: str | None = None,
        max_count: int = 10000,
        *,
        conn: Conn | None = None,
    ) -> JobCount:
        """How many jobs of the caller's tenants match a bulk filter (action 'retry' or 'cancel': only
        those it would act on), counted up to max_count."""
        params = {"filter": _filter_json(job_filter), "action": action, "max_count": max_count}
        return _typed(JobCount, self._rows((queries.COUNT_JOBS, params), conn)[0])

    def find_jobs(
        self,
        job_filter: Mapping[str, Any],
        before_id: int | None = None,
        max_rows: int = 50,
        *,
        conn: Conn | None = None,
    ) -> list[JobInfo]:
        """A page of the jobs a bulk filter matches, hot and archived, newest first; the next page:
        `before_id` = the last job_id of this one."""
        rows = self._rows(_find_jobs(job_filter, before_id, max_rows), conn)
        return [_typed(JobInfo, r) for r in rows]

    def retry_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: Conn | None = None,
    ) -> BulkBatch:
        """Retry one batch of the jobs a filter matches; loop on `last_id` until `done`."""
        return _typed(
            BulkBatch, self._rows(_bulk(queries.RETRY_JOBS, job_filter, max_jobs, after_id), conn)[0]
        )

    def cancel_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: Conn | None = None,
    ) -> BulkBatch:
        """Cancel one batch of the jobs a filter matches; loop on `last_id` until `done`."""
        statement = _bulk(queries.CANCEL_JOBS, job_filter, max_jobs, after_id)
        return _typed(BulkBatch, self._rows(statement, conn)[0])

    def delete_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: Conn | None = None,
    ) -> BulkBatch:
        """Delete one batch of the finished (completed, dead, cancelled) jobs a filter matches, with
        their history; loop on `last_id` until `done`."""
        statement = _bulk(queries.DELETE_JOBS, job_filter, max_jobs, after_id)
        return _typed(BulkBatch, self._rows(statement, conn)[0])

    def job_overview(
        self,
        window: timedelta | float = 300,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: Conn | None = None,
    ) -> list[JobOverview]:
        """Each tenant's queue from the counters: gauges, oldest due job, rates over `window`."""
        params = {"window": _seconds(window), "tenant_id": tenant_id, "queue": queue}
        return [_typed(JobOverview, r) for r in self._rows((queries.JOB_OVERVIEW, params), conn)]

    def minute_rates(
        self,
        since: datetime,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: Conn | None = None,
    ) -> list[MinuteRates]:
        """job_rates per minute since `since`, summed over the tenants and queues asked for."""
        params = {"since": since, "tenant_id": tenant_id, "queue": queue}
        return [_typed(MinuteRates, r) for r in self._rows((queries.JOB_RATES_BY_MINUTE, params), conn)]

    def fairness(self, window: timedelta | float = 300, *, conn: Conn | None = None) -> list[Fairness]:
        """Each tenant's share of the claims over `window` against its weight's share."""
        return [
            _typed(Fairness, r) for r in self._rows((queries.FAIRNESS, {"window": _seconds(window)}), conn)
        ]


class AsyncClient:
    """Client for asyncio: the same calls, awaited; `conn=` takes a psycopg AsyncConnection. Its own
    connection serves one call at a time (for calls in parallel, pass connections of your own pool)."""

    def __init__(self, dsn: str | None = None, *, listen_dsn: str | None = None) -> None:
        self.dsn = dsn if dsn is not None else db.dsn()
        # where wait() LISTENs: this, else JOBCTL_LISTEN_DSN, else dsn unless JOBCTL_POOLER=transaction
        # (then no hints: wait() polls)
        self.listen_dsn = listen_dsn
        self._conn: AsyncConn | None = None
        self._lock = asyncio.Lock()
        self._listener = waiting.AsyncListener()  # the waits' one LISTEN connection, open while any runs

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._listener.close()
        async with self._lock:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None

    async def _run(self, statements: Sequence[Statement], conn: AsyncConn | None) -> list[list[Row]]:
        try:
            if conn is not None:
                return [await _execute_async(conn, s) for s in statements]
            async with self._lock:
                if self._conn is None or self._conn.closed:
                    self._conn = await psycopg.AsyncConnection.connect(self.dsn, **_connect_kwargs(self.dsn))
                own = self._conn
                if len(statements) == 1:
                    return [await _execute_async(own, statements[0])]
                async with own.transaction():
                    return [await _execute_async(own, s) for s in statements]
        except psycopg.Error as e:
            raise _mapped(e) from e

    async def _rows(self, statement: Statement, conn: AsyncConn | None) -> list[Row]:
        return (await self._run([statement], conn))[0]

    # --- jobs

    async def submit(
        self,
        tenant_id: str,
        queue: str,
        payload: Any,
        *,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay: timedelta | float | None = None,
        dedup_key: str | None = None,
        max_attempts: int | None = None,
        backoff: Mapping[str, Any] | None = None,
        timeout: timedelta | float | str | None = None,
        subject_key: str | None = None,
        concurrency_key: str | None = None,
        traceparent: str | None = None,
        depends_on: Sequence[int] | None = None,
        on_parent_failure: str | None = None,
        dedup_states: Sequence[str] | None = None,
        dedup_period: timedelta | float | str | None = None,
        dedup_mode: str | None = None,
        conn: AsyncConn | None = None,
    ) -> Submitted:
        with tracing.submitting(traceparent, 1, tenant_id, queue) as context:
            spec = JobSpec(
                tenant_id, queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout,
                subject_key, concurrency_key, context, depends_on, on_parent_failure, dedup_states,
                dedup_period, dedup_mode,
            )  # fmt: skip
            return _typed(Submitted, (await self._rows(_submit(spec, delay), conn))[0])

    async def submit_many(
        self,
        jobs: Iterable[JobSpec | Mapping[str, Any]],
        *,
        traceparent: str | None = None,
        conn: AsyncConn | None = None,
    ) -> list[Submitted]:
        jobs = list(jobs)
        with tracing.submitting(traceparent, len(jobs)) as context:
            rows = await self._rows((queries.SUBMIT_JOBS, {"jobs": _jobs_json(jobs, context)}), conn)
        return [_typed(Submitted, r) for r in rows]

    async def get_job(self, job_id: int, *, conn: AsyncConn | None = None) -> JobInfo | None:
        rows = await self._rows((queries.LOCATE_JOB, {"job_id": check_id(job_id)}), conn)
        if rows and rows[0]["files"] is not None:
            row = await self._archived(job_id, conn, rows[0]["files"])
            return None if row is None else _archived_job(row)
        return _one(JobInfo, rows)

    async def _archived(
        self, job_id: int, conn: AsyncConn | None, files: list[Row] | None = None
    ) -> Row | None:
        if files is None:
            files = await self._rows((queries.ARCHIVED_JOB, {"job_id": job_id}), conn)
        row = await asyncio.to_thread(archive.find_archived, files, job_id) if files else None
        if row is not None and archive.sealed(row):
            opened = await self._rows((queries.OPEN_ARCHIVED_PAYLOAD, archive.payload_of(row)), conn)
            row["payload"] = opened[0]["payload"]
        return row

    async def wait(self, job_id: int, timeout: timedelta | float = 60.0, *, hint: bool = True) -> JobInfo:
        """Client.wait, awaited."""
        return await waiting.wait_async(self, check_id(job_id), waiting.seconds(timeout), hint)

    async def watch_job(
        self, job_id: int, channel: str, wait: timedelta | float = 300, *, conn: AsyncConn | None = None
    ) -> JobInfo | None:
        params = {"job_id": check_id(job_id), "channel": channel, "wait": _seconds(wait)}
        return _one(JobInfo, await self._rows((queries.WATCH_JOB, params), conn))

    async def list_jobs(
        self,
        tenant_id: str,
        *,
        state: str | None = None,
        queue: str | None = None,
        before_id: int | None = None,
        max_rows: int = 100,
        conn: AsyncConn | None = None,
    ) -> list[JobInfo]:
        rows = await self._rows(_list_jobs(tenant_id, state, queue, before_id, max_rows), conn)
        return [_typed(JobInfo, r) for r in rows]

    async def job_history(self, job_id: int, *, conn: AsyncConn | None = None) -> list[HistoryEntry]:
        rows = await self._rows((queries.JOB_HISTORY, {"job_id": check_id(job_id)}), conn)
        if not rows and (row := await self._archived(job_id, conn)) is not None:
            rows = archive.history_rows(row)
        return [_typed(HistoryEntry, r) for r in rows]

    async def cancel_job(self, job_id: int, *, conn: AsyncConn | None = None) -> str:
        rows = await self._rows((queries.CANCEL_JOB, {"job_id": check_id(job_id)}), conn)
        return str(rows[0]["state"])

    async def retry_job(self, job_id: int, *, conn: AsyncConn | None = None) -> str:
        rows = await self._rows((queries.RETRY_JOB, {"job_id": check_id(job_id)}), conn)
        return str(rows[0]["state"])

    # --- workflows and batches (issue 22)

    async def submit_workflow(
        self,
        jobs: Iterable[JobSpec | Mapping[str, Any]],
        *,
        on_parent_failure: str | None = None,
        traceparent: str | None = None,
        conn: AsyncConn | None = None,
    ) -> Workflow:
        jobs = list(jobs)
        with tracing.submitting(traceparent, len(jobs)) as context:
            rows = await self._rows(_workflow(jobs, on_parent_failure, context), conn)
        return _workflow_of(rows)

    async def submit_batch(
        self,
        jobs: Iterable[JobSpec | Mapping[str, Any]],
        *,
        on_finish: JobSpec | Mapping[str, Any] | None = None,
        on_success: JobSpec | Mapping[str, Any] | None = None,
        on_discard: JobSpec | Mapping[str, Any] | None = None,
        traceparent: str | None = None,
        conn: AsyncConn | None = None,
    ) -> BatchSubmitted:
        jobs = list(jobs)
        callbacks = {"on_finish": on_finish, "on_success": on_success, "on_discard": on_discard}
        with tracing.submitting(traceparent, len(jobs)) as context:
            row = (await self._rows(_batch(jobs, callbacks, context), conn))[0]
        return _typed(BatchSubmitted, row)

    async def get_batch(self, batch_id: int, *, conn: AsyncConn | None = None) -> Batch | None:
        params = {"batch_id": check_id(batch_id, "batch_id")}
        return _one(Batch, await self._rows((queries.GET_BATCH, params), conn))

    async def parent_results(self, job_id: int, *, conn: AsyncConn | None = None) -> dict[str, Any] | None:
        rows = await self._rows((queries.PARENT_RESULTS, {"job_id": check_id(job_id)}), conn)
        results: dict[str, Any] | None = rows[0]["results"] if rows else None
        return results

    async def workflow_jobs(self, workflow_id: int, *, conn: AsyncConn | None = None) -> list[JobInfo]:
        params = {"workflow_id": check_id(workflow_id, "workflow_id")}
        return [_typed(JobInfo, r) for r in await self._rows((queries.WORKFLOW_JOBS, params), conn)]

    # --- schedules

    async def put_schedule(
        self,
        tenant_id: str,
        name: str,
        cron: str,
        queue: str,
        payload: Any,
        *,
        priority: int | None = 0,
        catch_up: int | None = 1,
        skip_overlap: bool | None = False,
        time_zone: str | None = "UTC",
        conn: AsyncConn | None = None,
    ) -> Schedule:
        params = _schedule_params(
            tenant_id, name, cron, queue, payload, priority, catch_up, skip_overlap, time_zone
        )
        return _saved(Schedule, (await self._run(_put_schedule(params), conn))[1], f"schedule {name}")

    async def list_schedules(
        self, tenant_id: str | None = None, *, conn: AsyncConn | None = None
    ) -> list[Schedule]:
        rows = await self._rows((queries.LIST_SCHEDULES, {"tenant_id": tenant_id}), conn)
        return [_typed(Schedule, r) for r in rows]

    async def get_schedule(
        self, tenant_id: str, name: str, *, conn: AsyncConn | None = None
    ) -> Schedule | None:
        key = {"tenant_id": tenant_id, "name": name}
        return _one(Schedule, await self._rows((queries.GET_SCHEDULE, key), conn))

    async def drop_schedule(self, tenant_id: str, name: str, *, conn: AsyncConn | None = None) -> bool:
        rows = await self._rows((queries.DROP_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return bool(rows[0]["dropped"])

    async def pause_schedule(self, tenant_id: str, name: str, *, conn: AsyncConn | None = None) -> bool:
        rows = await self._rows((queries.PAUSE_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return bool(rows[0]["changed"])

    async def resume_schedule(self, tenant_id: str, name: str, *, conn: AsyncConn | None = None) -> bool:
        rows = await self._rows((queries.RESUME_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return bool(rows[0]["changed"])

    async def run_schedule(self, tenant_id: str, name: str, *, conn: AsyncConn | None = None) -> int:
        rows = await self._rows((queries.RUN_SCHEDULE, {"tenant_id": tenant_id, "name": name}), conn)
        return int(rows[0]["job_id"])

    async def schedule_runs(
        self,
        tenant_id: str,
        name: str,
        *,
        before_id: int | None = None,
        max_rows: int = 100,
        conn: AsyncConn | None = None,
    ) -> list[ScheduleRun]:
        params = {"tenant_id": tenant_id, "name": name, "before_id": before_id, "max_rows": max_rows}
        return [_typed(ScheduleRun, r) for r in await self._rows((queries.SCHEDULE_RUNS, params), conn)]

    async def next_fire_times(
        self, cron: str, count: int = 5, *, time_zone: str | None = "UTC", conn: AsyncConn | None = None
    ) -> list[datetime]:
        params = {"cron": cron, "count": count, "time_zone": time_zone}
        rows = await self._rows((queries.CRON_TIMES, params), conn)
        return [r["at"] for r in rows]

    # --- tenants

    async def put_tenant(
        self,
        tenant_id: str,
        *,
        weight: int = 1,
        max_pending: int | None = None,
        max_running: int | None = None,
        submit_rate: float | Decimal | None = None,
        submit_burst: int | None = None,
        claim_rate: float | Decimal | None = None,
        claim_burst: int | None = None,
        encrypt_payloads: bool = False,
        conn: AsyncConn | None = None,
    ) -> Tenant:
        settings = {
            "weight": weight, "max_pending": max_pending, "max_running": max_running,
            "submit_rate": submit_rate, "submit_burst": submit_burst, "claim_rate": claim_rate,
            "claim_burst": claim_burst, "encrypt_payloads": encrypt_payloads,
        }  # fmt: skip
        rows = (await self._run(_put_tenant(tenant_id, settings), conn))[1]
        return _saved(Tenant, rows, f"tenant {tenant_id}")

    async def list_tenants(self, *, conn: AsyncConn | None = None) -> list[Tenant]:
        return [_typed(Tenant, r) for r in await self._rows((queries.LIST_TENANTS, {}), conn)]

    async def get_tenant(self, tenant_id: str, *, conn: AsyncConn | None = None) -> Tenant | None:
        return _one(Tenant, await self._rows((queries.GET_TENANT, {"tenant_id": tenant_id}), conn))

    async def pause_tenant(self, tenant_id: str, *, conn: AsyncConn | None = None) -> bool:
        return await self._pause(tenant_id, True, conn)

    async def resume_tenant(self, tenant_id: str, *, conn: AsyncConn | None = None) -> bool:
        return await self._pause(tenant_id, False, conn)

    async def _pause(self, tenant_id: str, paused: bool, conn: AsyncConn | None) -> bool:
        rows = await self._rows((queries.PAUSE_TENANT, {"tenant_id": tenant_id, "paused": paused}), conn)
        return bool(rows[0]["changed"])

    # --- queues (shared by every tenant: administrators only)

    async def put_queue(
        self,
        queue: str,
        *,
        max_running: int | None = None,
        claim_rate: float | Decimal | None = None,
        claim_burst: int | None = None,
        paused: bool = False,
        conn: AsyncConn | None = None,
    ) -> Queue:
        """Create or replace a queue's settings (left out: no limit, not paused); returns it as saved."""
        statements = _put_queue(queue, max_running, claim_rate, claim_burst, paused)
        return _saved(Queue, (await self._run(statements, conn))[1], f"queue {queue}")

    async def list_queues(self, *, conn: AsyncConn | None = None) -> list[Queue]:
        """The queues with settings, or with jobs due or running, by name."""
        return [_typed(Queue, r) for r in await self._rows((queries.LIST_QUEUES, {}), conn)]

    async def get_queue(self, queue: str, *, conn: AsyncConn | None = None) -> Queue | None:
        return _one(Queue, await self._rows((queries.GET_QUEUE, {"queue": queue}), conn))

    async def pause_queue(self, queue: str, *, conn: AsyncConn | None = None) -> bool:
        """Stop claims from the queue for every tenant; False when it was paused already."""
        return await self._pause_queue(queue, True, conn)

    async def resume_queue(self, queue: str, *, conn: AsyncConn | None = None) -> bool:
        """Let its jobs be claimed again; False when it was not paused."""
        return await self._pause_queue(queue, False, conn)

    async def _pause_queue(self, queue: str, paused: bool, conn: AsyncConn | None) -> bool:
        rows = await self._rows((queries.PAUSE_QUEUE, {"queue": queue, "paused": paused}), conn)
        return bool(rows and rows[0]["changed"])

    # --- concurrency keys

    async def put_concurrency_limit(
        self,
        tenant_id: str,
        concurrency_key: str | None,
        max_running: int | None,
        *,
        conn: AsyncConn | None = None,
    ) -> None:
        """At most `max_running` jobs of the key run at once (key None: the tenant's default for keys
        without a limit of their own; max_running None: remove the limit)."""
        await self._rows(_put_limit(tenant_id, concurrency_key, max_running), conn)

    async def list_concurrency_limits(
        self, tenant_id: str, *, conn: AsyncConn | None = None
    ) -> list[ConcurrencyLimit]:
        rows = await self._rows((queries.LIST_CONCURRENCY_LIMITS, {"tenant_id": tenant_id}), conn)
        return [_typed(ConcurrencyLimit, r) for r in rows]

    # --- API tokens and tenant grants

    async def create_api_token(
        self,
        tenant_id: str | None,
        scopes: Iterable[str],
        label: str | None = None,
        *,
        conn: AsyncConn | None = None,
    ) -> str:
        """A new token (tenant_id None: an admin token), `jct_<id>_<secret>`: the only time it is shown."""
        return str((await self._rows(_create_token(tenant_id, scopes, label), conn))[0]["token"])

    async def revoke_api_token(self, token_id: int, *, conn: AsyncConn | None = None) -> bool:
        """False when there is no active token with this id."""
        rows = await self._rows(
            (queries.REVOKE_API_TOKEN, {"token_id": check_id(token_id, "token_id")}), conn
        )
        return bool(rows and rows[0]["revoked"])

    async def list_api_tokens(
        self, tenant_id: str | None = None, *, conn: AsyncConn | None = None
    ) -> list[ApiToken]:
        """The tokens (of one tenant, or all), revoked ones included."""
        rows = await self._rows((queries.LIST_API_TOKENS, {"tenant_id": tenant_id}), conn)
        return [_typed(ApiToken, r) for r in rows]

    async def grant_tenant(
        self, role: str, tenant_id: str | None = None, *, conn: AsyncConn | None = None
    ) -> bool:
        """Let a role act for a tenant (None: for every tenant); False when it already did."""
        rows = await self._rows((queries.GRANT_TENANT, {"role": role, "tenant_id": tenant_id}), conn)
        return bool(rows[0]["granted"])

    async def revoke_tenant(
        self, role: str, tenant_id: str | None = None, *, conn: AsyncConn | None = None
    ) -> bool:
        """Take the grant back; False when there was none."""
        rows = await self._rows((queries.REVOKE_TENANT, {"role": role, "tenant_id": tenant_id}), conn)
        return bool(rows and rows[0]["revoked"])

    async def list_tenant_grants(
        self, tenant_id: str | None = None, *, conn: AsyncConn | None = None
    ) -> list[TenantGrant]:
        return [_typed(TenantGrant, r) for r in await self._rows(_grants(tenant_id), conn)]

    # --- figures and health

    async def stats(
        self, tenant_id: str | None = None, queue: str | None = None, *, conn: AsyncConn | None = None
    ) -> list[Stats]:
        """Jobs per tenant, queue and state (None: every tenant the caller acts for, every queue)."""
        rows = await self._rows((queries.STATS, {"tenant_id": tenant_id, "queue": queue}), conn)
        return [_typed(Stats, r) for r in rows]

    async def claim_metrics(
        self,
        window: timedelta | float = 60,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: AsyncConn | None = None,
    ) -> list[ClaimMetrics]:
        """Claims and waits per tenant and queue over the last `window` (a timedelta, or seconds)."""
        return [
            _typed(ClaimMetrics, r) for r in await self._rows(_claim_metrics(window, tenant_id, queue), conn)
        ]

    async def health_checks(self, *, conn: AsyncConn | None = None) -> list[HealthCheck]:
        return [_typed(HealthCheck, r) for r in await self._rows((queries.HEALTH_CHECKS, {}), conn)]

    # --- workers and the audit log

    async def worker_beat(
        self,
        worker_id: str,
        host: str,
        pid: int,
        queues: Sequence[str] | None,
        concurrency: int,
        in_flight: int,
        *,
        conn: AsyncConn | None = None,
    ) -> None:
        await self._rows(_worker_beat(worker_id, host, pid, queues, concurrency, in_flight), conn)

    async def worker_gone(self, worker_id: str, *, conn: AsyncConn | None = None) -> None:
        await self._rows((queries.WORKER_GONE, {"worker_id": worker_id}), conn)

    async def list_workers(
        self, stale: timedelta | float = 60, *, conn: AsyncConn | None = None
    ) -> list[Worker]:
        return [_typed(Worker, r) for r in await self._rows(_list_workers(stale), conn)]

    async def list_audit(
        self,
        tenant_id: str | None = None,
        *,
        before_id: int | None = None,
        max_count: int = 100,
        conn: AsyncConn | None = None,
    ) -> list[AuditEntry]:
        rows = await self._rows(_list_audit(tenant_id, before_id, max_count), conn)
        return [_typed(AuditEntry, r) for r in rows]

    async def now(self, *, conn: AsyncConn | None = None) -> datetime:
        """The database clock (the transaction's start on `conn`), which every age is measured by."""
        now: datetime = (await self._rows((queries.NOW, {}), conn))[0]["now"]
        return now

    # --- bulk actions and the dashboard's figures (issue 21)

    async def count_jobs(
        self,
        job_filter: Mapping[str, Any],
        action: str | None = None,
        max_count: int = 10000,
        *,
        conn: AsyncConn | None = None,
    ) -> JobCount:
        params = {"filter": _filter_json(job_filter), "action": action, "max_count": max_count}
        return _typed(JobCount, (await self._rows((queries.COUNT_JOBS, params), conn))[0])

    async def find_jobs(
        self,
        job_filter: Mapping[str, Any],
        before_id: int | None = None,
        max_rows: int = 50,
        *,
        conn: AsyncConn | None = None,
    ) -> list[JobInfo]:
        rows = await self._rows(_find_jobs(job_filter, before_id, max_rows), conn)
        return [_typed(JobInfo, r) for r in rows]

    async def retry_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: AsyncConn | None = None,
    ) -> BulkBatch:
        statement = _bulk(queries.RETRY_JOBS, job_filter, max_jobs, after_id)
        return _typed(BulkBatch, (await self._rows(statement, conn))[0])

    async def cancel_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: AsyncConn | None = None,
    ) -> BulkBatch:
        statement = _bulk(queries.CANCEL_JOBS, job_filter, max_jobs, after_id)
        return _typed(BulkBatch, (await self._rows(statement, conn))[0])

    async def delete_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: AsyncConn | None = None,
    ) -> BulkBatch:
        statement = _bulk(queries.DELETE_JOBS, job_filter, max_jobs, after_id)
        return _typed(BulkBatch, (await self._rows(statement, conn))[0])

    async def job_overview(
        self,
        window: timedelta | float = 300,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: AsyncConn | None = None,
    ) -> list[JobOverview]:
        params = {"window": _seconds(window), "tenant_id": tenant_id, "queue": queue}
        return [_typed(JobOverview, r) for r in await self._rows((queries.JOB_OVERVIEW, params), conn)]

    async def minute_rates(
        self,
        since: datetime,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: AsyncConn | None = None,
    ) -> list[MinuteRates]:
        params = {"since": since, "tenant_id": tenant_id, "queue": queue}
        rows = await self._rows((queries.JOB_RATES_BY_MINUTE, params), conn)
        return [_typed(MinuteRates, r) for r in rows]

    async def fairness(
        self, window: timedelta | float = 300, *, conn: AsyncConn | None = None
    ) -> list[Fairness]:
        rows = await self._rows((queries.FAIRNESS, {"window": _seconds(window)}), conn)
        return [_typed(Fairness, r) for r in rows]
