"""The worker's database calls: its pool, and the one retry wrapper every call goes through.

The wrapper retries only what a retry can cure: a lost or failed connection (no SQLSTATE, i.e.
failed on the client side; class 08; 57P01/57P02/57P03, the server shutting down or starting up), a
pool timeout, and 40001/40P01 (serialization failure, deadlock). It logs a warning and tries again
after an exponential backoff with jitter (0.1 s doubling to 1 s: after a restart of the server the
worker works again within about a second of its return); the pools check connections before
lending them, so a terminated backend or a server restart is survived (the check is a round trip
only when the socket has something to read, as a terminated backend's or a server's shutting down
has). Any other error is raised to the caller at once, which answers it once, never in a loop.
After `deadline` is set (shutdown), no call lasts beyond it: it raises GaveUp.
"""

from __future__ import annotations

import asyncio
import logging
import select
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

import psycopg
from psycopg import pq
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from jobctl.db import cap_pool_backoff, connection_kwargs
from jobctl.errors import first_line
from jobctl.waiting import reconnect_pauses
from jobctl.worker.job import AsyncConn, Conn

log = logging.getLogger("jobctl.worker")

APP_NAME = "jobctl-worker"
POOL_WAIT = 10.0  # seconds to wait for a pooled connection before counting it as a failed try
# SQLSTATEs a retry can cure, besides no SQLSTATE (a client-side connection failure) and class 08
RETRY_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "40001", "40P01"})
# A pool retries a failed connection with a doubling delay until this many seconds, then gives up and
# grows again when a caller waits (our retry wrapper always does): a short value bounds the lag between
# the server coming back and the pool noticing (the default, 300 s, lets the delay grow to minutes).
POOL_RECONNECT = 10.0

T = TypeVar("T")


class GaveUp(Exception):
    """The database stayed unreachable until the worker stopped waiting for it (shutdown)."""


def describe(exc: BaseException, *, one_line: bool = False) -> str:
    """`<ExcType>: <message>` (the type alone for an empty message), as stored in last_error;
    `one_line`: only the message's first line, for logs and one-line errors."""
    try:
        text = str(exc)
    except Exception as e:  # a broken __str__ must not hide the error it belongs to
        text = f"<str() failed: {type(e).__name__}>"
    message = first_line(text) if one_line else text.strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


# What jobctl.fail_job keeps of a traceback: its last 8,192 characters ('...' marks a cut).
TRACEBACK_KEPT = 8192


def trace(exc: BaseException) -> str | None:
    """A handler's exception's traceback as Python prints it (chained exceptions first, the innermost
    frame last, then `<ExcType>: <message>`), for fail_job's traceback. Only its last TRACEBACK_KEPT + 1
    characters are sent: fail_job keeps the last TRACEBACK_KEPT, and the one more tells it to mark the
    cut. None when it cannot be formatted (a broken __str__ is formatted as Python prints it)."""
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # a traceback must never stop the failure from being reported
        return None
    return text[-(TRACEBACK_KEPT + 1) :].replace("\x00", "\\0") or None  # text cannot hold NUL


def retryable(exc: BaseException) -> bool:
    """True for the errors a retry can cure: a lost or failed connection, a pool timeout, 40001/40P01."""
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:  # failed on the client side: connecting, or a connection lost mid-call
        return isinstance(exc, psycopg.OperationalError)  # PoolTimeout included
    return state.startswith("08") or state in RETRY_SQLSTATES


def error_fields(exc: BaseException) -> dict[str, Any]:
    """Log fields for an error: its first line, and its SQLSTATE when it has one."""
    fields: dict[str, Any] = {"error": describe(exc, one_line=True)}
    state = getattr(exc, "sqlstate", None)
    if state:
        fields["sqlstate"] = state
    return fields


def bigint_array(values: Iterable[int]) -> str:
    """A PostgreSQL array literal for a `%s::bigint[]` parameter: psycopg's list dumper costs a
    regex search per element, and completions and heartbeats send two ids per job."""
    return "{" + ",".join(map(str, values)) + "}"


class Sending:
    """Whether a call's statement has been sent (and not failed): from then on its answer may hold
    what the database committed; before, the call is only waiting for a connection or its next try."""

    sent = False


def rows(
    sql: str, params: dict[str, Any], sending: Sending | None = None
) -> Callable[[AsyncConn], Awaitable[list[tuple[Any, ...]]]]:
    """A call of one statement for the retry wrapper: all its rows."""

    state = sending or Sending()  # none: a state no one reads

    async def op(conn: AsyncConn) -> list[tuple[Any, ...]]:
        state.sent = True
        try:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()
        except BaseException:
            state.sent = False
            raise

    return op


