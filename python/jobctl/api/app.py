"""The ASGI app: FastAPI over a psycopg async connection pool, opened and closed by the lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool

from jobctl import __version__, db
from jobctl.api import (
    admin_routes,
    error_handlers,
    flow_routes,
    long_poll,
    metrics,
    queue_routes,
    routes,
    schedule_routes,
)
from jobctl.api.limits import BodyLimit, TenantPermits
from jobctl.client import AsyncClient
from jobctl.dashboard import install as install_dashboard

log = logging.getLogger("jobctl.api")

MAX_BODY_BYTES = 1024 * 1024  # larger request bodies are refused (413) before they are parsed
APPLICATION_NAME = "jobctl-api"
# Every statement of the API's sessions is bounded (docs/api.md, Bounds and timeouts): a runaway
# list or a held lock answers 503 with Retry-After instead of holding a pooled connection
STATEMENT_TIMEOUT = 5.0  # seconds
LOCK_TIMEOUT = 1.0
LIST_CONCURRENCY = 2  # list requests of one token's tenants running at once; more answer 429
DOCS_URL = "/api/v1/docs"  # the interactive document (Swagger UI)
DOCS_ASSETS = f"{DOCS_URL}/assets"  # its scripts, style sheet and icon, from the package

DESCRIPTION = """\
The HTTP face of jobctl, a multi-tenant job scheduler that lives inside PostgreSQL. Every endpoint
is a thin caller of one `jobctl` SQL function, so the API, the CLI and the worker agree on every
rule.

**Authentication.** Send `Authorization: Bearer <token>` with a token made by
`jobctl.create_api_token(tenant_id, scopes)`. A token speaks for one tenant (or, made with a NULL
tenant, for every tenant: an admin token) and only for its scopes: `jobs:read`, `jobs:submit`,
`jobs:cancel`, `jobs:retry`, `jobs:delete`, `schedules:read`, `schedules:write`, `queues:read`,
`queues:write`, `tenants:read`, `tenants:write`, `workers:read`, `audit:read`. Only its SHA-256 is
stored. No or a bad token: 401; a missing scope: 403. Another tenant's job is invisible: it answers
404, exactly as an unknown id does. Only `jobs:read` shows a job's contents: a submit that repeats a
`dedup_key` answers a token without it with the first job's `job_id`, `tenant_id` and `state` only.

