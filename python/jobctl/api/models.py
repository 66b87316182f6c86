"""The API's JSON shapes: request bodies (validated, unknown fields refused) and responses.

Defaults and limits that the SQL functions own (priority 0 and -100..100, max_attempts 3, the backoff
defaults, the 64 KiB payload limit, ...) are not repeated here: an absent field is simply not sent,
and the database answers for it. The bounds below are only those of the JSON types themselves.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    TypeAdapter,
    WithJsonSchema,
    field_validator,
)
from pydantic.dataclasses import dataclass

from jobctl import client
from jobctl.contract import STATES

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
INT4_MIN, INT4_MAX = -(2**31), 2**31 - 1
JOB_ID_MAX = 2**63 - 1


def _known_state(value: str) -> str:
    if value not in STATES:
        raise ValueError(f"unknown job state {value!r}")
    return value


# A job state: one of contract.STATES (the one list the CLI, the worker and the API share)
State = Annotated[
    str,
    AfterValidator(_known_state),
    WithJsonSchema({"type": "string", "enum": list(STATES), "title": "State"}),
]


# The tenant a request body names (submits and schedules)
TenantIn = Annotated[
    str | None,
    Field(
        description="The tenant. With a tenant token: may be omitted (the token's tenant) and must match it. "
        "With an admin token: required."
    ),
]


class JobSubmit(BaseModel):
    """One job to submit: the fields of `jobctl.submit_job`. Omitted fields take the database's defaults."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "queue": "emails",
                    "payload": {"to": "ada@example.com", "template": "welcome"},
                    "priority": 5,
                    "dedup_key": "welcome-ada",
                    "max_attempts": 5,
                    "backoff": {"strategy": "exponential", "base": "10 seconds", "max": "1 hour"},
                    "timeout": 60,
                }
            ]
        },
    )

    tenant_id: TenantIn = None
    queue: str = Field(description="The queue, 1-200 characters.")
    payload: JsonValue = Field(description="Any JSON value (use {} for none); at most 64 KiB as text.")
    priority: Annotated[StrictInt | None, Field(ge=INT4_MIN, le=INT4_MAX)] = Field(
        default=None, description="Higher runs first; -100..100. Default 0."
    )
    run_at: AwareDatetime | None = Field(
        default=None,
        description="When the job becomes due: ISO 8601 with a time zone, e.g. 2026-12-01T09:30:00Z. "
        "Default: now.",
    )
    dedup_key: str | None = Field(
        default=None,
        description="At most one job per tenant and key while it is in hot storage (7 days): a repeat "
        'returns the first job with "duplicate": true and changes nothing.',
    )
    max_attempts: Annotated[StrictInt | None, Field(ge=INT4_MIN, le=INT4_MAX)] = Field(
        default=None, description="Runs allowed, the first included; 1..1000. Default 3."
    )
    backoff: dict[str, JsonValue] | None = Field(
        default=None,
        description='Delay between attempts: {"strategy": "exponential" | "linear" | "fixed", '
        '"base": "<interval>", "max": "<interval>", "jitter": true | false}. Defaults: exponential, '
        "5 seconds, 1 hour, jitter on.",
    )
    timeout: Annotated[float | None, Field(strict=True, allow_inf_nan=False)] = Field(
        default=None, description="Seconds a run may take, more than 0 and at most 30 days. Default: none."
    )
    concurrency_key: str | None = Field(
        default=None,
        description="1-200 characters: at most the key's limit of its jobs run at once "
        "(jobctl.put_concurrency_limit; limit 1: one at a time), admitted in run_at order. Default: none.",
    )
    traceparent: str | None = Field(
        default=None,
        description="The W3C trace context the job belongs to, `00-<32 hex trace id>-<16 hex span id>-<2 hex "
        "flags>` (e.g. the `traceparent` header of the request that led to this submit). The worker's run "
        "span continues it. With OpenTelemetry in the API, the API's `jobctl submit` span is its child and "
        "the job stores that span's context (same trace). Default: the API's submit span, if any.",
    )
    # workflows
    depends_on: list[Annotated[StrictInt, Field(ge=1, le=JOB_ID_MAX)]] | None = Field(
        default=None,
        description="Ids of the tenant's jobs (at most 10,000) that must complete first: the job is "
        "`waiting` until the last of them completes, then `pending`. Default: none.",
    )
    on_parent_failure: str | None = Field(
        default=None,
        description="What a dead or cancelled parent does to the job: `cancel` (default; and so on "
        "downstream) or `wait` (it waits on; a retried parent that completes releases it).",
    )
    dedup_states: list[str] | None = Field(
        default=None,
        description='The states in which the dedup_key\'s newest job holds it, e.g. ["pending", "running"] '
        "(another job once it has run). Default: any state.",
    )
    dedup_period: Annotated[float, Field(strict=True, allow_inf_nan=False)] | str | None = Field(
        default=None,
        description="The key holds only within the current period (seconds or an interval such as "
        '"1 hour"; 1 s to 366 days, aligned to 2000-01-01): one job per key per period.',
    )
    dedup_mode: str | None = Field(
        default=None,
        description="`keep` (default: the holder as it is), `replace` (debounce: a pending holder takes this "
        "payload and run_at) or `preserve_run_at` (this payload only).",
    )

    @field_validator("run_at", mode="before")
    @classmethod
    def _run_at_is_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise ValueError("must be an ISO 8601 string such as 2026-12-01T09:30:00Z")
        return value


