"""The schedule endpoints: one function each (put_schedule, list_schedules, drop_schedule,
pause_schedule, resume_schedule, run_schedule, schedule_runs), called through the app's AsyncClient on the
request's connection, behind the same token check as the job endpoints (scopes schedules:read
and schedules:write; a tenant token acts only for its tenant)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from jobctl.api import audit
from jobctl.api.auth import Caller, caller_for
from jobctl.api.models import (
    JOB_ID_MAX,
    Dropped,
    Schedule,
    ScheduleIn,
    ScheduleList,
    ScheduleOut,
    ScheduleRun,
    ScheduleRunJob,
    ScheduleRunPage,
    shown,
)
from jobctl.api.names import known_query
from jobctl.api.routes import (
    LIST_CAP,
    TOO_MANY_LISTS,
    ask,
    error_responses,
    found,
    list_permit,
    next_page,
    not_found,
)

Name = Annotated[str, Path(min_length=1, max_length=200, description="The schedule's name.")]
Tenant = Annotated[
    str | None, Query(description="The tenant; defaults to the token's. Required with an admin token.")
]

router = APIRouter(prefix="/api/v1", dependencies=[known_query], tags=["schedules"])
# the caller of an endpoint that changes a schedule
Writer = Annotated[Caller, caller_for("schedules:write")]
# list and drop take the tenant as the query parameter `tenant`
TENANT_AS_SENT = {"tenant_id": "tenant"}
# the error answers of pause and resume
ONE_SCHEDULE_ERRORS = error_responses(404, 422, notes={404: "No such schedule."})


@router.put(
    "/schedules/{name:name}",
    summary="Create or replace a schedule",
    response_description="The schedule as saved.",
    responses=error_responses(
        400, 413, 422, notes={403: "The token lacks schedules:write, or tenant_id names another tenant."}
    ),
)
async def put_schedule(request: Request, name: Name, body: ScheduleIn, caller: Writer) -> ScheduleOut:
    """Create or replace a recurring schedule (scope `schedules:write`): each fire time of `cron` enqueues one
    job. Fields left out take the database's defaults."""
    act = audit.begin(request, caller, "put_schedule")
    act.tenant = caller.tenant_for(body.tenant_id, "tenant_id")
    params = dict(body) | {"tenant_id": act.tenant, "name": name}
    saved = await ask(caller, caller.client.put_schedule, params)
    act.record(200)
    return ScheduleOut(schedule=shown(Schedule, saved))


@router.get(
    "/schedules", summary="List schedules", responses=error_responses(422, 429, notes={429: TOO_MANY_LISTS})
)
async def list_schedules(
    request: Request, caller: Annotated[Caller, caller_for("schedules:read")], tenant: Tenant = None
) -> ScheduleList:
    """A tenant's schedules with their next and last fire times (scope `schedules:read`)."""
    tenant_id = caller.tenant_for(tenant, "tenant")
    with list_permit(request, caller):
        rows = await ask(caller, caller.client.list_schedules, {"tenant_id": tenant_id}, TENANT_AS_SENT)
        return ScheduleList(schedules=[shown(Schedule, r) for r in rows])


@router.delete("/schedules/{name:name}", summary="Drop a schedule", responses=error_responses(404, 422))
async def drop_schedule(request: Request, name: Name, caller: Writer, tenant: Tenant = None) -> Dropped:
    """Remove a schedule (scope `schedules:write`); runs already enqueued stay. An unknown name is 404."""
    act = audit.begin(request, caller, "drop_schedule")
    act.tenant = caller.tenant_for(tenant, "tenant")
    params = {"tenant_id": act.tenant, "name": name}
    if not await ask(caller, caller.client.drop_schedule, params, TENANT_AS_SENT):
        raise not_found(f"schedule {name}", "name")
    act.record(200)
    return Dropped(dropped=True)


async def _schedule(caller: Caller, tenant_id: str, name: str) -> ScheduleOut:
    params = {"tenant_id": tenant_id, "name": name}
    row = await found(caller, caller.client.get_schedule, params, f"schedule {name}", "name", TENANT_AS_SENT)
    return ScheduleOut(schedule=shown(Schedule, row))


