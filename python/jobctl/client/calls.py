"""The client's calls, each written once as a plan, and the two clients that run plans.

A plan is a generator method of `Calls`: it checks its arguments, yields the statements of queries.py
that the call runs (a list: several in one transaction; the rows of its last come back), receives
their rows and returns the call's value, decoded into the types of jobctl.client.rows. A request may also
be a function that blocks (reading an archive file), which `AsyncClient` runs in a thread. `Client`
runs a plan's requests on its connection, `AsyncClient` awaits them: the `call` descriptor turns each plan
into a method of both, so that `Client().get_job(1)` is a JobInfo and `AsyncClient().get_job(1)` an
awaitable of one, from the same lines.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Callable, Coroutine, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import set_json_loads

from jobctl import archive, db, errors, queries, tracing, waiting
from jobctl.client.rows import (
    ApiToken,
    AuditEntry,
    Batch,
    BatchSubmitted,
    BulkBatch,
    ClaimMetrics,
    ConcurrencyLimit,
    Fairness,
    HealthCheck,
    HistoryEntry,
    JobCount,
    JobInfo,
    JobOverview,
    MinuteRates,
    Queue,
    QueueRow,
    Row,
    Schedule,
    ScheduleRun,
    StateCounts,
    Stats,
    Step,
    Submitted,
    Tenant,
    TenantGrant,
    Worker,
    Workflow,
    load_json,
    one,
    saved,
    typed,
)

Conn = psycopg.Connection[Any]
AsyncConn = psycopg.AsyncConnection[Any]
# a call's `conn`: the caller's connection (a Client takes a Connection, an AsyncClient an
# AsyncConnection), or None for the client's own
CallerConn = Conn | AsyncConn | None
Statement = tuple[str, Mapping[str, Any]]
Request = Statement | list[Statement] | Callable[[], Any]  # what a plan yields
R = TypeVar("R")
P = ParamSpec("P")
Plan = Generator[Request, Any, R]

BIGINT_MAX = 2**63 - 1  # job ids are positive bigints


# --- arguments as the statements take them


def check_id(value: int, name: str = "job_id") -> int:
    """A job (or token) id as the database takes it: a whole number from 1 to BIGINT_MAX."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= BIGINT_MAX:
        raise errors.InvalidInput(
            f"{name} must be a whole number from 1 to {BIGINT_MAX}, not {value!r}",
            sqlstate="22003",
            field=name,
        )
    return value


def _before(value: int | None, name: str) -> int | None:
    """A page's keyset id (None: the first page)."""
    return check_id(value, name) if value is not None else None


def _seconds(window: timedelta | float) -> timedelta:
    return window if isinstance(window, timedelta) else timedelta(seconds=window)


def _json(value: Any, field: str, what: str) -> str:
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        # 22P02: what the database answers for text that is not JSON
        raise errors.InvalidInput(f"{what} is not JSON: {e}", sqlstate="22P02", field=field) from None


def _filter_json(job_filter: Mapping[str, Any]) -> str:
    """A bulk filter as count_jobs takes it (JSON null: the key left out)."""
    return json.dumps(dict(job_filter), allow_nan=False, default=str)


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
    # workflows: the jobs (ids; in submit_workflow also names of earlier jobs) that must complete
    # first, and what a dead or cancelled one does to this job ('cancel' or 'wait')
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


JobInput = JobSpec | Mapping[str, Any]


def _jobs_json(jobs: Iterable[JobInput], traceparent: str | None = None) -> str:
    """The submit_jobs array; `traceparent` goes to every job that has none of its own (tracing)."""
    specs = [j.to_json() if isinstance(j, JobSpec) else dict(j) for j in jobs]
    if traceparent is not None:
        for spec in specs:
            spec.setdefault("traceparent", traceparent)
    return _json(specs, "payload", "a job")


def _callback_json(spec: JobInput | None, name: str) -> str | None:
    """A batch's callback as submit_batch takes it (None: not given; tenant_id may be left out)."""
    if spec is None:
        return None
    return _json(spec.to_json() if isinstance(spec, JobSpec) else dict(spec), name, name)


# --- one method for both clients


class call(Generic[P, R]):
    """A plan as a method of both clients: on a Client it returns the plan's value, on an AsyncClient
    an awaitable of it."""

    def __init__(self, plan: Callable[Concatenate[Any, P], Plan[R]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, obj: Client, owner: type[Any]) -> Callable[P, R]: ...
    @overload
    def __get__(self, obj: AsyncClient, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, R]]: ...
    def __get__(self, obj: Client | AsyncClient | None, owner: type[Any]) -> Any:
        return self if obj is None else functools.partial(obj._call, self.plan)