@dataclass(frozen=True)
class Job(client.JobInfo):
    """A job as `jobctl.get_job` shows it."""

    state: State
    payload: JsonValue
    attempt: Annotated[int, Field(description="Runs started so far.")]
    result: Annotated[JsonValue, Field(description="What the worker returned on completion, or null.")]
    lease_expires_at: Annotated[
        datetime | None, Field(description="While running: when the worker's lease ends.")
    ]
    timeout: Annotated[float | None, Field(description="Seconds a run may take, or null.")]  # type: ignore[assignment]
    backoff: Annotated[
        dict[str, JsonValue] | None, Field(description="The backoff in force (null: the defaults).")
    ]
    concurrency_key: str | None = Field(default=None, description="The job's concurrency key, or null.")
    traceparent: str | None = Field(
        default=None, description="The W3C trace context stored at submit (tracing), or null."
    )
    depends_on: list[int] | None = Field(default=None, description="The jobs it depends on, or null.")
    workflow_id: int | None = Field(
        default=None, description="Its workflow (the id of the workflow's first job), or null."
    )
    batch_id: int | None = Field(default=None, description="Its batch (a member's or a callback's), or null.")
    parent_results: JsonValue = Field(
        default=None,
        description='The results of its parents, {"<parent id>": result} (null until a parent completes); '
        "null for a job without parents. Shown by `GET /jobs/{id}` (and a submit's answer); null in lists.",
    )
    schedule_name: str | None = Field(
        default=None, description="The schedule whose run this job is (docs/schedules.md), or null."
    )
    fire_time: datetime | None = Field(
        default=None,
        description="The schedule's fire time the run stands for (a run by hand: when it was run), or null.",
    )
    progress: JsonValue = Field(
        default=None,
        description="While running: the latest progress its worker reported (any JSON, at most 2,000 bytes; "
        'e.g. {"done": 40, "total": 100}); after the attempt ends, the last one it reported; or null.',
    )
    last_traceback: str | None = Field(
        default=None,
        description="The traceback of the failure last_error describes (the worker's: innermost frame last; "
        "its last 8,192 characters, '...' marking a cut), or null (none: a timeout's, a lease's expiry). "
        "Shown by `GET /jobs/{id}`; null in lists.",
    )
    workflow_name: str | None = Field(
        default=None, description="The name the job was given in its workflow (submit_workflow), or null."
    )
    parked: Literal["sleep", "event", "job"] | None = Field(
        default=None,
        description="A pending or waiting job that gave up its lease (docs/durable.md): asleep until "
        "run_at (`sleep`), waiting for its tenant's event `awaiting` until run_at, its timeout (`event`), "
        "or waiting for the child job `awaiting` (`job`); null otherwise.",
    )
    awaiting: str | None = Field(
        default=None, description="What a parked job waits for: the event's name or the child's id; or null."
    )


