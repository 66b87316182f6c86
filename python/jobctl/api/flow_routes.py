"""The endpoints of workflows, batches and durable jobs: submit a workflow (`jobctl.submit_workflow`),
submit a batch with its callbacks (`jobctl.submit_batch`), read a batch (`jobctl.get_batch`), emit an
event (`jobctl.emit_event`), read a job's saved steps (`jobctl.job_steps`). Each is
what routes.py's endpoints are: the token check, one call of the app's AsyncClient on the request's
connection, the SQL's rules and errors (a job of another tenant in depends_on: 422 naming
`jobs[i].depends_on`). Dependencies of one job are `depends_on` of `POST /api/v1/jobs`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request

from jobctl import errors
from jobctl.api import audit
from jobctl.api.auth import Caller, caller_for
from jobctl.api.models import (
    JOB_ID_MAX,
    Batch,
    BatchIn,
    BatchOut,
    BatchSubmitted,
    EventIn,
    EventOut,
    JobSubmit,
    Step,
    StepList,
    WorkflowIn,
    WorkflowJob,
    WorkflowOut,
    converted,
    shown,
)
from jobctl.api.names import known_query
from jobctl.api.routes import JobId, Submitter, call, error_responses, found

router = APIRouter(prefix="/api/v1", dependencies=[known_query], tags=["jobs"])

SUBMIT_ERRORS = error_responses(
    400, 413, 422, 429, notes={403: "The token lacks jobs:submit, or a job names another tenant."}
)
BatchId = Annotated[int, Path(alias="id", ge=1, le=JOB_ID_MAX, description="The batch id.")]


async def _named(op: Any, where: str = "jobs") -> Any:
    """routes.call, with the field of an error about one job named as the request holds it: the SQL
    names it jobs[3].priority, which jobctl.errors turns into `priority` with index 3."""
    try:
        return await call(op)
    except errors.JobctlError as e:
        if e.index is None or e.field is None or e.field.startswith(where):
            raise
        field, text = f"{where}[{e.index}].{e.field}", str(e)
        message = f"{where}[{e.index}].{text}" if text.startswith(e.field) else f"{field}: {text}"
        raise type(e)(
            message, sqlstate=e.sqlstate, field=field, detail=e.detail, hint=e.hint, index=e.index
        ) from e.__cause__


def _spec(caller: Caller, job: JobSubmit, field: str, tenant: str | None = None) -> dict[str, Any]:
    """A job of the request as submit_jobs takes it: only the fields sent, the tenant the token's (or
    the one it names, for an admin token)."""
    spec = job.model_dump(mode="json", exclude_unset=True)
    if tenant is not None and job.tenant_id is None:
        return spec  # a callback: the SQL gives it its members' tenant
    return spec | {"tenant_id": caller.tenant_for(job.tenant_id, field)}


@router.post(
    "/workflows",
    status_code=201,
    summary="Submit a workflow",
    response_description="The workflow's id and its jobs' ids, in the order given.",
    responses=SUBMIT_ERRORS,
)
async def submit_workflow(request: Request, body: WorkflowIn, caller: Submitter) -> WorkflowOut:
    """Submit jobs that depend on each other, all or nothing (scope `jobs:submit`). Each has a `name`;
    its `depends_on` names jobs listed before it (or gives ids of the tenant's existing jobs). A job
    with parents is `waiting` until the last completes, then `pending`; a dead or cancelled parent
    cancels it (`on_parent_failure` `cancel`, the default) or leaves it waiting (`wait`)."""
    act = audit.begin(request, caller, "submit_workflow")
    specs = [_spec(caller, j, f"jobs[{i}].tenant_id") for i, j in enumerate(body.jobs)]
    act.tenant = specs[0]["tenant_id"] if specs else caller.tenant_id
    flow = await _named(
        caller.client.submit_workflow(specs, on_parent_failure=body.on_parent_failure, conn=caller.conn)
    )
    act.job_id = flow.workflow_id
    act.record(201)
    return WorkflowOut(
        workflow_id=flow.workflow_id,
        jobs=[WorkflowJob(name=n, job_id=i) for n, i in flow.job_ids.items()],
    )


@router.post(
    "/batches",
    status_code=201,
    summary="Submit a batch",
    response_description="The batch's id, its members' ids in the order given, its callbacks' ids.",
    responses=SUBMIT_ERRORS,
)
async def submit_batch(request: Request, body: BatchIn, caller: Submitter) -> BatchSubmitted:
    """Submit one tenant's jobs as a batch with callbacks (scope `jobs:submit`): `on_finish` is
    enqueued once the last member ends, `on_success` then if all completed, `on_discard` then if any
    did not (at least one of them). A callback's tenant is its members'. Its handler reads the
    members' outcomes with `GET /api/v1/batches/{id}` (the job's `batch_id`)."""
    act = audit.begin(request, caller, "submit_batch")
    specs = [_spec(caller, j, f"jobs[{i}].tenant_id") for i, j in enumerate(body.jobs)]
    tenant = specs[0]["tenant_id"] if specs else caller.tenant_id
    act.tenant = tenant
    callbacks: dict[str, Any] = {
        name: None if job is None else _spec(caller, job, f"{name}.tenant_id", tenant)
        for name, job in (("on_finish", body.on_finish), ("on_success", body.on_success),
                          ("on_discard", body.on_discard))
    }  # fmt: skip
    made = await _named(caller.client.submit_batch(specs, **callbacks, conn=caller.conn))
    act.record(201)
    return shown(BatchSubmitted, made)


@router.get(
    "/batches/{id}",
    summary="Get a batch",
    responses=error_responses(
        404, 422, notes={404: "No such batch, or it belongs to another tenant.", 422: "The id is not valid."}
    ),
)
async def get_batch(batch_id: BatchId, caller: Annotated[Caller, caller_for("jobs:read")]) -> BatchOut:
    """A batch (scope `jobs:read`): its size, its callbacks' ids, and `counts`: the members' outcomes
    once it ended (`finished_at` set), their current states before. Another tenant's answers 404."""
    row = await found(
        caller, caller.client.get_batch, {"batch_id": batch_id}, f"batch {batch_id}", "id", {"batch_id": "id"}
    )
    return BatchOut(batch=converted(Batch, row))


