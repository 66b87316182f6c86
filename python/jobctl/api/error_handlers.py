"""One JSON shape for every 4xx and 5xx answer (models.ErrorBody), and the handlers that produce it.

Database errors are mapped by SQLSTATE (jobctl.errors.from_db), never by message text; a 429's
Retry-After is the `retry_after: <seconds>` line of the error's DETAIL (structured, for machines). A
database that cannot be reached, or a statement cut short by the API's statement_timeout or
lock_timeout, answers 503 with Retry-After; a request body nested too deeply for the parsers, the
same 422 as the database's own depth bound; anything unexpected a generic 500, logged with its
traceback on the server only.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import psycopg
import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.responses import JSONResponse
from pydantic_core import PydanticSerializationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobctl import errors
from jobctl.api import audit

log = logging.getLogger("jobctl.api")

# The short `error` code: by SQLSTATE where one says more than its class, else by class.
CODE_BY_SQLSTATE = {
    "JC003": "invalid_backoff",
    "JC004": "over_quota",
    "JC005": "rate_limited",
    "JC020": "invalid_token",
    "JC021": "insufficient_scope",
    "40001": "try_again",
}
CODE_BY_CLASS: dict[type[errors.JobctlError], str] = {
    errors.InvalidInput: "invalid_request",
    errors.PayloadTooLarge: "payload_too_large",
    errors.OverLimit: "over_limit",
    errors.IllegalTransition: "illegal_transition",
    errors.NotFound: "not_found",
    errors.Unauthorized: "unauthorized",
    errors.Forbidden: "forbidden",
    errors.TryAgain: "try_again",
}
CODE_BY_STATUS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}
_UNAVAILABLE_RETRY_AFTER = 2
# A database that cannot be reached: the server's own SQLSTATE when it sent one (57P03 starting up,
# 53300 too many clients, ...), else connection_failure
_UNAVAILABLE_SQLSTATE = "08006"
# A statement the API's own session settings cut short: the database is busy, not the request wrong
BUSY = {
    "57014": "the database did not answer within the API's statement_timeout; try again shortly",
    "55P03": "a row or table this request needs is locked (the API's lock_timeout); try again shortly",
}
_BUSY_RETRY_AFTER = 1
# jobctl._too_deep's bound (payloads and results). The database refuses a value deeper than this
# (JC001, 422); the API's parsers give up deeper still (pydantic at 255 levels, Python's json near
# 1,000), and those bodies get the database's very answer, so that every depth past the bound is
# answered alike.
MAX_JSON_DEPTH = 100
_RECURSION_ERRORS = {"recursion_loop", "recursion_depth_exceeded"}  # pydantic's error types


def body(
    error: str, message: str, field: str | None = None, sqlstate: str | None = None, **extra: Any
) -> dict[str, Any]:
    return {"error": error, "message": message, "field": field, "sqlstate": sqlstate, **extra}


def answer(
    status: int,
    error: str,
    message: str,
    field: str | None = None,
    sqlstate: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """The error body as the response of that status."""
    return JSONResponse(body(error, message, field, sqlstate, **extra), status_code=status, headers=headers)


# The wait a 429 (JC004/JC005) asks for: a line `retry_after: <seconds>` of the error's DETAIL, which
# the SQL writes for machines (message and hint are for people, and never parsed)
_RETRY_AFTER = re.compile(r"^retry_after:\s*(\d+(?:\.\d*)?)\s*$", re.MULTILINE)


def retry_after(detail: str | None) -> int:
    """Whole seconds to wait: `retry_after: N` in the database error's DETAIL, rounded up; else 1."""
    found = _RETRY_AFTER.search(detail or "")
    return max(1, math.ceil(float(found.group(1)))) if found else 1


