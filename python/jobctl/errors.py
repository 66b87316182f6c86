"""SQLSTATEs raised by the jobctl functions (docs/errors.md), mapped to exception classes and HTTP
statuses by code, never by message text."""

from __future__ import annotations

import re
from typing import Any

import psycopg


class JobctlError(Exception):
    """An error a jobctl function raised on purpose; `str()` is one readable line. `sqlstate`,
    `field` (the parameter at fault), `detail` and `hint` come from the database's error (DETAIL and
    HINT); `index`: which element of a submit_jobs batch, when the error is about one."""

    sqlstate = ""
    http_status = 400

    def __init__(
        self,
        message: str,
        *,
        sqlstate: str = "",
        field: str | None = None,
        detail: str | None = None,
        hint: str | None = None,
        index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate or self.sqlstate
        self.field = field
        self.detail = detail
        self.hint = hint
        self.index = index


class InvalidInput(JobctlError):
    http_status = 422


class PayloadTooLarge(JobctlError):
    http_status = 413


class OverLimit(JobctlError):
    """Over the tenant's quota (JC004) or rate (JC005): try again later."""

    http_status = 429


class IllegalTransition(JobctlError):
    http_status = 409


class NotFound(JobctlError):
    http_status = 404


class Unauthorized(JobctlError):
    http_status = 401


class Forbidden(JobctlError):
    http_status = 403


class TryAgain(JobctlError):
    http_status = 503


class WrongIsolation(JobctlError):
    http_status = 500


class PayloadKey(JobctlError):
    """No key, or the wrong one, for a tenant that encrypts its payloads (JC008): the service's
    JOBCTL_PAYLOAD_KEYS, not the request, is at fault."""

    http_status = 500


class WaitTimeout(JobctlError, TimeoutError):
    """Client.wait ran out of time before the job finished (no SQLSTATE: the client's own outcome).
    `job`: the job as last read (pending, running, or failed and waiting for its retry)."""

    def __init__(self, message: str, *, job: Any) -> None:
        super().__init__(message, field="timeout")
        self.job = job


BY_SQLSTATE: dict[str, type[JobctlError]] = {
    "JC001": InvalidInput,
    "JC002": PayloadTooLarge,
    "JC003": InvalidInput,
    "JC004": OverLimit,
    "JC005": OverLimit,
    "JC006": WrongIsolation,
    "JC007": WrongIsolation,
    "JC008": PayloadKey,
    "JC010": IllegalTransition,
    "JC011": TryAgain,  # the tenant moved to another shard: send the call again through the router
    "JC020": Unauthorized,
    "JC021": Forbidden,
    "42501": Forbidden,  # another tenant (jobctl._require_tenant), or no EXECUTE on the function
    "P0002": NotFound,
    "40001": TryAgain,
    "22P02": InvalidInput,  # a value that does not parse as its type (a cast in queries.py)
    "22007": InvalidInput,  # a timestamp that does not parse
    "22008": InvalidInput,  # a timestamp out of range
    "22003": InvalidInput,  # a number out of range for its type
    "22P05": InvalidInput,  # a \u0000 in JSON text
}


_BATCH_INDEX = re.compile(r"^jobs\[(\d+)\]\.?")


def first_line(text: str) -> str:
    """The first non-blank line of a message, stripped ("" for none)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def from_db(e: psycopg.Error) -> JobctlError | None:
    """The JobctlError for a database error with a known SQLSTATE, else None (a real failure).
    submit_jobs names the element at fault (`jobs[3].priority must be ...`): that index moves from
    the message and the field to `index`."""
    diag = e.diag
    cls = BY_SQLSTATE.get(diag.sqlstate or "")
    if cls is None:
        return None
    message = first_line(diag.message_primary or str(e))
    detail = diag.message_detail or ""
    # DETAIL's first line names the field; later lines carry figures (`pending: 5`, `retry_after: 1`)
    field = first_line(detail).removeprefix("field: ").strip() if detail.startswith("field: ") else None
    index = None
    if m := _BATCH_INDEX.match(message):
        index, message = int(m[1]), message[m.end() :]
    if field:
        field = _BATCH_INDEX.sub("", field)
    return cls(
        message,
        sqlstate=diag.sqlstate or "",
        field=field,
        detail=diag.message_detail,
        hint=diag.message_hint,
        index=index,
    )