_adapters: dict[type[Any], TypeAdapter[Any]] = {}


def validated(cls: type[T], fields: dict[str, Any]) -> T:
    """cls, a model here, from a dict of its fields, through a TypeAdapter: half the cost of
    `cls(**fields)`, which runs the dataclass's Python __init__ (1,000-job pages)."""
    if cls not in _adapters:
        _adapters[cls] = TypeAdapter(cls)
    model: T = _adapters[cls].validate_python(fields)
    return model


def shown(cls: type[T], row: DataclassInstance) -> T:
    """A row of the client's as cls, its model here."""
    return validated(cls, fields_of(row))


def fields_of(row: DataclassInstance) -> dict[str, Any]:
    """A row of the client's (a dataclass) as a dict of its fields, not copied (dataclasses.asdict
    would copy every payload)."""
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def converted(cls: type[T], row: DataclassInstance) -> T:
    """A row of the client's as cls, as a job (`jobctl.job_info`) and a batch are shown: times in UTC,
    intervals (a job's timeout) in seconds."""
    return validated(cls, {k: _plain(v) for k, v in fields_of(row).items()})


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, client.RawJson):  # decoded here as the API always has (Python's own bound)
        return json.loads(value.text)
    return value


class JobOut(BaseModel):
    job: Job


class JobRef(BaseModel):
    """A job's id, tenant and state, and nothing else: what a duplicate submit shows a token that lacks
    jobs:read (the dedup key alone must not reveal a job's payload, result or error)."""

    model_config = ConfigDict(extra="forbid")

    job_id: int
    tenant_id: str
    state: State

    @classmethod
    def of(cls, job: Job) -> JobRef:
        return cls(job_id=job.job_id, tenant_id=job.tenant_id, state=job.state)


class Submitted(BaseModel):
    job: Job | JobRef = Field(
        description="The job in full (`Job`); but for a duplicate when the token lacks jobs:read, only its "
        "job_id, tenant_id and state (`JobRef`)."
    )
    duplicate: bool = Field(description="true: a job with this dedup_key already existed; nothing changed.")


class JobPage(BaseModel):
    jobs: list[Job] = Field(description="Newest first (job_id descending).")
    next: int | None = Field(description="Pass as `before` for the next page; null on the last page.")


class FieldError(BaseModel):
    field: str | None
    reason: str


class ErrorBody(BaseModel):
    """The body of every 4xx and 5xx answer."""

    error: str = Field(description="A short code: invalid_request, not_found, illegal_transition, ...")
    message: str = Field(description="One readable line.")
    field: str | None = Field(
        description="The request field at fault, as the request named it (query or path parameter, JSON key)."
    )
    sqlstate: str | None = Field(
        description="The database's SQLSTATE (docs/errors.md); for a request refused before the database, "
        "the one it gives the same fault; null where no database rule is behind the error."
    )
    errors: list[FieldError] | None = Field(
        default=None, description="Request validation only: every field at fault, with the reason."
    )


class Health(BaseModel):
    status: Literal["ok", "unavailable"]