class Calls:
    """The calls of both clients, each once."""

    # --- jobs

    @call
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
        conn: CallerConn = None,
    ) -> Plan[Submitted]:
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
            if delay is None:
                rows = yield queries.SUBMIT_JOBS, {"jobs": _jobs_json([spec])}
            elif spec.run_at is not None:
                raise errors.InvalidInput("give run_at or delay, not both", field="run_at")
            else:
                seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
                job = json.dumps(spec.to_json(), allow_nan=False)
                rows = yield queries.SUBMIT_JOB_AFTER, {"job": job, "seconds": seconds}
        return typed(Submitted, rows[0])

    @call
    def submit_many(
        self, jobs: Iterable[JobInput], *, traceparent: str | None = None, conn: CallerConn = None
    ) -> Plan[list[Submitted]]:
        """Submit a batch (at most 10,000), all or nothing; results in input order. A job may also be a
        mapping with submit_jobs' keys. An error about one job says which in `index`. `traceparent`
        (or, with OpenTelemetry, the batch's `jobctl submit` span) goes to every job without one."""
        jobs = list(jobs)
        with tracing.submitting(traceparent, len(jobs)) as context:
            rows = yield queries.SUBMIT_JOBS, {"jobs": _jobs_json(jobs, context)}
        return [typed(Submitted, r) for r in rows]

    @call
    def get_job(self, job_id: int, *, conn: CallerConn = None) -> Plan[JobInfo | None]:
        """The job, or None when no job has this id (or it is another tenant's). A job that has left
        the database for the object archive is read from its file (jobctl.archive)."""
        rows = yield queries.LOCATE_JOB, {"job_id": check_id(job_id)}
        if rows and rows[0]["files"] is not None:  # not in the database: read from the archive's files
            row = yield from self._archived(job_id, rows[0]["files"])
            if row is None:
                return None
            # as get_job returns a job: no lease; parent_results not read
            return JobInfo(**archive.job_fields(row, [f.name for f in fields(JobInfo)]))
        return one(JobInfo, rows)

    def _archived(self, job_id: int, files: list[Row] | None = None) -> Plan[Row | None]:
        """The job's row in the object archive (None: no file of the caller's tenants holds it); files:
        jobctl.locate_job's, else jobctl.archived_job's."""
        if files is None:
            files = yield queries.ARCHIVED_JOB, {"job_id": job_id}
        row: Row | None = (yield functools.partial(archive.find_archived, files, job_id)) if files else None
        if row is not None and archive.sealed(row):
            params = {"tenant_id": row["tenant_id"], "payload": row["payload"]}
            opened = yield queries.OPEN_ARCHIVED_PAYLOAD, params
            row["payload"] = opened[0]["payload"]
        return row

    @call
    def watch_job(
        self, job_id: int, channel: str, wait: timedelta | float = 300, *, conn: CallerConn = None
    ) -> Plan[JobInfo | None]:
        """jobctl.watch_job: the job (None: unknown), and, unless it is finished, a hint on `channel`
        when it finishes (LISTEN on it first, on the same connection: `conn`)."""
        params = {"job_id": check_id(job_id), "channel": channel, "wait": _seconds(wait)}
        return one(JobInfo, (yield queries.WATCH_JOB, params))

    @call
    def list_jobs(
        self,
        tenant_id: str,
        *,
        state: str | None = None,
        queue: str | None = None,
        before_id: int | None = None,
        max_rows: int = 100,
        conn: CallerConn = None,
    ) -> Plan[list[JobInfo]]:
        """A tenant's jobs, newest first; the next page: `before_id` = the last job_id of this one."""
        params = {
            "tenant_id": tenant_id,
            "state": state,
            "queue": queue,
            "before_id": _before(before_id, "before_id"),
            "max_rows": max_rows,
        }
        return [typed(JobInfo, r) for r in (yield queries.LIST_JOBS, params)]

    @call
    def job_history(self, job_id: int, *, conn: CallerConn = None) -> Plan[list[HistoryEntry]]:
        """Every transition of the job, oldest first ([] for an unknown job)."""
        rows = yield queries.JOB_HISTORY, {"job_id": check_id(job_id)}
        if not rows and (row := (yield from self._archived(job_id))) is not None:
            rows = archive.history_rows(row)
        return [typed(HistoryEntry, r) for r in rows]

    @call
    def cancel_job(self, job_id: int, *, conn: CallerConn = None) -> Plan[str]:
        """Cancel a pending, failed or running job; returns its state ('cancelled')."""
        return str((yield queries.CANCEL_JOB, {"job_id": check_id(job_id)})[0]["state"])

    @call
    def retry_job(self, job_id: int, *, conn: CallerConn = None) -> Plan[str]:
        """Make a failed, dead or cancelled job pending, due now; returns its state ('pending')."""
        return str((yield queries.RETRY_JOB, {"job_id": check_id(job_id)})[0]["state"])

    # --- durable execution (docs/durable.md)

    @call
    def job_steps(self, job_id: int, *, conn: CallerConn = None) -> Plan[list[Step]]:
        """The job's saved steps and await outcomes, in the order they were saved ([] for an unknown job,
        another tenant's, or one no longer hot)."""
        return [typed(Step, r) for r in (yield queries.JOB_STEPS, {"job_id": check_id(job_id)})]

    @call
    def emit_event(
        self, tenant_id: str, event: str, payload: Any = None, *, conn: CallerConn = None
    ) -> Plan[int]:
        """Emit the tenant's event with a JSON payload: every job waiting on it (`job.wait_for`) is due
        at once and reads the payload. The first emit wins; returns how many jobs it woke (0 for a
        repeat, which changes nothing)."""
        text = None if payload is None else _json(payload, "payload", "the payload")
        params = {"tenant_id": tenant_id, "event": event, "payload": text}
        return int((yield queries.EMIT_EVENT, params)[0]["emit_event"])

    # --- workflows and batches

    @call
    def submit_workflow(
        self,
        jobs: Iterable[JobInput],
        *,
        on_parent_failure: str | None = None,
        traceparent: str | None = None,
        conn: CallerConn = None,
    ) -> Plan[Workflow]:
        """Submit a DAG of named jobs at once, all or nothing: each job (a JobSpec with `name`, or a
        mapping with submit_jobs' keys and `name`) may depend on jobs listed before it, by name, and on
        existing jobs, by id. `on_parent_failure` ('cancel' or 'wait') is the default of each job's own.
        Returns the workflow's id and each job's id by name."""
        jobs = list(jobs)
        if not jobs:  # submit_workflow answers no rows: no workflow, no id
            raise errors.InvalidInput("a workflow needs at least one job", sqlstate="JC001", field="jobs")
        with tracing.submitting(traceparent, len(jobs)) as context:
            params = {"jobs": _jobs_json(jobs, context), "on_parent_failure": on_parent_failure or "cancel"}
            rows = yield queries.SUBMIT_WORKFLOW, params
        return Workflow(int(rows[0]["workflow_id"]), {str(r["name"]): int(r["job_id"]) for r in rows})

    @call
    def submit_batch(
        self,
        jobs: Iterable[JobInput],
        *,
        on_finish: JobInput | None = None,
        on_success: JobInput | None = None,
        on_discard: JobInput | None = None,
        traceparent: str | None = None,
        conn: CallerConn = None,
    ) -> Plan[BatchSubmitted]:
        """Submit one tenant's jobs (without dedup_key) as a batch with callbacks, jobs of their own
        (a callback's tenant_id defaults to the members'): on_finish is enqueued once the last member
        ends, on_success then if all completed, on_discard then if any did not. At least one."""
        jobs = list(jobs)
        callbacks = {"on_finish": on_finish, "on_success": on_success, "on_discard": on_discard}
        with tracing.submitting(traceparent, len(jobs)) as context:
            params: dict[str, str | None] = {"jobs": _jobs_json(jobs, context)}
            params |= {name: _callback_json(spec, name) for name, spec in callbacks.items()}
            rows = yield queries.SUBMIT_BATCH, params
        return typed(BatchSubmitted, rows[0])

    @call
    def get_batch(self, batch_id: int, *, conn: CallerConn = None) -> Plan[Batch | None]:
        """The batch with its counts, or None when unknown (or another tenant's)."""
        return one(Batch, (yield queries.GET_BATCH, {"batch_id": check_id(batch_id, "batch_id")}))

    @call
    def parent_results(self, job_id: int, *, conn: CallerConn = None) -> Plan[dict[str, Any] | None]:
        """The results of the job's parents, {"<parent id>": result} (None until a parent completes);
        None for a job without parents, an unknown job or another tenant's."""
        rows = yield queries.PARENT_RESULTS, {"job_id": check_id(job_id)}
        results: dict[str, Any] | None = rows[0]["results"]
        return results

    @call
    def workflow_jobs(self, workflow_id: int, *, conn: CallerConn = None) -> Plan[list[JobInfo]]:
        """The jobs of a workflow (its id: its first job's), oldest first; those among the 1,000 ids
        from the workflow's on."""
        params = {"workflow_id": check_id(workflow_id, "workflow_id")}
        return [typed(JobInfo, r) for r in (yield queries.WORKFLOW_JOBS, params)]

    # --- schedules

    @call
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
        conn: CallerConn = None,
    ) -> Plan[Schedule]:
        """Create or replace a schedule; returns it as saved, with its next fire time. None for
        priority, catch_up, skip_overlap or time_zone: the SQL function's default (0, 1, False, UTC).
        `time_zone`: a pg_timezone_names name whose wall time the expression reads (InvalidInput
        naming time_zone otherwise)."""
        params = {
            "tenant_id": tenant_id, "name": name, "cron": cron, "queue": queue,
            "payload": _json(payload, "payload", "payload"), "priority": priority, "catch_up": catch_up,
            "skip_overlap": skip_overlap, "time_zone": time_zone,
        }  # fmt: skip
        # the put, then the row read back (psycopg hands each statement only the parameters it names)
        rows = yield [(queries.PUT_SCHEDULE, params), (queries.GET_SCHEDULE, params)]
        return saved(Schedule, rows, f"schedule {name}")

    @call
    def list_schedules(
        self, tenant_id: str | None = None, *, conn: CallerConn = None
    ) -> Plan[list[Schedule]]:
        """The schedules of a tenant (None: of every tenant the caller acts for)."""
        return [typed(Schedule, r) for r in (yield queries.LIST_SCHEDULES, {"tenant_id": tenant_id})]

    @call
    def get_schedule(self, tenant_id: str, name: str, *, conn: CallerConn = None) -> Plan[Schedule | None]:
        return one(Schedule, (yield queries.GET_SCHEDULE, {"tenant_id": tenant_id, "name": name}))

    @call
    def drop_schedule(self, tenant_id: str, name: str, *, conn: CallerConn = None) -> Plan[bool]:
        """Remove a schedule; False when there was none (jobs it enqueued stay)."""
        return bool((yield queries.DROP_SCHEDULE, {"tenant_id": tenant_id, "name": name})[0]["dropped"])

    @call
    def pause_schedule(self, tenant_id: str, name: str, *, conn: CallerConn = None) -> Plan[bool]:
        """Stop a schedule firing; False when it was paused already. Unknown schedule: NotFound."""
        return bool((yield queries.PAUSE_SCHEDULE, {"tenant_id": tenant_id, "name": name})[0]["changed"])

    @call
    def resume_schedule(self, tenant_id: str, name: str, *, conn: CallerConn = None) -> Plan[bool]:
        """Let a paused schedule fire again from its next fire time after now (the runs missed while it
        was paused are skipped); False when it was not paused."""
        return bool((yield queries.RESUME_SCHEDULE, {"tenant_id": tenant_id, "name": name})[0]["changed"])

    @call
    def run_schedule(self, tenant_id: str, name: str, *, conn: CallerConn = None) -> Plan[int]:
        """Submit one run of the schedule now (paused or not); returns the new job's id."""
        return int((yield queries.RUN_SCHEDULE, {"tenant_id": tenant_id, "name": name})[0]["job_id"])

    @call
    def schedule_runs(
        self,
        tenant_id: str,
        name: str,
        *,
        before_id: int | None = None,
        max_rows: int = 100,
        conn: CallerConn = None,
    ) -> Plan[list[ScheduleRun]]:
        """A schedule's runs (the jobs it enqueued, with their fire times), newest first; the next
        page: `before_id` = the last job_id of this one. Also after the schedule was dropped."""
        params = {"tenant_id": tenant_id, "name": name, "before_id": before_id, "max_rows": max_rows}
        return [typed(ScheduleRun, r) for r in (yield queries.SCHEDULE_RUNS, params)]

    @call
    def next_fire_times(
        self, cron: str, count: int = 5, *, time_zone: str | None = "UTC", conn: CallerConn = None
    ) -> Plan[list[datetime]]:
        """The next `count` fire times of a cron expression after now, read in `time_zone`, as
        jobctl.cron_next computes them."""
        return [
            r["at"]
            for r in (yield queries.NEXT_FIRE_TIMES, {"cron": cron, "count": count, "time_zone": time_zone})
        ]

    # --- tenants

    @call
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
        conn: CallerConn = None,
    ) -> Plan[Tenant]:
        """Create or replace a tenant's settings: every one is set, those left out to their defaults."""
        params = {
            "tenant_id": tenant_id, "weight": weight, "max_pending": max_pending, "max_running": max_running,
            "submit_rate": submit_rate, "submit_burst": submit_burst, "claim_rate": claim_rate,
            "claim_burst": claim_burst, "encrypt_payloads": encrypt_payloads,
        }  # fmt: skip
        rows = yield [(queries.PUT_TENANT, params), (queries.GET_TENANT, params)]
        return saved(Tenant, rows, f"tenant {tenant_id}")

    @call
    def list_tenants(self, *, conn: CallerConn = None) -> Plan[list[Tenant]]:
        return [typed(Tenant, r) for r in (yield queries.LIST_TENANTS, {})]

    @call
    def get_tenant(self, tenant_id: str, *, conn: CallerConn = None) -> Plan[Tenant | None]:
        return one(Tenant, (yield queries.GET_TENANT, {"tenant_id": tenant_id}))

    @call
    def pause_tenant(self, tenant_id: str, *, conn: CallerConn = None) -> Plan[bool]:
        """Stop claims of the tenant's jobs; False when it was paused already. Unknown tenant: NotFound."""
        return bool((yield queries.PAUSE_TENANT, {"tenant_id": tenant_id, "paused": True})[0]["changed"])

    @call
    def resume_tenant(self, tenant_id: str, *, conn: CallerConn = None) -> Plan[bool]:
        """Let its jobs be claimed again; False when it was not paused."""
        return bool((yield queries.PAUSE_TENANT, {"tenant_id": tenant_id, "paused": False})[0]["changed"])

    # --- queues (shared by every tenant: administrators only)

    @call
    def put_queue(
        self,
        queue: str,
        *,
        max_running: int | None = None,
        claim_rate: float | Decimal | None = None,
        claim_burst: int | None = None,
        paused: bool = False,
        conn: CallerConn = None,
    ) -> Plan[Queue]:
        """Create or replace a queue's settings (left out: no limit, not paused); returns it as saved."""
        params = {
            "queue": queue, "max_running": max_running, "claim_rate": claim_rate, "claim_burst": claim_burst,
            "paused": paused,
        }  # fmt: skip
        rows = yield [(queries.PUT_QUEUE, params), (queries.GET_QUEUE, params)]
        return saved(Queue, rows, f"queue {queue}")

    @call
    def list_queues(self, *, conn: CallerConn = None) -> Plan[list[Queue]]:
        """The queues with settings, or with jobs due or running, by name."""
        return [typed(Queue, r) for r in (yield queries.LIST_QUEUES, {})]

    @call
    def get_queue(self, queue: str, *, conn: CallerConn = None) -> Plan[Queue | None]:
        return one(Queue, (yield queries.GET_QUEUE, {"queue": queue}))

    @call
    def pause_queue(self, queue: str, *, conn: CallerConn = None) -> Plan[bool]:
        """Stop claims from the queue for every tenant; False when it was paused already."""
        return bool((yield queries.PAUSE_QUEUE, {"queue": queue, "paused": True})[0]["changed"])

    @call
    def resume_queue(self, queue: str, *, conn: CallerConn = None) -> Plan[bool]:
        """Let its jobs be claimed again; False when it was not paused."""
        return bool((yield queries.PAUSE_QUEUE, {"queue": queue, "paused": False})[0]["changed"])

    @call
    def queue_overview(
        self,
        after: str | None = None,
        max_rows: int = 100,
        window: timedelta | float = 300,
        *,
        conn: CallerConn = None,
    ) -> Plan[list[QueueRow]]:
        """A page of queues by name after `after`: settings and jobs summed over the tenants."""
        params = {"after": after, "max_rows": max_rows, "window": _seconds(window)}
        return [typed(QueueRow, r) for r in (yield queries.QUEUE_OVERVIEW, params)]

    # --- concurrency keys

    @call
    def put_concurrency_limit(
        self,
        tenant_id: str,
        concurrency_key: str | None,
        max_running: int | None,
        *,
        conn: CallerConn = None,
    ) -> Plan[None]:
        """At most `max_running` jobs of the key run at once (key None: the tenant's default for keys
        without a limit of their own; max_running None: remove the limit)."""
        yield queries.PUT_CONCURRENCY_LIMIT, {
            "tenant_id": tenant_id, "concurrency_key": concurrency_key, "max_running": max_running
        }  # fmt: skip

    @call
    def list_concurrency_limits(
        self, tenant_id: str, *, conn: CallerConn = None
    ) -> Plan[list[ConcurrencyLimit]]:
        return [
            typed(ConcurrencyLimit, r)
            for r in (yield queries.LIST_CONCURRENCY_LIMITS, {"tenant_id": tenant_id})
        ]

    # --- API tokens and tenant grants

    @call
    def create_api_token(
        self,
        tenant_id: str | None,
        scopes: Iterable[str],
        label: str | None = None,
        *,
        conn: CallerConn = None,
    ) -> Plan[str]:
        """A new token (tenant_id None: an admin token), `jct_<id>_<secret>`: the only time it is shown."""
        params = {"tenant_id": tenant_id, "scopes": list(scopes), "label": label}
        return str((yield queries.CREATE_API_TOKEN, params)[0]["token"])

    @call
    def revoke_api_token(self, token_id: int, *, conn: CallerConn = None) -> Plan[bool]:
        """False when there is no active token with this id."""
        rows = yield queries.REVOKE_API_TOKEN, {"token_id": check_id(token_id, "token_id")}
        return bool(rows[0]["revoked"])

    @call
    def list_api_tokens(
        self, tenant_id: str | None = None, *, conn: CallerConn = None
    ) -> Plan[list[ApiToken]]:
        """The tokens (of one tenant, or all), revoked ones included."""
        return [typed(ApiToken, r) for r in (yield queries.LIST_API_TOKENS, {"tenant_id": tenant_id})]

    @call
    def grant_tenant(self, role: str, tenant_id: str | None = None, *, conn: CallerConn = None) -> Plan[bool]:
        """Let a role act for a tenant (None: for every tenant); False when it already did."""
        return bool((yield queries.GRANT_TENANT, {"role": role, "tenant_id": tenant_id})[0]["granted"])

    @call
    def revoke_tenant(
        self, role: str, tenant_id: str | None = None, *, conn: CallerConn = None
    ) -> Plan[bool]:
        """Take the grant back; False when there was none."""
        return bool((yield queries.REVOKE_TENANT, {"role": role, "tenant_id": tenant_id})[0]["revoked"])

    @call
    def list_tenant_grants(
        self, tenant_id: str | None = None, *, conn: CallerConn = None
    ) -> Plan[list[TenantGrant]]:
        """The roles acting for the caller's tenants (tenant_id: for that one only, every-tenant grants
        left out)."""
        return [typed(TenantGrant, r) for r in (yield queries.LIST_TENANT_GRANTS, {"tenant_id": tenant_id})]

    @call
    def caller_access(self, *, conn: CallerConn = None) -> Plan[frozenset[str]]:
        """The areas (jobs, queues, tenants, schedules, workers, audit) the caller may see, as the
        database answers it (jobctl.caller_access: the areas' own checks, shared ones for every-tenant
        callers only)."""
        return frozenset(r["area"] for r in (yield queries.CALLER_ACCESS, {}) if r["allowed"])

    @call
    def job_actions(self, state: str, *, conn: CallerConn = None) -> Plan[frozenset[str]]:
        """What a job in `state` allows of retry, cancel and delete, as the database answers it
        (jobctl.job_actions: the states those actions take)."""
        return frozenset((yield queries.JOB_ACTIONS, {"state": state})[0]["actions"])

    # --- figures and health

    @call
    def stats(
        self, tenant_id: str | None = None, queue: str | None = None, *, conn: CallerConn = None
    ) -> Plan[list[Stats]]:
        """Jobs per tenant, queue and state (None: every tenant the caller acts for, every queue)."""
        return [typed(Stats, r) for r in (yield queries.STATS, {"tenant_id": tenant_id, "queue": queue})]

    @call
    def claim_metrics(
        self,
        window: timedelta | float = 60,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: CallerConn = None,
    ) -> Plan[list[ClaimMetrics]]:
        """Claims and waits per tenant and queue over the last `window` (a timedelta, or seconds)."""
        params = {"window": _seconds(window), "tenant_id": tenant_id, "queue": queue}
        return [typed(ClaimMetrics, r) for r in (yield queries.CLAIM_METRICS, params)]

    @call
    def health_checks(self, *, conn: CallerConn = None) -> Plan[list[HealthCheck]]:
        return [typed(HealthCheck, r) for r in (yield queries.HEALTH_CHECKS, {})]

    # --- workers and the audit log

    @call
    def worker_beat(
        self,
        worker_id: str,
        host: str,
        pid: int,
        queues: Sequence[str] | None,
        concurrency: int,
        in_flight: int,
        *,
        conn: CallerConn = None,
    ) -> Plan[None]:
        """Report a worker to the registry (queues None: all); a worker calls it every few seconds."""
        yield queries.WORKER_BEAT, {
            "worker_id": worker_id, "host": host, "pid": pid, "concurrency": concurrency,
            "queues": list(queues) if queues is not None else None, "in_flight": in_flight,
        }  # fmt: skip

    @call
    def worker_gone(self, worker_id: str, *, conn: CallerConn = None) -> Plan[None]:
        """Take a worker out of the registry (a clean stop)."""
        yield queries.WORKER_GONE, {"worker_id": worker_id}

    @call
    def list_workers(self, stale: timedelta | float = 60, *, conn: CallerConn = None) -> Plan[list[Worker]]:
        """The registered workers; `alive`: seen within `stale` (a timedelta, or seconds; 1 s to 1 h)."""
        return [typed(Worker, r) for r in (yield queries.LIST_WORKERS, {"stale": _seconds(stale)})]

    @call
    def list_audit(
        self,
        tenant_id: str | None = None,
        *,
        before_id: int | None = None,
        max_count: int = 100,
        conn: CallerConn = None,
    ) -> Plan[list[AuditEntry]]:
        """Audit entries of the caller's tenants (or one), newest first; the next page: `before_id` = the
        last audit_id of this one. max_count 1..1000."""
        params = {
            "tenant_id": tenant_id,
            "before_id": _before(before_id, "before_id"),
            "max_count": max_count,
        }
        return [typed(AuditEntry, r) for r in (yield queries.LIST_AUDIT, params)]

    @call
    def now(self, *, conn: CallerConn = None) -> Plan[datetime]:
        """The database clock (the transaction's start on `conn`), which every age is measured by."""
        now: datetime = (yield queries.NOW, {})[0]["now"]
        return now

    # --- bulk actions and the dashboard's figures

    @call
    def count_jobs(
        self,
        job_filter: Mapping[str, Any],
        action: str | None = None,
        max_count: int = 10000,
        *,
        conn: CallerConn = None,
    ) -> Plan[JobCount]:
        """How many jobs of the caller's tenants match a bulk filter (action 'retry' or 'cancel': only
        those it would act on), counted up to max_count."""
        params = {"filter": _filter_json(job_filter), "action": action, "max_count": max_count}
        return typed(JobCount, (yield queries.COUNT_JOBS, params)[0])

    @call
    def count_job_states(
        self, job_filter: Mapping[str, Any], max_count: int = 10000, *, conn: CallerConn = None
    ) -> Plan[StateCounts]:
        """The jobs a bulk filter matches by state, counted up to max_count (the dashboard's chips of a
        filter the counters cannot answer)."""
        params = {"filter": _filter_json(job_filter), "max_count": max_count}
        return typed(StateCounts, (yield queries.COUNT_JOB_STATES, params)[0])

    @call
    def find_jobs(
        self,
        job_filter: Mapping[str, Any],
        before_id: int | None = None,
        max_rows: int = 50,
        *,
        conn: CallerConn = None,
    ) -> Plan[list[JobInfo]]:
        """A page of the jobs a bulk filter matches, hot and archived, newest first; the next page:
        `before_id` = the last job_id of this one."""
        params = {
            "filter": _filter_json(job_filter),
            "before_id": _before(before_id, "before_id"),
            "max_rows": max_rows,
        }
        return [typed(JobInfo, r) for r in (yield queries.FIND_JOBS, params)]

    @call
    def retry_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: CallerConn = None,
    ) -> Plan[BulkBatch]:
        """Retry one batch of the jobs a filter matches; loop on `last_id` until `done`."""
        return (yield from self._bulk(queries.RETRY_JOBS, job_filter, max_jobs, after_id))

    @call
    def cancel_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: CallerConn = None,
    ) -> Plan[BulkBatch]:
        """Cancel one batch of the jobs a filter matches; loop on `last_id` until `done`."""
        return (yield from self._bulk(queries.CANCEL_JOBS, job_filter, max_jobs, after_id))

    @call
    def delete_jobs(
        self,
        job_filter: Mapping[str, Any],
        max_jobs: int = 1000,
        after_id: int | None = None,
        *,
        conn: CallerConn = None,
    ) -> Plan[BulkBatch]:
        """Delete one batch of the finished (completed, dead, cancelled) jobs a filter matches, with
        their history; loop on `last_id` until `done`."""
        return (yield from self._bulk(queries.DELETE_JOBS, job_filter, max_jobs, after_id))

    def _bulk(
        self, sql: str, job_filter: Mapping[str, Any], max_jobs: int, after_id: int | None
    ) -> Plan[BulkBatch]:
        params = {
            "filter": _filter_json(job_filter),
            "max_jobs": max_jobs,
            "after_id": _before(after_id, "after_id"),
        }
        return typed(BulkBatch, (yield sql, params)[0])

    @call
    def job_overview(
        self,
        window: timedelta | float = 300,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: CallerConn = None,
    ) -> Plan[list[JobOverview]]:
        """Each tenant's queue from the counters: gauges, oldest due job, rates over `window`."""
        params = {"window": _seconds(window), "tenant_id": tenant_id, "queue": queue}
        return [typed(JobOverview, r) for r in (yield queries.JOB_OVERVIEW, params)]

    @call
    def minute_rates(
        self,
        since: datetime,
        tenant_id: str | None = None,
        queue: str | None = None,
        *,
        conn: CallerConn = None,
    ) -> Plan[list[MinuteRates]]:
        """job_rates per minute since `since`, summed over the tenants and queues asked for."""
        params = {"since": since, "tenant_id": tenant_id, "queue": queue}
        return [typed(MinuteRates, r) for r in (yield queries.MINUTE_RATES, params)]

    @call
    def fairness(self, window: timedelta | float = 300, *, conn: CallerConn = None) -> Plan[list[Fairness]]:
        """Each tenant's share of the claims over `window` against its weight's share."""
        return [typed(Fairness, r) for r in (yield queries.FAIRNESS, {"window": _seconds(window)})]


