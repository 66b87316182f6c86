"""The endpoints. Each one is, in this order, and nothing more:

1. the token check: `jobctl.authenticate(token, scope)` (auth.caller_for), which names the token's
   tenant (NULL: an admin token) and all its scopes, or refuses it (401, 403), and makes the rest of
   the transaction act as that token;
2. one call of the app's AsyncClient (jobctl.client) with `conn=` the request's connection, calling
   one contract function: submit_jobs, get_job, cancel_job, retry_job or list_jobs. The function acts
   only for the token's tenant (jobctl._acting_tenants): another tenant's job answers 404, as an
   unknown id does;
3. for the endpoints that change a job (submit, cancel, retry): a read-back with `get_job`, whose row
   is the response. A duplicate submit by a token without jobs:read answers only the job's id, tenant
   and state (models.JobRef).

The rules are the SQL functions'; an endpoint only turns HTTP into the client's parameters and its
typed rows into JSON (their errors: `call`, error_handlers). All three steps run in one transaction
on the one connection auth lends for the endpoint function; it is back in the pool before the
response is sent. The one statement an endpoint runs outside the client is the health check's ping.
The exception to the one transaction: `GET /jobs/{id}?wait=`, a long poll, which authenticates afresh
for each of its short transactions and holds no connection while it waits (api/long_poll.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Annotated, Any, TypeVar

import psycopg
from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from jobctl import errors, queries
from jobctl.api import audit, error_handlers, long_poll
from jobctl.api.auth import Caller, TokenSessions, caller_for, pool_of, sessions_for
from jobctl.api.limits import TenantPermits
from jobctl.api.models import (
    JOB_ID_MAX,
    ErrorBody,
    Health,
    Job,
    JobOut,
    JobPage,
    JobRef,
    JobSubmit,
    Submitted,
    converted,
)
from jobctl.api.names import known_query
from jobctl.contract import STATES

log = logging.getLogger("jobctl.api")
T = TypeVar("T")

HEALTH_TIMEOUT = 2.0  # seconds to wait for a pooled connection before answering 503
LIST_CAP = 1000  # list_jobs returns at most this many rows (docs/errors.md: max_rows is capped)

TOO_MANY_LISTS = (
    "This token's tenants have too many list requests running: retry after `Retry-After` seconds."
)

WAIT_DOC = (
    "Seconds to wait for the job to finish (a long poll, at most 30): the answer comes as soon as it "
    "is completed, dead or cancelled, or when the wait runs out, with the job as it is then."
)

NOT_YOURS = (
    "No such job, or it belongs to another tenant: a tenant token cannot see other tenants' jobs, "
    "so both answer 404."
)


def error_responses(*statuses: int, notes: dict[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """The error answers of an endpoint for the OpenAPI document: 401, 403 and 503 always, the given
    statuses too; notes replaces a status's default description."""
    default = {
        400: "The body is not valid JSON.",
        401: "Missing, malformed, unknown or revoked token.",
        403: "The token lacks the scope this endpoint needs.",
        404: NOT_YOURS,
        409: "The job's state does not allow this.",
        413: "The body is over 1 MiB, or the payload over 64 KiB.",
        422: "Invalid request: see `field` and `errors`.",
        429: "Over the tenant's quota or rate: retry after `Retry-After` seconds.",
        503: "The database is unavailable: retry after `Retry-After` seconds.",
    }
    return {
        s: {"model": ErrorBody, "description": (notes or {}).get(s, default.get(s, ""))}
        for s in sorted({401, 403, 503, *statuses})
    }


JobId = Annotated[int, Path(alias="id", ge=1, le=JOB_ID_MAX, description="The job id.")]

router = APIRouter(prefix="/api/v1", dependencies=[known_query], tags=["jobs"])
operations = APIRouter(prefix="/api/v1", dependencies=[known_query], tags=["operations"])
# the caller of a submit: a job, a workflow, a batch
Submitter = Annotated[Caller, caller_for("jobs:submit")]


def list_permit(request: Request, caller: Caller) -> AbstractContextManager[None]:
    """One of the few permits a list request of the caller's tenants may take (limits.TenantPermits), held
    while it queries and builds its page; 429 when they are all taken."""
    permits: TenantPermits = request.app.state.list_permits
    return permits.permit(caller.tenant_id)


async def call(
    op: Awaitable[T], params: Mapping[str, Any] | None = None, sent_as: Mapping[str, str] | None = None
) -> T:
    """The result of one client call (a coroutine of the app's AsyncClient, with conn= the request's
    connection). Its error, if the database (or psycopg) refuses the request, is raised as the
    JobctlError naming each field as the request did (error_handlers.from_db): params are the SQL's
    parameters by name (the one holding a NUL is named), sent_as maps a parameter of the SQL to the
    query parameter, path parameter or JSON key it came from, where the two differ."""
    try:
        return await op
    except (errors.JobctlError, psycopg.Error) as e:
        # a JobctlError is the client's mapping of a database error (its cause): mapped again, in the
        # API's words; one without a database error was refused by the client before the database
        cause = e if isinstance(e, psycopg.Error) else e.__cause__
        err = error_handlers.from_db(cause, params, sent_as) if isinstance(cause, psycopg.Error) else None
        if err is None:
            raise
        raise err from cause


