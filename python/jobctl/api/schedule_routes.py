"""The schedule endpoints: one contract function each (put_schedule, list_schedules,
drop_schedule), called through the app's AsyncClient on the request's connection, behind the same
token check as the job endpoints (scopes schedules:read and schedules:write; a tenant token acts only
for its tenant)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from jobctl.api import audit
from jobctl.api.auth import Caller, caller_for
from jobctl.api.models import Dropped, ScheduleIn, ScheduleList, ScheduleOut, schedule_of
from jobctl.api.routes import TOO_MANY_LISTS, call, error_responses, list_slot, not_found

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
    params = body.model_dump(exclude={"tenant_id", "payload"}) | {"tenant_id": act.tenant, "name": name}
    saved = await call(
        caller.client.put_schedule(
            act.tenant,
            name,
            body.cron,
            body.queue,
            body.payload,
            priority=body.priority,
            catch_up=body.catch_up,
            skip_overlap=body.skip_overlap,
            conn=caller.conn,
        ),
        params,
    )
    act.record(200)
    return ScheduleOut(schedule=schedule_of(saved))


@router.get(
    "/schedules", summary="List schedules", responses=error_responses(422, 429, notes={429: TOO_MANY_LISTS})
)
async def list_schedules(
    request: Request, caller: Annotated[Caller, caller_for("schedules:read")], tenant: Tenant = None
) -> ScheduleList:
    """A tenant's schedules with their next and last fire times (scope `schedules:read`)."""
    tenant_id = caller.tenant_for(tenant, "tenant")
    with list_slot(request, caller):
        params = {"tenant_id": tenant_id}
        rows = await call(caller.client.list_schedules(tenant_id, conn=caller.conn), params, TENANT_AS_SENT)
        return ScheduleList(schedules=[schedule_of(r) for r in rows])


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
    dropped = await call(
        caller.client.drop_schedule(act.tenant, name, conn=caller.conn), params, TENANT_AS_SENT
    )
    if not dropped:
        raise not_found(f"schedule {name}", "name")
    act.record(200)
    return Dropped(dropped=True)