class ScheduleIn(BaseModel):
    """A schedule to create or replace: the fields of `jobctl.put_schedule` (its name is in the path)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"cron": "0 2 * * *", "queue": "reports", "payload": {"kind": "nightly"}, "catch_up": 3}
            ]
        },
    )

    tenant_id: TenantIn = None
    cron: str = Field(
        description="5 fields (minute hour day-of-month month day-of-week) or @every <interval>, @hourly, "
        "@daily, @weekly, @monthly, @yearly; read in the wall time of time_zone."
    )
    queue: str = Field(description="The queue each run goes to, 1-200 characters.")
    payload: JsonValue = Field(description="Each run's payload: any JSON value, at most 64 KiB as text.")
    priority: Annotated[StrictInt | None, Field(ge=INT4_MIN, le=INT4_MAX)] = Field(
        default=None, description="Each run's priority, -100..100 (default 0)."
    )
    catch_up: Annotated[StrictInt | None, Field(ge=INT4_MIN, le=INT4_MAX)] = Field(
        default=None,
        description="After downtime, at most this many missed runs, the latest (1..1000, default 1).",
    )
    skip_overlap: bool | None = Field(
        default=None, description="Skip a run while the previous run is unfinished (default false)."
    )
    time_zone: str | None = Field(
        default=None,
        max_length=200,
        description="The time zone whose wall time cron reads: a name of pg_timezone_names such as "
        "Europe/Berlin (default UTC). Daylight saving time: a wall time the clocks skip fires when the gap "
        "ends, one they repeat fires once, unless the hour field is every hour (docs/schedules.md).",
    )


@dataclass(frozen=True)
class Schedule(client.Schedule):
    payload: JsonValue
    next_fire_at: Annotated[datetime, Field(description="The next fire time not yet enqueued.")]
    last_fire_at: Annotated[
        datetime | None, Field(description="The fire time of the latest run enqueued, or null.")
    ]
    last_job_id: Annotated[
        int | None, Field(description="The latest run's job (scheduled or run by hand), or null.")
    ]
    paused: bool = Field(
        default=False,
        description="true: it fires nothing until resumed; a resume starts it from the next fire time after "
        "now (missed runs are skipped).",
    )
    time_zone: str = Field(default="UTC", description="The time zone whose wall time cron reads.")


class ScheduleOut(BaseModel):
    schedule: Schedule


class ScheduleList(BaseModel):
    schedules: list[Schedule] = Field(description="Ordered by name.")


class Dropped(BaseModel):
    dropped: bool = Field(description="true: the schedule existed and is gone; runs already enqueued stay.")


class QueueIn(BaseModel):
    """A queue's settings: the fields of `jobctl.put_queue` (its name is in the path)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"max_running": 50, "claim_rate": 200, "claim_burst": 400}]},
    )

    max_running: Annotated[StrictInt | None, Field(ge=0, le=1_000_000)] = Field(
        default=None, description="Most jobs of the queue running at once, across tenants. Default: no limit."
    )
    claim_rate: Annotated[float | None, Field(gt=0, le=1_000_000, allow_inf_nan=False)] = Field(
        default=None, description="Claims a second from the queue (a token bucket). Default: no limit."
    )
    claim_burst: Annotated[StrictInt | None, Field(ge=1, le=1_000_000)] = Field(
        default=None, description="The bucket's size, with a claim_rate. Default: one second's worth."
    )
    paused: bool = Field(default=False, description="true: no claims from the queue until it is resumed.")


@dataclass(frozen=True)
class Queue(client.Queue):
    max_running: Annotated[int | None, Field(description="null: no limit.")]
    claim_rate: Annotated[float | None, Field(description="Claims a second, null: no limit.")]  # type: ignore[assignment]
    due: Annotated[int, Field(description="Jobs due now, waiting for a worker, across tenants.")]
    running: Annotated[int, Field(description="Jobs running now, across tenants.")]
    updated_at: Annotated[
        datetime | None, Field(description="When its settings last changed; null: it has none.")
    ]


class QueueOut(BaseModel):
    queue: Queue


class QueueList(BaseModel):
    queues: list[Queue] = Field(description="Ordered by name.")


class ScheduleRun(BaseModel):
    job_id: int = Field(description="The job the run submitted (due now).")
    schedule: Schedule = Field(description="The schedule, its last_job_id the new job.")


