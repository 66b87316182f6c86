"""The schedule endpoints: one contract function each (put_schedule, list_schedules,
drop_schedule), behind the same token check as the job endpoints (scopes schedules:read and
schedules:write; a tenant token acts only for its tenant)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from psycopg.types.json import Jsonb

from jobctl import queries
from jobctl.api import audit
from jobctl.api.auth import Caller, caller_for
from jobctl.api.models import Dropped, Schedule, ScheduleIn, ScheduleList, ScheduleOut
from jobctl.api.routes import TOO_MANY_LISTS, error_responses, fetch_all, list_slot, not_found

Name = Annotated[str, Path(min_length=1, max_length=200, description="The schedule's name.")]
Tenant = Annotated[
    str | None, Query(description="The tenant; defaults to the token's. Required with an admin token.")
]

router = APIRouter(prefix="/api/v1", tags=["schedules"])
# list and drop take the tenant as the query parameter `tenant`
TENANT_AS_SENT = {"tenant_id": "tenant"}


@router.put(
    "/schedules/{name}",
    summary="Create or replace a schedule",
    response_description="The schedule as saved.",
    responses=error_responses(
        400, 413, 422, notes={403: "The token lacks schedules:write, or tenant_id names another tenant."}
    ),
)
async def put_schedule(
    request: Request, name: Name, body: ScheduleIn, caller: Annotated[Caller, caller_for("schedules:write")]
) -> ScheduleOut:
    """Create or replace a recurring schedule (scope `schedules:write`): each fire time of `cron` enqueues one
    job. Fields left out take the database's defaults."""
    act = audit.begin(request, audit.Action(caller.token_id, caller.tenant_id, "put_schedule"))
    act.tenant = caller.tenant_for(body.tenant_id, "tenant_id")
    params = body.model_dump(exclude={"tenant_id"}) | {"tenant_id": act.tenant, "name": name}
    params["payload"] = Jsonb(body.payload)
    await fetch_all(caller, queries.PUT_SCHEDULE, params)
    rows = await fetch_all(caller, queries.GET_SCHEDULE, {"tenant_id": act.tenant, "name": name})
    act.record(200)
    return ScheduleOut(schedule=Schedule(**rows[0]))


@router.get(
    "/schedules", summary="List schedules", responses=error_responses(422, 429, notes={429: TOO_MANY_LISTS})
)
async def list_schedules(
    request: Request, caller: Annotated[Caller, caller_for("schedules:read")], tenant: Tenant = None
) -> ScheduleList:
    """A tenant's schedules with their next and last fire times (scope `schedules:read`)."""
    tenant_id = caller.tenant_for(tenant, "tenant")
    with list_slot(request, caller):
        rows = await fetch_all(caller, queries.LIST_SCHEDULES, {"tenant_id": tenant_id}, TENANT_AS_SENT)
        return ScheduleList(schedules=[Schedule(**r) for r in rows])


@router.delete("/schedules/{name}", summary="Drop a schedule", responses=error_responses(404, 422))
async def drop_schedule(
    request: Request,
    name: Name,
    caller: Annotated[Caller, caller_for("schedules:write")],
    tenant: Tenant = None,
) -> Dropped:
    """Remove a schedule (scope `schedules:write`); runs already enqueued stay. An unknown name is 404."""
    act = audit.begin(request, audit.Action(caller.token_id, caller.tenant_id, "drop_schedule"))
    act.tenant = caller.tenant_for(tenant, "tenant")
    params = {"tenant_id": act.tenant, "name": name}
    rows = await fetch_all(caller, queries.DROP_SCHEDULE, params, TENANT_AS_SENT)
    if not rows or not rows[0]["dropped"]:
        raise not_found(f"schedule {name}", "name")
    act.record(200)
    return Dropped(dropped=True)