def not_found(what: str, field: str) -> errors.NotFound:
    """404 with P0002, the code cancel_job and retry_job raise for an unknown id."""
    return errors.NotFound(f"{what} not found", field=field, sqlstate="P0002")


async def ask(
    caller: Caller,
    method: Callable[..., Awaitable[T]],
    params: dict[str, Any],
    sent_as: Mapping[str, str] | None = None,
) -> T:
    """`call` of one of the client's methods on the caller's connection, params its keyword arguments
    (named as the SQL names them)."""
    return await call(method(**params, conn=caller.conn), params, sent_as)


async def found(
    caller: Caller,
    method: Callable[..., Awaitable[T | None]],
    params: dict[str, Any],
    what: str,
    field: str,
    sent_as: Mapping[str, str] | None = None,
) -> T:
    """`ask` for one row: none (an unknown key, or another tenant's row) answers 404 naming field."""
    row = await ask(caller, method, params, sent_as)
    if row is None:
        raise not_found(what, field)
    return row


def next_page(rows: Sequence[Any], limit: int, cap: int, key: str) -> Any:
    """The `next` of a page, the first `limit` of the rows read (limit + 1 of them: one more tells that
    another page follows; at the cap, which cannot return the extra row, a full page points on, maybe
    to an empty one): the key of its last row, or None on the last page."""
    more = len(rows) > limit or len(rows) == limit == cap
    return getattr(rows[limit - 1], key) if more else None


# The job id is the path's `id`
JOB_ID_AS_SENT = {"job_id": "id"}


async def _job(caller: Caller, job_id: int) -> Job:
    """A job of the caller's tenants (get_job answers another tenant's as it answers an unknown id: no row,
    404)."""
    params = {"job_id": job_id}
    return converted(
        Job, await found(caller, caller.client.get_job, params, f"job {job_id}", "id", JOB_ID_AS_SENT)
    )


@router.post(
    "/jobs",
    status_code=201,
    summary="Submit a job",
    response_description="The new job.",
    responses={
        200: {
            "model": Submitted,
            "description": 'A job with this dedup_key exists: it, with "duplicate": true, and nothing '
            "changed. The job is shown in full only to a token that also has jobs:read; to a token "
            "without it, `job` holds only `job_id`, `tenant_id` and `state` (`JobRef`).",
        },
        **error_responses(
            400,
            413,
            422,
            429,
            notes={
                403: "The token lacks jobs:submit, or tenant_id names another tenant.",
            },
        ),
    },
)
async def submit_job(request: Request, response: Response, job: JobSubmit, caller: Submitter) -> Submitted:
    """Submit one job (scope `jobs:submit`). Fields left out take the database's defaults.

    A repeat of a `dedup_key` answers 200 with the first job and `"duplicate": true`. Its payload,
    result and error are shown only to a token that also has `jobs:read`; a token without it gets
    `{"job": {"job_id", "tenant_id", "state"}, "duplicate": true}`."""
    act = audit.begin(request, caller, "submit")
    act.tenant = caller.tenant_for(job.tenant_id, "tenant_id")
    spec = job.model_dump(mode="json", exclude_unset=True) | {"tenant_id": act.tenant}
    traceparent = spec.pop("traceparent", None)  # the parent of the submit span (jobctl.tracing)
    submitted = caller.client.submit_many([spec], traceparent=traceparent, conn=caller.conn)
    made = (await call(submitted))[0]
    act.job_id, duplicate = made.job_id, made.duplicate
    first = await _job(caller, act.job_id)
    # a dedup hit may be another token's job: its contents are for jobs:read only
    shown = JobRef.of(first) if duplicate and not caller.may("jobs:read") else first
    out = Submitted(job=shown, duplicate=duplicate)
    response.status_code = 200 if duplicate else 201
    act.record(response.status_code)
    return out


async def _change_job(
    request: Request, caller: Caller, job_id: int, action: str, change: Callable[..., Awaitable[str]]
) -> JobOut:
    """Cancel or retry (`change`: the client's cancel_job or retry_job) one of the caller's jobs,
    audited, and answer with the job as it is now; the function answers an unknown id and another
    tenant's job alike (P0002: 404)."""
    act = audit.begin(request, caller, action, job_id)
    await ask(caller, change, {"job_id": job_id}, JOB_ID_AS_SENT)
    out = JobOut(job=await _job(caller, job_id))
    act.record(200)
    return out