**Errors.** Every 4xx and 5xx has the same JSON body: `error` (a short code), `message` (one line),
`field` (the request field at fault, named as the request sent it, or null) and `sqlstate` (the
database's code, docs/errors.md; for a request refused before the database saw it, the code the
database gives the same fault, e.g. JC001; null where no database rule is behind it); request
validation adds `errors`, a list of `{field, reason}`. 429 and 503 carry `Retry-After`. A query
parameter an endpoint does not declare is refused (422, `reason` "unknown field"), as an unknown body
field is.
"""

# The OpenAPI document's tags, in its order: name -> description
TAGS = {
    "jobs": "A tenant's jobs. Each endpoint needs a token with its scope.",
    "schedules": "A tenant's recurring schedules (cron read in a time zone, UTC unless set).",
    "operations": "For load balancers and monitoring; no token, but the health checks (tenants:read, "
    "admin token).",
    "tenants": "Tenants' settings, pause and resume, tokens and grants (tenants:read, tenants:write): a "
    "tenant token for its own tenant.",
    "workers": "The registry of workers (workers:read, admin token).",
    "audit": "The audit log (audit:read): a tenant token sees its tenant's.",
}


def session_options(given: str, statement_timeout: float, lock_timeout: float) -> str:
    """libpq `options` for the API's sessions: the given ones (the DSN's, JOBCTL_PAYLOAD_KEYS), then
    the timeouts, in milliseconds (0: none, as in PostgreSQL); the later -c wins."""
    timeouts = " ".join(
        f"-c {name}={round(seconds * 1000)}"
        for name, seconds in (("statement_timeout", statement_timeout), ("lock_timeout", lock_timeout))
    )
    return f"{given} {timeouts}" if given else timeouts


def create_app(
    dsn: str | None = None,
    *,
    pool_min: int = 1,
    pool_max: int = 10,
    pool_timeout: float = 5.0,
    statement_timeout: float = STATEMENT_TIMEOUT,
    lock_timeout: float = LOCK_TIMEOUT,
    list_concurrency: int = LIST_CONCURRENCY,
    wait_concurrency: int = long_poll.WAIT_CONCURRENCY,
) -> FastAPI:
    """The API app. dsn None: JOBCTL_DSN or the local cluster's, looked up when the app starts.
    pool_timeout is how long a request waits for a connection before it answers 503;
    statement_timeout and lock_timeout (seconds, 0: none) bound each statement and each lock wait
    of its sessions (503 too); list_concurrency caps the list requests of one token's tenants (429),
    wait_concurrency their long polls (`GET /api/v1/jobs/{id}?wait=`, 429)."""
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        nonlocal pool
        conninfo = dsn if dsn is not None else db.dsn()
        kwargs = db.connection_kwargs(conninfo, APPLICATION_NAME, autocommit=True)
        if db.pooled():
            # PgBouncer refuses the startup parameter `options`, and a SET would stay on a server
            # connection other clients share: the timeouts are the role's (docs/operations.md,
            # Connection pooling)
            log.info("behind a transaction pooler: statement and lock timeouts are the database role's")
        else:
            # startup options, not a SET per connection: no extra round trip, and no session without them
            given = str(kwargs.get("options") or conninfo_to_dict(conninfo).get("options") or "")
            kwargs["options"] = session_options(given, statement_timeout, lock_timeout)
        db.cap_pool_backoff()  # reconnects at most 1 s apart (jittered): back within ~1 s of a restart
        pool = AsyncConnectionPool(
            conninfo,
            kwargs=kwargs,
            min_size=pool_min,
            max_size=pool_max,
            timeout=pool_timeout,
            # a connection is tried before each use, so one the server dropped (restart,
            # pg_terminate_backend) is replaced instead of failing a request
            check=AsyncConnectionPool.check_connection,
            name=APPLICATION_NAME,
            open=False,
        )
        await pool.open()  # without waiting: the API starts, and answers 503, while the database is down
        app.state.pool = pool
        # the endpoints' SQL work: every call runs on the request's pooled connection (conn=), so the
        # client never opens a connection of its own
        app.state.client = AsyncClient(conninfo)
        # the long polls' one listener (api/long_poll.py), outside the pool; behind a transaction
        # pooler it connects to JOBCTL_LISTEN_DSN, or there is none and long polls only poll
        listen = db.listen_dsn(conninfo)
        app.state.hints = long_poll.Hints(listen, kwargs if listen == conninfo else {"connect_timeout": 10})
        app.state.hints.start()
        try:
            yield
        finally:
            await app.state.hints.stop()
            await app.state.client.close()
            await pool.close()

    # The docs page's Swagger UI (JS, CSS, icon) is served from the fastapi-offline package under
    # DOCS_ASSETS, not from a CDN, so that it works offline (swagger-ui-bundle ships Swagger UI 4,
    # which cannot read the OpenAPI 3.1 document FastAPI writes); ReDoc stays off
    app = FastAPIOffline(
        docs_url=DOCS_URL,
        redoc_url=None,
        static_url=DOCS_ASSETS,
        swagger_ui_oauth2_redirect_url=f"{DOCS_URL}/oauth2-redirect",
        title="jobctl API",
        version=__version__,
        summary="Submit, inspect, list, cancel and retry jobs of a PostgreSQL-native job scheduler.",
        description=DESCRIPTION,
        openapi_url="/api/v1/openapi.json",
        lifespan=lifespan,
        generate_unique_id_function=lambda route: route.name,  # operationIds: submit_job, get_job, ...
        openapi_tags=[{"name": name, "description": text} for name, text in TAGS.items()],
    )
    app.state.list_permits = TenantPermits(list_concurrency)
    app.state.watch_permits = TenantPermits(wait_concurrency, "long polls")
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)  # innermost of ours: metrics count its 413s
    error_handlers.install(app)
    metrics.install(app, lambda: pool.get_stats() if pool is not None else None)
    # tenant, queue and schedule names may hold "/" ({...:name}, below): in each router, the routes
    # with an action after the name (/runs, /tokens, ...) are tried before the bare ones, which would
    # take the action for part of the name
    named = (schedule_routes.router, queue_routes.router, admin_routes.router)
    for router in named:
        router.routes.sort(key=lambda r: str(getattr(r, "path", "")).endswith(":name}"))
    # flow_routes: workflows and batches
    for router in (routes.router, routes.operations, *named, admin_routes.shared, flow_routes.router):
        app.include_router(router)
    # --- the web dashboard: pages at /, assets at /static; the API stays under /api/v1
    install_dashboard(app)
    return app