def from_db(
    e: psycopg.Error, params: Mapping[str, Any] | None = None, sent_as: Mapping[str, str] | None = None
) -> errors.JobctlError | None:
    """jobctl.errors.from_db, in the client's words: a field the SQL names by its own parameter name
    (`state`, `before_id`) is named as the request sent it (sent_as: SQL name -> query parameter, path
    parameter or JSON key), in `field` and at the head of the message. Any other data exception
    (SQLSTATE class 22) is the request's fault too, and so is text that psycopg will not send (a NUL,
    never sent): JC001, the database's code for a control character, naming the parameter in params
    that holds it."""
    err = errors.from_db(e)
    if err is None:
        if not isinstance(e, psycopg.DataError):
            return None
        sqlstate, field = e.diag.sqlstate or "", None
        message = errors.first_line(e.diag.message_primary or str(e))
        if not sqlstate:
            field = next((k for k, v in (params or {}).items() if isinstance(v, str) and "\x00" in v), None)
            if field is not None:
                sqlstate, message = "JC001", f"{field} must not contain a NUL character"
        err = errors.InvalidInput(message, sqlstate=sqlstate, field=field)
    name = (sent_as or {}).get(err.field or "")
    if name is None or err.field is None:
        return err
    message = re.sub(rf"^{re.escape(err.field)}\b", name, str(err))
    return type(err)(
        message, sqlstate=err.sqlstate, field=name, detail=err.detail, hint=err.hint, index=err.index
    )


class NoToken(errors.Unauthorized):
    """No bearer token, or a header that is not `Bearer <token>`: refused before the database is asked,
    with the SQLSTATE it gives any token it does not know (JC020), but the body's `error` is
    `unauthorized` and WWW-Authenticate has no error code (RFC 6750, 3.1)."""

    sqlstate = "JC020"


def error_response(err: errors.JobctlError, detail: str | None = None) -> JSONResponse:
    """The answer to err; detail, the DETAIL of the database error it came from (see retry_after), is
    err's own unless given."""
    if isinstance(err, NoToken):
        code = "unauthorized"
    else:
        code = CODE_BY_SQLSTATE.get(err.sqlstate) or CODE_BY_CLASS.get(type(err), "internal_error")
    headers: dict[str, str] = {}
    if err.http_status == 401:
        headers["WWW-Authenticate"] = (
            "Bearer" if isinstance(err, NoToken) else 'Bearer realm="jobctl", error="invalid_token"'
        )
    elif err.sqlstate == "JC021":
        headers["WWW-Authenticate"] = 'Bearer realm="jobctl", error="insufficient_scope"'
    if err.http_status in (429, 503):
        headers["Retry-After"] = str(retry_after(detail or err.detail))
    return answer(err.http_status, code, str(err), err.field, err.sqlstate or None, headers)


def too_deep(field: str) -> JSONResponse:
    """The answer to a request value nested too deeply to parse: the database's JC001 answer."""
    return answer(
        422, "invalid_request", f"{field} is nested more than {MAX_JSON_DEPTH} levels deep", field, "JC001"
    )


# The tokens of JSON text that matter for nesting: strings (a key when a colon follows) and brackets
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{}]')


def deepest_field(raw: bytes) -> str:
    """The key of the top-level object whose value nests deepest in JSON text; "body" when there is
    none. For a body whose parse ran out of stack, so no parsed value says where it is deep."""
    depth = deepest = 0
    key: str | None = None
    field: str | None = None
    for token in _JSON_TOKEN.findall(raw):
        if token in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest, field = depth, key
        elif token in (b"]", b"}"):
            depth -= 1
        elif depth == 1 and token.endswith(b":"):
            try:
                key = str(json.loads(token[:-1]))
            except ValueError:
                key = None
    return field or "body"


def internal_error(message: str = "internal server error") -> JSONResponse:
    return answer(500, "internal_error", message)


def body_too_large(limit: int | None = None, message: str | None = None) -> JSONResponse:
    """413 for a request body over the API's limit: JC002, the database's code for a payload too large."""
    message = message or f"the request body is over {limit} bytes"
    return answer(413, "payload_too_large", message, "body", "JC002")


async def _jobctl_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, errors.JobctlError)
    if exc.http_status == 500:  # e.g. JC006/JC007: cannot happen on the API's autocommit sessions
        log.error("%s %s: %s", request.method, request.url.path, exc, extra={"sqlstate": exc.sqlstate})
        return internal_error()
    return error_response(exc)


async def _db_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, psycopg.Error)
    where, sqlstate = f"{request.method} {request.url.path}", exc.diag.sqlstate or ""
    if sqlstate in BUSY:
        log.warning("%s: %s", where, errors.first_line(str(exc)), extra={"sqlstate": sqlstate})
        return answer(
            503, "busy", BUSY[sqlstate], sqlstate=sqlstate, headers={"Retry-After": str(_BUSY_RETRY_AFTER)}
        )
    err = from_db(exc)
    if err is not None:
        return await _jobctl_error(request, err)
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        log.warning("%s: database unavailable: %s", where, str(exc).strip())
        return answer(
            503,
            "unavailable",
            "the database is unavailable; try again shortly",
            sqlstate=exc.diag.sqlstate or _UNAVAILABLE_SQLSTATE,
            headers={"Retry-After": str(_UNAVAILABLE_RETRY_AFTER)},
        )
    log.error("%s: unexpected database error", where, exc_info=exc)
    return internal_error()