# --- the two clients: how a plan's requests run


def _connect_kwargs(dsn: str) -> dict[str, Any]:
    return db.connection_kwargs(dsn, "jobctl", autocommit=True)


def _statements(request: Statement | list[Statement]) -> list[Statement]:
    return request if isinstance(request, list) else [request]


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


class Client(Calls):
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

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's own connection and the waits' listener (a later call opens them again)."""
        self._listener.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def wait(self, job_id: int, timeout: timedelta | float = 60.0, *, hint: bool = True) -> JobInfo:
        """The job once it is finished (completed, dead or cancelled), waiting up to `timeout` (seconds,
        or a timedelta) for it: woken by its completion hint on the client's one listening connection
        (its waits share it), and polling as well (jobctl.waiting; hint=False: polling only). Raises
        `WaitTimeout` (a TimeoutError; `.job` is the job as last read) when the time runs out,
        NotFound for an unknown id or another tenant's job."""
        return waiting.wait(self, check_id(job_id), waiting.seconds(timeout), hint)

    def _call(self, plan: Callable[..., Plan[R]], *args: Any, **kwargs: Any) -> R:
        requests, conn = plan(self, *args, **kwargs), kwargs.get("conn")
        try:
            request = next(requests)
            while True:
                try:
                    done = request() if callable(request) else self._run(_statements(request), conn)
                except BaseException as e:  # to the plan, whose `with` blocks see it
                    request = requests.throw(e)
                else:
                    request = requests.send(done)
        except StopIteration as stop:
            result: R = stop.value
            return result

    def _run(self, statements: list[Statement], conn: Conn | None) -> list[Row]:
        """The rows of the last statement. On the client's own connection several statements run in
        one transaction; on the caller's, in the caller's transaction, as they come."""
        try:
            if conn is not None:
                return [_execute(conn, s) for s in statements][-1]
            with self._lock:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self.dsn, **_connect_kwargs(self.dsn))
                own = self._conn
                if len(statements) == 1:
                    return _execute(own, statements[0])
                with own.transaction():
                    return [_execute(own, s) for s in statements][-1]
        except psycopg.Error as e:
            raise errors.from_db(e) or e from e  # a known SQLSTATE as its jobctl.errors class


