"""Bounds on what one client may cost. Request bodies over a limit are refused with 413 before
they are parsed: at once when the Content-Length says so, else as soon as the bytes read pass the
limit (a chunked body). List requests run at most so many at once per token's tenants (429)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobctl import errors
from jobctl.api.error_handlers import body_too_large


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over {limit} bytes")


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await body_too_large(self.max_bytes)(scope, receive, send)
            return
        received = 0

        async def receive_limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)  # answered by the HTTPException handler
            return message

        await self.app(scope, receive_limited, send)


class TenantPermits:
    """At most `per_tenant` requests of a kind (`what`: list requests, long polls) of one token's
    tenants (a tenant token: its tenant; admin tokens: one set, every tenant) run at once in this
    process; one more answers 429 with Retry-After at once. No queue: a waiting list request would
    hold its pooled connection, which is what the cap saves for the other tenants. One event loop,
    so plain counters suffice."""

    def __init__(self, per_tenant: int, what: str = "list requests") -> None:
        self.per_tenant = per_tenant
        self.what = what  # for the 429's message
        self.running: dict[str | None, int] = {}

    @contextmanager
    def permit(self, tenant_id: str | None) -> Iterator[None]:
        running = self.running.get(tenant_id, 0)
        if running >= self.per_tenant:
            raise errors.OverLimit(
                f"this tenant already has {running} {self.what} running, the most at once; "
                "retry after the Retry-After seconds"
            )
        self.running[tenant_id] = running + 1
        try:
            yield
        finally:
            left = self.running[tenant_id] - 1
            if left:
                self.running[tenant_id] = left
            else:
                del self.running[tenant_id]  # no entry per tenant ever seen