def value(sql: str, params: dict[str, Any]) -> Callable[[AsyncConn], Awaitable[Any]]:
    """A call of one statement for the retry wrapper: the first column of its row (None: no row)."""

    async def op(conn: AsyncConn) -> Any:
        cur = await conn.execute(sql, params)
        row = await cur.fetchone()
        return None if row is None else row[0]

    return op


def _quiet(conn: Conn | AsyncConn) -> bool:
    """True when an idle connection looks alive and nothing waits on its socket. A terminated backend
    or a server shutting down sends its error and closes the socket, which then reads."""
    try:
        if conn.pgconn.status != pq.ConnStatus.OK:
            return False
        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN)
        return not poller.poll(0)
    except (OSError, psycopg.Error):
        return False


# The pools' check before lending a connection. psycopg_pool's own is a round trip to the server, as
# costly as the call it guards; it runs only when the socket is not quiet.
async def _check_async(conn: AsyncConn) -> None:
    if not _quiet(conn):
        await AsyncConnectionPool.check_connection(conn)


def _check_sync(conn: Conn) -> None:
    if not _quiet(conn):
        ConnectionPool.check_connection(conn)


def _pool_options(dsn: str, name: str) -> dict[str, Any]:
    """Autocommit connections, checked before each use so that dead ones are replaced; reconnect
    attempts at most RECONNECT_MAX apart (jobctl.db.cap_pool_backoff)."""
    cap_pool_backoff()
    kwargs = connection_kwargs(dsn, APP_NAME, autocommit=True)
    return {"kwargs": kwargs, "reconnect_timeout": POOL_RECONNECT, "open": False, "name": name}


def async_pool(dsn: str, name: str, min_size: int, max_size: int) -> AsyncConnectionPool[AsyncConn]:
    """The worker's own calls' pool and async handlers' transactions' (`_pool_options`)."""
    return AsyncConnectionPool(
        dsn, min_size=min_size, max_size=max_size, check=_check_async, **_pool_options(dsn, name)
    )


def sync_pool(dsn: str, name: str, max_size: int) -> ConnectionPool[Conn]:
    """Sync handlers' transactions' pool (`_pool_options`)."""
    return ConnectionPool(dsn, min_size=0, max_size=max_size, check=_check_sync, **_pool_options(dsn, name))


class Database:
    """The worker's own calls (claims, reports, heartbeats, ticks) over a small pool of its own;
    handlers' transactions use other pools, so that they can never starve the heartbeat."""

    def __init__(self, dsn: str) -> None:
        self.pool = async_pool(dsn, "jobctl-worker", 2, 6)
        self.deadline: float | None = None  # time.monotonic() after which every call gives up (shutdown)

    async def call(
        self,
        what: str,
        op: Callable[[AsyncConn], Awaitable[T]],
        *,
        abort: Callable[[], bool] | None = None,
    ) -> T:
        """Run `op` on a pooled connection. Errors a retry can cure (`retryable`) are retried with
        backoff and jitter until it succeeds, `abort()` says to stop, or the deadline passes (GaveUp;
        after the deadline no call lasts longer); any other error is raised at once."""
        pauses: Iterator[float] | None = None  # the backoff, from the first retry on
        while True:
            left = None if self.deadline is None else self.deadline - time.monotonic()
            if left is not None and left <= 0:
                raise GaveUp(f"{what}: shutting down, and the database did not answer in time")
            deadline = asyncio.timeout(left)
            try:
                async with deadline:
                    wait = POOL_WAIT if left is None else min(POOL_WAIT, left)
                    async with self.pool.connection(timeout=wait) as conn:
                        return await op(conn)
            except TimeoutError as e:
                if not deadline.expired():
                    raise
                raise GaveUp(f"{what}: shutting down, and the database did not answer in time") from e
            except psycopg.Error as e:
                if not retryable(e):
                    raise
                past_deadline = self.deadline is not None and time.monotonic() >= self.deadline
                if (abort is not None and abort()) or past_deadline:
                    raise GaveUp(f"{what}: {describe(e, one_line=True)}") from e
                pauses = pauses or reconnect_pauses()
                pause = next(pauses)
                if self.deadline is not None:
                    pause = min(pause, max(0.0, self.deadline - time.monotonic()))
                log.warning(
                    "database call failed; retrying",
                    extra={"call": what, **error_fields(e), "retry_in": round(pause, 2)},
                )
                await asyncio.sleep(pause)