async def _pause(
    request: Request, caller: Caller, name: str, tenant: str | None, paused: bool
) -> ScheduleOut:
    act = audit.begin(request, caller, "pause_schedule" if paused else "resume_schedule")
    act.tenant = caller.tenant_for(tenant, "tenant")
    change = caller.client.pause_schedule if paused else caller.client.resume_schedule
    await ask(caller, change, {"tenant_id": act.tenant, "name": name}, TENANT_AS_SENT)
    act.record(200)
    return await _schedule(caller, act.tenant, name)


@router.post("/schedules/{name:name}/pause", summary="Pause a schedule", responses=ONE_SCHEDULE_ERRORS)
async def pause_schedule(request: Request, name: Name, caller: Writer, tenant: Tenant = None) -> ScheduleOut:
    """Stop a schedule firing until it is resumed (scope `schedules:write`); runs already enqueued stay."""
    return await _pause(request, caller, name, tenant, True)


@router.post("/schedules/{name:name}/resume", summary="Resume a schedule", responses=ONE_SCHEDULE_ERRORS)
async def resume_schedule(request: Request, name: Name, caller: Writer, tenant: Tenant = None) -> ScheduleOut:
    """Let a paused schedule fire again (scope `schedules:write`). Its next fire time is the first one after
    now: the runs it missed while paused are skipped, not caught up."""
    return await _pause(request, caller, name, tenant, False)


@router.post(
    "/schedules/{name:name}/run",
    summary="Run a schedule now",
    responses=error_responses(
        404, 422, 429, notes={404: "No such schedule.", 429: "Over the tenant's quota or submit rate."}
    ),
)
async def run_schedule(request: Request, name: Name, caller: Writer, tenant: Tenant = None) -> ScheduleRun:
    """Submit one run of the schedule now, paused or not (scope `schedules:write`): a job of its queue,
    payload and priority, due now, which becomes its `last_job_id`; its next fire time is unchanged."""
    act = audit.begin(request, caller, "run_schedule")
    act.tenant = caller.tenant_for(tenant, "tenant")
    params = {"tenant_id": act.tenant, "name": name}
    act.job_id = await ask(caller, caller.client.run_schedule, params, TENANT_AS_SENT)
    out = await _schedule(caller, act.tenant, name)
    act.record(200)
    return ScheduleRun(job_id=act.job_id, schedule=out.schedule)


@router.get(
    "/schedules/{name:name}/runs",
    summary="List a schedule's runs",
    responses=error_responses(
        422,
        429,
        notes={
            403: "The token lacks jobs:read (the runs are jobs), or `tenant` names another tenant.",
            429: TOO_MANY_LISTS,
        },
    ),
)
async def schedule_runs(
    request: Request,
    name: Name,
    caller: Annotated[Caller, caller_for("jobs:read")],
    tenant: Tenant = None,
    before: Annotated[
        int | None,
        Query(ge=1, le=JOB_ID_MAX, description="Only runs with a smaller job id: the `next` of a page."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=LIST_CAP, description="Runs per page.")] = 50,
) -> ScheduleRunPage:
    """A page of a schedule's runs, newest first (scope `jobs:read`): each job it enqueued with the fire
    time it stands for, also after the schedule was dropped (an unknown name has no runs). Follow `next`
    (as `before`) until it is null."""
    tenant_id = caller.tenant_for(tenant, "tenant")
    params = {"tenant_id": tenant_id, "name": name, "before_id": before, "max_rows": min(limit + 1, LIST_CAP)}
    names = {"tenant_id": "tenant", "before_id": "before", "max_rows": "limit"}
    with list_permit(request, caller):
        rows = await ask(caller, caller.client.schedule_runs, params, names)
        runs = [shown(ScheduleRunJob, r) for r in rows[:limit]]
        return ScheduleRunPage(runs=runs, next=next_page(rows, limit, LIST_CAP, "job_id"))