class AsyncClient(Calls):
    """Client for asyncio: the same calls, awaited; `conn=` takes a psycopg AsyncConnection. Its own
    connection serves one call at a time (for calls in parallel, pass connections of your own pool)."""

    def __init__(self, dsn: str | None = None, *, listen_dsn: str | None = None) -> None:
        self.dsn = dsn if dsn is not None else db.dsn()
        self.listen_dsn = listen_dsn  # as Client's
        self._conn: AsyncConn | None = None
        self._lock = asyncio.Lock()
        self._listener = waiting.AsyncListener()  # the waits' one LISTEN connection, open while any runs

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._listener.close()
        async with self._lock:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None

    async def wait(self, job_id: int, timeout: timedelta | float = 60.0, *, hint: bool = True) -> JobInfo:
        """Client.wait, awaited."""
        return await waiting.wait_async(self, check_id(job_id), waiting.seconds(timeout), hint)

    async def _call(self, plan: Callable[..., Plan[R]], *args: Any, **kwargs: Any) -> R:
        requests, conn = plan(self, *args, **kwargs), kwargs.get("conn")
        try:
            request = next(requests)
            while True:
                try:
                    if callable(request):
                        done = await asyncio.to_thread(request)
                    else:
                        done = await self._run(_statements(request), conn)
                except BaseException as e:  # to the plan, whose `with` blocks see it
                    request = requests.throw(e)
                else:
                    request = requests.send(done)
        except StopIteration as stop:
            result: R = stop.value
            return result

    async def _run(self, statements: list[Statement], conn: AsyncConn | None) -> list[Row]:
        try:
            if conn is not None:
                return [await _execute_async(conn, s) for s in statements][-1]
            async with self._lock:
                if self._conn is None or self._conn.closed:
                    self._conn = await psycopg.AsyncConnection.connect(self.dsn, **_connect_kwargs(self.dsn))
                own = self._conn
                if len(statements) == 1:
                    return await _execute_async(own, statements[0])
                async with own.transaction():
                    return [await _execute_async(own, s) for s in statements][-1]
        except psycopg.Error as e:
            raise errors.from_db(e) or e from e  # a known SQLSTATE as its jobctl.errors class