@dataclass(frozen=True)
class ScheduleRunJob(client.ScheduleRun):
    """A run of a schedule (`jobctl.schedule_runs`): the job and the fire time it stands for."""

    fire_time: Annotated[
        datetime | None, Field(description="The fire time (a run by hand: when it was run).")
    ]
    state: State


class ScheduleRunPage(BaseModel):
    runs: list[ScheduleRunJob] = Field(description="Newest first (job_id descending).")
    next: int | None = Field(description="Pass as `before` for the next page; null on the last page.")


# --- tenant administration, workers, the audit log, health (admin_routes)


@dataclass(frozen=True)
class Tenant(client.Tenant):
    """A tenant's settings (`jobctl.list_tenants`); null limits and rates: unlimited."""

    submit_rate: Annotated[float | None, Field(description="Submits a second, null: no limit.")]  # type: ignore[assignment]
    claim_rate: Annotated[float | None, Field(description="Claims a second, null: no limit.")]  # type: ignore[assignment]
    paused: Annotated[bool, Field(description="true: its jobs are not claimed (submits go on).")]


class TenantOut(BaseModel):
    tenant: Tenant


class TenantList(BaseModel):
    tenants: list[Tenant] = Field(description="The token's tenants (an admin token: all), ordered by id.")


@dataclass(frozen=True)
class ApiToken(client.ApiToken):
    """An API token as `jobctl.list_api_tokens` shows it: never the token itself (only its hash is kept)."""

    tenant_id: Annotated[str | None, Field(description="null: an admin token (every tenant).")]


class TokenList(BaseModel):
    tokens: list[ApiToken] = Field(description="Revoked ones included, ordered by token_id.")


@dataclass(frozen=True)
class TenantGrant(client.TenantGrant):
    role_name: Annotated[
        str, Field(description="A database role that acts for the tenant (jobctl.grant_tenant).")
    ]


class GrantList(BaseModel):
    grants: list[TenantGrant] = Field(description="Ordered by role name.")


@dataclass(frozen=True)
class Worker(client.Worker):
    """A worker as it last reported itself (`jobctl.worker_beat`)."""

    queues: Annotated[list[str] | None, Field(description="The queues it claims from; null: all.")]
    in_flight: Annotated[int, Field(description="Jobs it was running at its last beat.")]
    alive: Annotated[bool, Field(description="It beat within `stale` seconds.")]
    running: Annotated[int, Field(description="Leases it holds now.")]


class WorkerList(BaseModel):
    workers: list[Worker] = Field(description="Ordered by worker_id.")


@dataclass(frozen=True)
class AuditEntry(client.AuditEntry):
    actor: Annotated[str, Field(description="The database login that acted (for the API: its own login).")]
    token_id: Annotated[int | None, Field(description="The API token that acted, or null.")]
    tenant_id: Annotated[
        str | None, Field(description="null: no tenant (queues, admin tokens, every-tenant grants).")
    ]
    detail: JsonValue


class AuditPage(BaseModel):
    entries: list[AuditEntry] = Field(description="Newest first (audit_id descending).")
    next: int | None = Field(description="Pass as `before` for the next page; null on the last page.")


@dataclass(frozen=True)
class HealthCheck(client.HealthCheck):
    verdict: Literal["ok", "warn", "fail"]


class HealthChecks(BaseModel):
    verdict: Literal["ok", "warn", "fail"] = Field(description="The worst verdict of the checks.")
    checks: list[HealthCheck] = Field(description="What `jobctl doctor` reports, one row per check.")


# --- durable execution (flow_routes; docs/durable.md)