def _field(loc: tuple[int | str, ...]) -> str:
    parts = loc[1:] if loc and loc[0] in ("body", "query", "path", "header", "cookie") else loc
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}" if out else str(p)
    return out or "body"


def _reason(e: dict[str, Any]) -> str:
    if e["type"] == "extra_forbidden":
        return "unknown field"
    if e["type"] == "missing":
        return "required"
    return str(e["msg"]).removeprefix("Value error, ")


def validation_sqlstate(field: str | None) -> str:
    """The SQLSTATE of a request refused before the database saw it: the one the database raises for
    the same field (docs/errors.md), JC003 for the backoff and JC001 for everything else."""
    return "JC003" if field is not None and (field == "backoff" or field.startswith("backoff.")) else "JC001"


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    found = list(exc.errors())
    deep = next((e for e in found if e["type"] in _RECURSION_ERRORS), None)
    if deep is not None:  # only the top-level field: the error's loc is one item per level
        return too_deep(_field(tuple(deep["loc"])[:2]))
    bad_json = next((e for e in found if e["type"] == "json_invalid"), None)
    if bad_json is not None:
        where = bad_json["loc"][1] if len(bad_json["loc"]) > 1 else "?"
        why = bad_json.get("ctx", {}).get("error", "JSON decode error")
        message = f"the request body is not valid JSON: {why} at character {where}"
        return answer(400, "invalid_json", message, "body", "22P02")  # what the database answers such text
    items = [{"field": _field(tuple(e["loc"])), "reason": _reason(e)} for e in found]
    first = items[0] if items else {"field": None, "reason": "invalid request"}
    more = f" (and {len(items) - 1} more)" if len(items) > 1 else ""
    sqlstate = validation_sqlstate(first["field"])
    code = CODE_BY_SQLSTATE.get(sqlstate, "invalid_request")
    return answer(
        422, code, f"{first['field']}: {first['reason']}{more}", first["field"], sqlstate, errors=items
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if isinstance(exc.__cause__, RecursionError):  # FastAPI's 400 for a body json.loads ran out of stack on
        try:
            field = deepest_field(await request.body())  # the body FastAPI read, kept by the request
        except RuntimeError:
            field = "body"
        return too_deep(field)
    if exc.status_code == 413:  # limits.BodyTooLarge: a chunked body past the limit
        return body_too_large(message=str(exc.detail))
    code = CODE_BY_STATUS.get(exc.status_code, f"http_{exc.status_code}")
    message = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
    return answer(exc.status_code, code, message, headers=exc.headers)


async def _unserializable(request: Request, exc: Exception) -> JSONResponse:
    """A response the API could not build or serialize: a value read from the database that its
    models refuse or that nests too deeply for the serializer (pydantic stops at 255 levels). Not the
    request's fault, so 500, but one that says what failed."""
    log.error("%s %s: cannot serialize the response", request.method, request.url.path, exc_info=exc)
    return internal_error(
        "the response could not be serialized: a stored value is nested too deeply or not valid JSON"
    )


def _audited(handler: Callable[[Request, Exception], Awaitable[JSONResponse]]) -> Any:
    """The handler, its answer also logged as the refusal of the request's audited action (audit)."""

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        response = await handler(request, exc)
        audit.refused(request, response.status_code)
        return response

    return handle


class CatchAll:
    """Answers an unexpected exception with a generic 500 and logs it with its traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracking)
        except Exception:
            log.exception("%s %s: unexpected error", scope.get("method"), scope.get("path"))
            if started:
                raise
            await internal_error()(scope, receive, send)


def install(app: FastAPI) -> None:
    # request bodies are never the response errors (they are RequestValidationError, or an HTTPException)
    for error, handler in (
        (errors.JobctlError, _jobctl_error),
        (psycopg.Error, _db_error),
        (RequestValidationError, _validation_error),
        (StarletteHTTPException, _http_error),
        (ResponseValidationError, _unserializable),
        (pydantic.ValidationError, _unserializable),
        (PydanticSerializationError, _unserializable),
        (RecursionError, _unserializable),
    ):
        app.add_exception_handler(error, _audited(handler))
    app.add_middleware(CatchAll)
