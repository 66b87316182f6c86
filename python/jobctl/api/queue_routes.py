"""The queue endpoints: a queue's settings (put_queue), pause and resume, and the list (list_queues),
each called through the app's AsyncClient on the request's connection.
Queues are shared by every tenant, so these take an admin token (scopes queues:read, queues:write);
a tenant token is refused (403) by the database."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from jobctl.api import audit
from jobctl.api.auth import Caller, caller_for
from jobctl.api.models import Queue, QueueIn, QueueList, QueueOut, shown
from jobctl.api.names import known_query
from jobctl.api.routes import TOO_MANY_LISTS, ask, call, error_responses, found, list_permit

QueueName = Annotated[str, Path(min_length=1, max_length=200, description="The queue.")]

router = APIRouter(prefix="/api/v1", dependencies=[known_query], tags=["queues"])
# the caller of an endpoint that changes a queue
Writer = Annotated[Caller, caller_for("queues:write")]
ADMIN_ONLY = {403: "The token lacks the scope, or is a tenant's: queues are shared, so only an admin token."}


async def _queue(caller: Caller, name: str) -> QueueOut:
    row = await found(caller, caller.client.get_queue, {"queue": name}, f"queue {name}", "queue")
    return QueueOut(queue=shown(Queue, row))


@router.get(
    "/queues", summary="List queues", responses=error_responses(429, notes=ADMIN_ONLY | {429: TOO_MANY_LISTS})
)
async def list_queues(request: Request, caller: Annotated[Caller, caller_for("queues:read")]) -> QueueList:
    """Every queue with settings or jobs due or running, with its jobs due and running across tenants
    (scope `queues:read`, admin token)."""
    with list_permit(request, caller):
        rows = await call(caller.client.list_queues(conn=caller.conn))
        return QueueList(queues=[shown(Queue, r) for r in rows])


@router.put(
    "/queues/{queue:name}",
    summary="Create or replace a queue's settings",
    responses=error_responses(400, 422, notes=ADMIN_ONLY),
)
async def put_queue(request: Request, queue: QueueName, body: QueueIn, caller: Writer) -> QueueOut:
    """Set a queue's limits and pause (scope `queues:write`, admin token); fields left out take their
    defaults: no limit, not paused."""
    act = audit.begin(request, caller, "put_queue")
    saved = await ask(caller, caller.client.put_queue, body.model_dump() | {"queue": queue})
    act.record(200)
    return QueueOut(queue=shown(Queue, saved))


async def _pause(request: Request, caller: Caller, name: str, paused: bool) -> QueueOut:
    act = audit.begin(request, caller, "pause_queue" if paused else "resume_queue")
    change = caller.client.pause_queue if paused else caller.client.resume_queue
    await ask(caller, change, {"queue": name})
    act.record(200)
    return await _queue(caller, name)


@router.post(
    "/queues/{queue:name}/pause", summary="Pause a queue", responses=error_responses(422, notes=ADMIN_ONLY)
)
async def pause_queue(request: Request, queue: QueueName, caller: Writer) -> QueueOut:
    """Stop claims from the queue, for every tenant, from the next claim on; submits go on (scope
    `queues:write`, admin token)."""
    return await _pause(request, caller, queue, True)


@router.post(
    "/queues/{queue:name}/resume", summary="Resume a queue", responses=error_responses(422, notes=ADMIN_ONLY)
)
async def resume_queue(request: Request, queue: QueueName, caller: Writer) -> QueueOut:
    """Restart claims from a paused queue (scope `queues:write`, admin token)."""
    return await _pause(request, caller, queue, False)