@router.post(
    "/events",
    summary="Emit an event",
    response_description="How many waiting jobs the event woke.",
    responses=error_responses(
        400, 413, 422, notes={403: "The token lacks events:emit, or tenant_id names another tenant."}
    ),
)
async def emit_event(
    request: Request, body: EventIn, caller: Annotated[Caller, caller_for("events:emit")]
) -> EventOut:
    """Emit the tenant's event (scope `events:emit`): every job waiting on it (`job.wait_for`) is due at
    once and reads `payload`. The first emit of an event wins: a repeat answers `{"woken": 0}` and changes
    nothing. Events are kept for the hot retention (7 days)."""
    act = audit.begin(request, caller, "emit_event")
    act.tenant = caller.tenant_for(body.tenant_id, "tenant_id")
    woken = await call(caller.client.emit_event(act.tenant, body.event, body.payload, conn=caller.conn))
    act.record(200)
    return EventOut(woken=woken)


@router.get(
    "/jobs/{id}/steps",
    summary="Get a job's steps",
    responses=error_responses(422, notes={422: "The id is not a positive integer."}),
)
async def job_steps(job_id: JobId, caller: Annotated[Caller, caller_for("jobs:read")]) -> StepList:
    """The steps a job saved and the outcomes of its event waits, in the order saved (scope `jobs:read`;
    docs/durable.md). Another tenant's job, an unknown one and one past the hot retention have none."""
    rows = await call(caller.client.job_steps(job_id, conn=caller.conn))
    return StepList(steps=[converted(Step, r) for r in rows])