class EventIn(BaseModel):
    """An event of a tenant: the fields of `jobctl.emit_event`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"event": "order-1/approved", "payload": {"by": "ops"}}]},
    )
    tenant_id: str | None = Field(
        default=None, description="The tenant; default: the token's (an admin token must name one)."
    )
    event: str = Field(description="1-200 printable characters.")
    payload: JsonValue = Field(
        default=None, description="Any JSON value, at most 64 KiB as text; default null."
    )


class EventOut(BaseModel):
    woken: int = Field(
        description="The jobs waiting on the event that are due now; 0 for a repeat (the first emit wins)."
    )


@dataclass(frozen=True)
class Step(client.Step):
    """A step a job saved (`job.step`), or an await's outcome (step `event:<name>`)."""

    result: JsonValue
    saved_at: Annotated[datetime, Field(description="When it was saved.")]
    attempt: Annotated[int, Field(description="The attempt that saved it.")]


class StepList(BaseModel):
    steps: list[Step] = Field(description="In the order they were saved.")


# --- workflows and batches (flow_routes)


class WorkflowJobIn(JobSubmit):
    """A job of a workflow: a job's fields and a name; depends_on names jobs listed before it (or gives
    ids of existing jobs of the tenant)."""

    name: str = Field(description="1-200 characters, unique in the workflow: what depends_on refers to.")
    depends_on: list[Annotated[StrictInt, Field(ge=1, le=JOB_ID_MAX)] | str] | None = Field(  # type: ignore[assignment]
        default=None,
        description="Names of jobs listed before it, and/or ids of existing jobs of the tenant.",
    )


class WorkflowIn(BaseModel):
    """A workflow: the fields of `jobctl.submit_workflow`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "jobs": [
                        {"name": "extract", "queue": "etl", "payload": {"day": "2026-12-01"}},
                        {"name": "report", "queue": "etl", "payload": {}, "depends_on": ["extract"]},
                    ]
                }
            ]
        },
    )

    jobs: list[WorkflowJobIn] = Field(
        min_length=1, description="1 to 10,000 jobs, each after the jobs it depends on."
    )
    on_parent_failure: str | None = Field(
        default=None,
        description="The default of each job's own on_parent_failure: `cancel` (default) or `wait`.",
    )


class WorkflowJob(BaseModel):
    name: str
    job_id: int


class WorkflowOut(BaseModel):
    workflow_id: int = Field(description="The workflow's id: its first job's (each job's workflow_id).")
    jobs: list[WorkflowJob] = Field(description="Each job's id, in the order given.")


class BatchJobIn(JobSubmit):
    """A batch's member or callback: a job's fields (a batch's jobs take no dedup_key)."""


class BatchIn(BaseModel):
    """A batch: the fields of `jobctl.submit_batch` (at least one callback)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "jobs": [
                        {"queue": "thumbs", "payload": {"img": 1}},
                        {"queue": "thumbs", "payload": {"img": 2}},
                    ],
                    "on_finish": {"queue": "notify", "payload": {"album": 7}},
                }
            ]
        },
    )

    jobs: list[BatchJobIn] = Field(description="1 to 10,000 jobs of the token's tenant, without dedup_key.")
    on_finish: BatchJobIn | None = Field(
        default=None, description="Enqueued once the last member ends (completed, dead or cancelled)."
    )
    on_success: BatchJobIn | None = Field(
        default=None, description="Enqueued then if every member completed."
    )
    on_discard: BatchJobIn | None = Field(default=None, description="Enqueued then if any member did not.")


@dataclass(frozen=True)
class BatchSubmitted(client.BatchSubmitted):
    job_ids: Annotated[list[int], Field(description="The members' ids, in the order given.")]


@dataclass(frozen=True)
class Batch(client.Batch):
    """A batch as `jobctl.get_batch` shows it."""

    size: Annotated[int, Field(description="Its members.")]
    finished_at: Annotated[datetime | None, Field(description="When its last member ended, or null.")]
    counts: Annotated[
        dict[str, int] | None,
        Field(
            description='Once it ended, the members\' outcomes {"completed": n, "dead": n, "cancelled": n}; '
            "before, their current states."
        ),
    ]
    on_finish: Annotated[int | None, Field(description="The callbacks' job ids, or null.")]


class BatchOut(BaseModel):
    batch: Batch
