"""Bearer tokens: `Authorization: Bearer <token>`, checked by jobctl.authenticate (which stores only
their hash) for one scope. A token speaks for one tenant, or for every tenant (admin).

The dependency lends one pooled connection to the endpoint function: authentication (the one
statement of queries.py run here, not a client call) and the endpoint's own calls of the app's
AsyncClient (each with `conn=` that connection) share it, in one transaction, during which the
database acts for the token's tenant and scopes only (jobctl.authenticate; docs/security.md). It
is function-scoped (`Depends(..., scope="function")`, FastAPI 0.121+), so the connection goes back
to the pool when the endpoint returns, before the response is sent: a client that reads a large
page slowly holds a socket, never a database connection.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import psycopg
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from psycopg_pool import AsyncConnectionPool

from jobctl import errors, queries
from jobctl.api import error_handlers
from jobctl.client import AsyncClient
from jobctl.contract import SCOPES, TOKEN_RE

log = logging.getLogger("jobctl.api.auth")

# Declares the scheme in the OpenAPI document; the header itself is parsed below, so that a missing
# and a malformed header get distinct messages.
bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="An API token from `jobctl.create_api_token(tenant_id, scopes)`: scoped to one tenant "
    "(or, created with a NULL tenant, to all: an admin token) and to actions: " + ", ".join(SCOPES) + ".",
)


@dataclass(frozen=True)
class Caller:
    token_id: int
    tenant_id: str | None  # None: an admin token
    scopes: frozenset[str]  # all the token's scopes, not only the one checked
    conn: psycopg.AsyncConnection[Any]
    client: AsyncClient  # the endpoint's SQL work: its calls with conn=conn

    def may(self, scope: str) -> bool:
        return scope in self.scopes

    def tenant_for(self, requested: str | None, field: str) -> str:
        """The tenant a request acts for: the token's own, unless an admin token names one. field is the
        name the request gives it; the errors carry the database's codes for a NULL tenant (JC001) and
        another tenant's (42501, jobctl._require_tenant)."""
        if requested is None:
            if self.tenant_id is None:
                raise errors.InvalidInput(
                    f"{field} is required with an admin token", field=field, sqlstate="JC001"
                )
            return self.tenant_id
        if self.tenant_id is not None and requested != self.tenant_id:
            raise errors.Forbidden(
                f"this token may not act for tenant {requested}", field=field, sqlstate="42501"
            )
        return requested


def pool_of(request: Request) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = request.app.state.pool
    return pool


def _refuse(request: Request, err: errors.JobctlError, scope: str, token: str = "") -> errors.JobctlError:
    claimed = TOKEN_RE.match(token)  # the id is not secret (list_api_tokens shows it); the rest is
    log.warning(
        "authentication failed: %s",
        err,
        extra={
            "token_id": int(claimed.group(1)) if claimed else None,
            "path": request.url.path,
            "scope": scope,
            "client": request.client.host if request.client else None,
        },
    )
    return err


@asynccontextmanager
async def session(request: Request, token: str, scope: str) -> AsyncIterator[Caller]:
    """The Caller of a token that may perform scope, on a pooled connection in one transaction; else
    401 or 403 (logged). The API's bearer dependency and the dashboard's cookie both come here.
    One transaction: authenticate's effect (the functions act for the token's tenant only) lasts
    until its end, so a pooled connection never carries it to the next request."""
    async with pool_of(request).connection() as conn, conn.transaction():
        try:
            cur = await conn.execute(queries.AUTHENTICATE, {"token": token, "scope": scope})
            row = await cur.fetchone()
        except psycopg.Error as e:
            err = error_handlers.from_db(e)
            if isinstance(err, errors.Unauthorized | errors.Forbidden):
                raise _refuse(request, err, scope, token) from None
            raise
        assert row is not None  # authenticate returns a row or raises
        token_id, tenant_id, scopes = row
        yield Caller(
            token_id=int(token_id),
            tenant_id=tenant_id,
            scopes=frozenset(scopes),
            conn=conn,
            client=request.app.state.client,
        )


@dataclass(frozen=True)
class TokenSessions:
    """A request's token, checked for its form only: `open()` is `session` for it (401 or 403 there),
    as many times as the endpoint needs, each a pooled connection for one short transaction. For the
    long poll (api/long_poll.py), which must not hold a connection while it waits."""

    request: Request
    token: str
    scope: str

    def open(self) -> AbstractAsyncContextManager[Caller]:
        return session(self.request, self.token, self.scope)


def token_sessions(request: Request, scope: str) -> TokenSessions:
    """The request's TokenSessions for scope: 401 at once without a well-formed token."""
    assert scope in SCOPES, scope
    header = request.headers.get("authorization")
    if header is None:
        missing = "missing Authorization header: send Authorization: Bearer <token>"
        raise _refuse(request, error_handlers.NoToken(missing), scope)
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or any(c.isspace() for c in token):
        malformed = "malformed Authorization header: expected Bearer <token>"
        raise _refuse(request, error_handlers.NoToken(malformed), scope)
    return TokenSessions(request, token, scope)


def sessions_for(scope: str) -> Any:
    """`Depends` for an endpoint's TokenSessions."""

    async def dependency(
        request: Request,
        _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    ) -> TokenSessions:
        return token_sessions(request, scope)

    return Depends(dependency)


def caller_for(scope: str) -> Any:
    """`Depends` for an endpoint's Caller, if the request's token may perform scope (else 401 or 403).
    scope="function": the pooled connection is returned when the endpoint function returns, not after
    the response is sent (FastAPI's default for `yield`)."""

    checked = sessions_for(scope)

    async def dependency(sessions: TokenSessions = checked) -> AsyncIterator[Caller]:
        async with sessions.open() as caller:
            yield caller

    return Depends(dependency, scope="function")