@router.get(
    "/jobs/{id}",
    summary="Get a job",
    responses=error_responses(
        404,
        422,
        429,
        notes={
            422: "The id is not a positive integer, or `wait` is not a number from 0 to 30.",
            429: "This token's tenants have too many long polls (`wait`) running: retry after "
            "`Retry-After` seconds.",
        },
    ),
)
async def get_job(
    request: Request,
    job_id: JobId,
    sessions: Annotated[TokenSessions, sessions_for("jobs:read")],
    wait: Annotated[float | None, Query(ge=0, le=long_poll.MAX_WAIT, description=WAIT_DOC)] = None,
) -> JobOut:
    """One job (scope `jobs:read`). Another tenant's job answers 404, as an unknown id does. With
    `wait`, a long poll: the answer comes when the job is finished, or after `wait` seconds."""
    if not wait:
        async with sessions.open() as caller:
            return JobOut(job=await _job(caller, job_id))
    state = request.app.state
    job = await call(long_poll.long_poll(sessions, state.hints, state.watch_permits, job_id, wait))
    return JobOut(job=converted(Job, job))


@router.delete(
    "/jobs/{id}",
    summary="Cancel a job",
    response_description="The cancelled job.",
    responses=error_responses(404, 409, 422, notes={409: "The job is already completed, dead or cancelled."}),
)
async def cancel_job(
    request: Request, job_id: JobId, caller: Annotated[Caller, caller_for("jobs:cancel")]
) -> JobOut:
    """Cancel a pending, failed or running job (scope `jobs:cancel`); a running job's lease is revoked, so
    its worker's heartbeat answers `cancelled` and its completion is refused."""
    return await _change_job(request, caller, job_id, "cancel", caller.client.cancel_job)


@router.post(
    "/jobs/{id}/retry",
    summary="Retry a job",
    response_description="The job, pending again.",
    responses=error_responses(404, 409, 422, notes={409: "The job is pending, running or completed."}),
)
async def retry_job(
    request: Request, job_id: JobId, caller: Annotated[Caller, caller_for("jobs:retry")]
) -> JobOut:
    """Make a failed, dead or cancelled job pending and due now (scope `jobs:retry`). Its attempt count is
    kept and max_attempts raised to at least attempt + 1."""
    return await _change_job(request, caller, job_id, "retry", caller.client.retry_job)


@router.get(
    "/jobs",
    summary="List jobs",
    responses=error_responses(
        422,
        429,
        notes={
            403: "The token lacks jobs:read, or `tenant` names another tenant.",
            422: "A bad filter or limit, or no `tenant` with an admin token.",
            429: TOO_MANY_LISTS,
        },
    ),
)
async def list_jobs(
    request: Request,
    caller: Annotated[Caller, caller_for("jobs:read")],
    tenant: Annotated[
        str | None, Query(description="The tenant; defaults to the token's. Required with an admin token.")
    ] = None,
    state: Annotated[
        str | None,
        Query(description="Only jobs in this state: " + ", ".join(STATES) + "."),
    ] = None,
    status: Annotated[
        str | None,
        Query(description="The same as `state` (its first name); give one of the two.", deprecated=True),
    ] = None,
    queue: Annotated[str | None, Query(description="Only jobs of this queue.")] = None,
    before: Annotated[
        int | None,
        Query(ge=1, le=JOB_ID_MAX, description="Only jobs with a smaller id: the `next` of a page."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=LIST_CAP, description="Jobs per page.")] = 50,
) -> JobPage:
    """A page of a tenant's jobs, newest first (scope `jobs:read`). Follow `next` (as `before`) until it
    is null."""
    if state is not None and status is not None and state != status:
        why = "the same as state: give one of the two"
        error = {"type": "value_error", "loc": ("query", "status"), "msg": why, "input": status}
        raise RequestValidationError([error])
    # an error names the parameter the client sent
    names = {"tenant_id": "tenant", "before_id": "before", "max_rows": "limit"}
    if state is None and status is not None:
        state, names["state"] = status, "status"
    tenant_id = caller.tenant_for(tenant, "tenant")
    params = {
        "tenant_id": tenant_id,
        "state": state,
        "queue": queue,
        "before_id": before,
        "max_rows": limit + 1,
    }
    with list_permit(request, caller):
        rows = await ask(caller, caller.client.list_jobs, params, names)
        return JobPage(
            jobs=[converted(Job, r) for r in rows[:limit]], next=next_page(rows, limit, LIST_CAP, "job_id")
        )


@operations.get(
    "/health",
    summary="Health",
    response_model=Health,
    response_description="The database answers.",
    responses={503: {"model": Health, "description": "The database cannot be reached."}},
)
async def health(request: Request) -> Health | JSONResponse:
    """Whether the API can reach its database. No token needed."""
    try:
        pool = pool_of(request)
        async with pool.connection(timeout=min(HEALTH_TIMEOUT, pool.timeout)) as conn:
            await conn.execute(queries.PING)
    except psycopg.Error as e:
        log.warning("health check failed: %s", str(e).strip())
        return JSONResponse({"status": "unavailable"}, status_code=503, headers={"Retry-After": "2"})
    return Health(status="ok")
