"""The worker's engine: claim in batches, run handlers, heartbeat, complete in batches, shut down gracefully.

One asyncio loop runs a few long-lived tasks over a small autocommit pool of its own:
- the claim loop: claims `max_jobs = free slots` (at most 1,000) in one statement; when that filled
  every free slot it claims again as soon as a slot frees, otherwise it waits for a NOTIFY hint or
  the poll interval, whichever comes first;
- the listener: a dedicated connection running LISTEN jobctl; a hint for one of our queues wakes the
  claim loop, which then looks again every HINT_LOOK seconds for HINT_WINDOW (the submits whose hint
  jobctl._notify skipped); after it reconnects the claim loop polls at once (hints may have been
  missed);
- the heartbeat: every lease/3 seconds one statement extends the lease of every running job and of
  every finished one whose completion waits in the outbox (until complete_jobs is sent for it); a
  running job whose heartbeat answers `cancelled` or `lost` is stopped and nothing is reported for it;
- the flusher: finished jobs wait in an outbox that one task sends with complete_jobs, as soon as the
  previous batch has its answer (whatever accumulated meanwhile goes in the next batch);
- a job's outcome is booked as its handler ends (at the end of an async handler's task, by a
  thread's done callback): a result goes to the outbox, a completion made by the job's own
  transaction is counted, with no other task per job. A job that needs more, a failure to report or a
  stop (its timeout, a heartbeat's answer, shutdown) to wait out, gets a supervisor task. An
  unexpected error on that path is logged with its traceback and fails the job for good.

A running job is known by its job_id and lease_epoch together. When the worker claims a job it is
still running (its lease was revoked while the worker did not hear, say during an outage longer than
the lease), the older attempt is stopped at once as `lost`, and it never touches the newer one's slot.

Handlers run as asyncio tasks (`async def`) or in a thread pool sized to the concurrency (`def`).
A thread cannot be interrupted: when its job times out, is cancelled, loses its lease or is given
back at shutdown, its `job.cancelled` is set and whatever it does afterwards is ignored (the
database fences any late completion), but it keeps its slot until it returns.

Every database call goes through one retry wrapper, which retries only what a retry can cure: a lost
or failed connection (no SQLSTATE, i.e. failed on the client side; class 08; 57P01/57P02/57P03, the
server shutting down or starting up), a pool timeout, and 40001/40P01 (serialization failure,
deadlock). It logs a warning and tries again after an exponential backoff with jitter (0.1 s doubling
to 5 s); the pools check connections before lending them, so a terminated backend or a server
restart is survived (the check is a round trip only when the socket has something to read, as a
terminated backend's or a server's shutting down has). Any other error is answered once, never
retried in a loop: a complete_jobs batch is sent again one job at a time (a job whose own completion
fails is failed: for good when its result was refused, SQLSTATE class 22 or 54, else with a retry);
a claim is logged and tried again after a pause that doubles from the poll interval up to
CLAIM_ERROR_MAX; a failed fail_job, release_job or heartbeat is logged with the job ids, and the job
comes back when its lease expires. Completions are retried until they get an answer, never dropped.
A claim whose answer is lost after it committed leaves its jobs leased to nobody: they come back
when their lease expires.

Shutdown. The first stop ends claiming at once: a claim still waiting for a connection or for its
next try is dropped; one already sent gets CLAIM_ANSWER_WAIT (2 s) to answer, and its jobs are given
back unrun (no answer by then: it is cancelled, and anything it claimed comes back with its lease).
Running jobs get the grace period, counted from the stop (a second stop ends it); then the rest are
stopped (an async handler gets CANCEL_WAIT, 2 s, to unwind) and given back, the waiting completions
are sent, and the pools close. Sync handlers' threads are not waited for (`jobctl worker` exits
without them, os._exit). How long `run()` takes after the first stop, at most:
- the database answers: max(grace, 2 s) + 2 s (an async handler that ignores its cancellation; else
  a fraction of a second after the grace, or at once when no job runs);
- it does not: max(grace, 3 s) + 31 s, as every call after the grace gives up SHUTDOWN_DB_WAIT
  (15 s) later, psycopg may take 10 s more to cancel a statement then in flight, background tasks
  get 1 s to end and the pools 5 s to close.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import random
import select
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

import psycopg
from psycopg import pq
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from jobctl import queries
from jobctl.db import connection_kwargs
from jobctl.errors import first_line
from jobctl.worker.job import AsyncConn, Conn, Job, LeaseLost, PermanentError, result_json

log = logging.getLogger("jobctl.worker")

APP_NAME = "jobctl-worker"
MAX_BATCH = 1000  # claim_job's and our completion batches' cap
BACKOFF_FIRST, BACKOFF_MAX = 0.1, 5.0
POOL_WAIT = 10.0  # seconds to wait for a pooled connection before counting it as a failed try
SHUTDOWN_DB_WAIT = 15.0  # after the grace period, how long shutdown keeps trying the database
CLAIM_ANSWER_WAIT = 2.0  # at a stop, how long a claim already sent gets to answer
CLAIM_ERROR_MAX = 30.0  # the longest pause after a claim error a retry cannot cure
LISTEN_CHECK = 30.0  # an idle listener checks its connection this often
# jobctl._notify sends one hint per queue at a time across sessions: a job whose submit skipped its
# hint may commit just after the claim the other hint caused, so look again this soon after a claim
# that found work
SECOND_LOOK = 0.01
# and a session sends one per queue per half-second window: after a hint, look again this often for
# that long, so that the jobs submitted later in its window wait no longer than this
HINT_LOOK, HINT_WINDOW = 0.05, 0.5
CANCEL_WAIT = 2.0  # how long a cancelled async handler gets to unwind (roll back) before we move on
# jobctl.tick(false) this often (one caller at a time per database does the work): orphans come back
# and schedules fire within about a second; after an error a retry cannot cure, this much later
TICK_EVERY, TICK_ERROR_WAIT = 0.25, 30.0
# SQLSTATEs a retry can cure, besides no SQLSTATE (a client-side connection failure) and class 08
RETRY_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "40001", "40P01"})
RESULT_REFUSED = ("22", "54")  # SQLSTATE classes by which a completion refuses a job's result
# A pool retries a failed connection with a doubling delay until this many seconds, then gives up and
# grows again when a caller waits (our retry wrapper always does): a short value bounds the lag between
# the server coming back and the pool noticing (the default, 300 s, lets the delay grow to minutes).
POOL_RECONNECT = 10.0

Handler = Callable[[Job], Any]
T = TypeVar("T")


class GaveUp(Exception):
    """The database stayed unreachable until the worker stopped waiting for it (shutdown)."""


@dataclass
class Stats:
    """What a worker did; `failed` and `dead` count fail_job answers, timeouts included."""

    claimed: int = 0
    completed: int = 0
    failed: int = 0
    dead: int = 0
    fenced: int = 0
    cancelled: int = 0
    timed_out: int = 0
    released: int = 0
    elapsed: float = 0.0

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = asdict(self)
        out["elapsed"] = round(self.elapsed, 3)
        out["jobs_per_s"] = round(self.completed / self.elapsed, 1) if self.elapsed > 0 else 0.0
        return out


@dataclass(eq=False, slots=True)
class _Slot:
    """A job whose handler is running: what the heartbeat extends and a stop acts on."""

    job: Job
    handler: asyncio.Future[Any] = field(init=False)  # its task, or its thread's future
    timer: asyncio.TimerHandle | None = None  # its timeout (jobs without one have no timer)
    supervised: bool = False  # a supervisor task reports it (else the handler's end does)
    ended: bool = False  # _handler_ended ran


def is_async_handler(handler: Handler) -> bool:
    """True for `async def` handlers (also callable objects with an async __call__)."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)  # noqa: B004 - the object's own __call__
    )


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


_json_decode = json.JSONDecoder().decode


def _json_loads(data: str | bytes) -> Any:
    """json.loads without its sniffing of the encoding (PostgreSQL's JSON text is UTF-8): a claim
    loads a payload per job."""
    return _json_decode(data if isinstance(data, str) else data.decode())


async def _configure(conn: AsyncConn) -> None:
    set_json_loads(_json_loads, conn)


def _bigint_array(values: Iterable[int]) -> str:
    """A PostgreSQL array literal for a `%s::bigint[]` parameter: psycopg's list dumper costs a
    regex search per element, and completions and heartbeats send two ids per job."""
    return "{" + ",".join(map(str, values)) + "}"


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def describe(exc: BaseException, *, one_line: bool = False) -> str:
    """`<ExcType>: <message>` (the type alone for an empty message), as stored in last_error;
    `one_line`: only the message's first line, for logs and one-line errors."""
    try:
        text = str(exc)
    except Exception as e:  # a broken __str__ must not hide the error it belongs to
        text = f"<str() failed: {type(e).__name__}>"
    message = first_line(text) if one_line else text.strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def retryable(exc: BaseException) -> bool:
    """True for the errors a retry can cure: a lost or failed connection, a pool timeout, 40001/40P01."""
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:  # failed on the client side: connecting, or a connection lost mid-call
        return isinstance(exc, psycopg.OperationalError)  # PoolTimeout included
    return state.startswith("08") or state in RETRY_SQLSTATES


def _error_fields(exc: BaseException) -> dict[str, Any]:
    """Log fields for an error: its first line, and its SQLSTATE when it has one."""
    fields: dict[str, Any] = {"error": describe(exc, one_line=True)}
    state = getattr(exc, "sqlstate", None)
    if state:
        fields["sqlstate"] = state
    return fields


class _Sending:
    """Whether a call's statement has been sent (and not failed): from then on its answer may hold
    what the database committed; before, the call is only waiting for a connection or its next try."""

    sent = False


def _rows(
    sql: str, params: dict[str, Any], sending: _Sending | None = None
) -> Callable[[AsyncConn], Awaitable[list[tuple[Any, ...]]]]:
    """A call of one statement for the retry wrapper: all its rows."""

    async def op(conn: AsyncConn) -> list[tuple[Any, ...]]:
        if sending is None:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()
        sending.sent = True
        try:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()
        except BaseException:
            sending.sent = False
            raise

    return op


def _value(sql: str, params: dict[str, Any]) -> Callable[[AsyncConn], Awaitable[Any]]:
    """A call of one statement for the retry wrapper: the first column of its row (None: no row)."""

    async def op(conn: AsyncConn) -> Any:
        cur = await conn.execute(sql, params)
        row = await cur.fetchone()
        return None if row is None else row[0]

    return op


class Worker:
    """Runs `handler` for jobs claimed from `queues` (None or empty: all queues).

    `await worker.run()` works until `request_stop()` (or SIGTERM/SIGINT when `handle_signals`):
    the first stop ends claiming and waits up to `grace` seconds for running jobs; the rest are
    cancelled and their leases given back (release_job: pending again, the attempt does not count).
    A second stop skips the wait. It returns the `Stats`.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        dsn: str,
        queues: list[str] | None = None,
        concurrency: int = 10,
        lease: float = 30.0,
        poll_interval: float = 1.0,
        grace: float = 30.0,
        worker_id: str | None = None,
        handle_signals: bool = True,
    ) -> None:
        if not 1 <= concurrency <= MAX_BATCH:
            raise ValueError(f"concurrency must be from 1 to {MAX_BATCH}")
        if lease <= 0 or poll_interval <= 0 or grace < 0:
            raise ValueError("lease and poll_interval must be positive, grace not negative")
        self.handler = handler
        self.is_async = is_async_handler(handler)
        self.dsn = dsn
        self.queues = sorted(set(queues)) if queues else None
        self.concurrency = concurrency
        self.lease = lease
        self.poll_interval = poll_interval
        self.grace = grace
        self.worker_id = worker_id or default_worker_id()
        self.handle_signals = handle_signals
        self.stats = Stats()
        self.crashed: BaseException | None = None  # a background task that died: exit non-zero
        self._stopping = False
        self._stop_at: float | None = None  # time.monotonic() of the first stop: the grace counts from it
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self._wake = asyncio.Event()
        self._hinted_until = 0.0  # time.monotonic() until which claims look again every HINT_LOOK
        self._slot_freed = asyncio.Event()
        self._flush_wake = asyncio.Event()
        self._closing = False
        self._busy = 0  # handlers still running (a stopped sync handler's thread included)
        # running jobs by job_id: the slot of the newest attempt; an older attempt's slot (a job claimed
        # again) is stopped at once and removed only by its own supervisor while it is still the one here
        self._active: dict[int, _Slot] = {}
        self._supervisors: set[asyncio.Task[None]] = set()
        self._idle: asyncio.Future[None] | None = None  # shutdown's wait: done when no job is left
        self._outbox: list[tuple[Job, str | None]] = []  # finished jobs waiting for complete_jobs
        self._sending: list[tuple[Job, str | None]] = []  # the batch the flusher is sending
        self._send_state = _Sending()  # whether that batch's statement is on the wire
        self._db_deadline: float | None = None
        self._pool: AsyncConnectionPool[AsyncConn] | None = None
        self._tx_pool: AsyncConnectionPool[AsyncConn] | None = None
        self._sync_tx_pool: ConnectionPool[Conn] | None = None
        self._executor: ThreadPoolExecutor | None = None

    # --- lifecycle

    def request_stop(self) -> None:
        """First call: stop claiming and let running jobs finish within the grace period. Later
        calls: stop waiting. Call it from the worker's event loop (signal handlers do)."""
        if not self._stopping:
            log.info("stopping: no new claims", extra={"grace": self.grace, "running": len(self._active)})
            self._begin_stop()
        else:
            log.info("stopping now: not waiting for running jobs", extra={"running": len(self._active)})
            self._hurry.set()

    def _begin_stop(self) -> None:
        if self._stop_at is None:
            self._stop_at = time.monotonic()
        self._stopping = True
        self._stop.set()

    @property
    def stuck_threads(self) -> int:
        """Sync handlers still running after run() returned (threads cannot be killed)."""
        return self._busy if not self.is_async else 0

    async def run(self) -> Stats:
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        if self.handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.request_stop)
        try:
            await self._open()
            log.info(
                "worker started",
                extra={
                    "worker_id": self.worker_id,
                    "queues": ",".join(self.queues) if self.queues else "*",
                    "concurrency": self.concurrency,
                    "handler_kind": "async" if self.is_async else "sync",
                },
            )
            await self._serve()
        finally:
            await self._close()
            if self.handle_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
            self.stats.elapsed = time.monotonic() - started
            log.info("worker stopped", extra=self.stats.summary())
        return self.stats

    async def _serve(self) -> None:
        background = [
            asyncio.create_task(self._listen(), name="jobctl-listen"),
            asyncio.create_task(self._heartbeat_loop(), name="jobctl-heartbeat"),
            asyncio.create_task(self._tick_loop(), name="jobctl-tick"),
        ]
        flusher = asyncio.create_task(self._flush_loop(), name="jobctl-flush")
        claimer = asyncio.create_task(self._claim_loop(), name="jobctl-claim")
        stop_wait = asyncio.create_task(self._stop.wait())
        watched = {stop_wait, claimer, flusher, *background}
        done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        for task in done - {stop_wait}:
            self._task_ended(task)
        stop_wait.cancel()
        self._begin_stop()
        try:
            if not claimer.done():
                # a stop ends claiming at once (a claim already sent: CLAIM_ANSWER_WAIT and a moment)
                await asyncio.wait({claimer})
                self._task_ended(claimer)
            await self._drain()
        finally:
            for task in background:
                task.cancel()
            # a statement being cancelled can take psycopg a while: not waited for beyond a moment
            await asyncio.wait(background, timeout=1.0)
            self._closing = True
            self._flush_wake.set()
            await asyncio.gather(flusher, return_exceptions=True)

    def _task_ended(self, task: asyncio.Task[Any]) -> None:
        """A long-lived task ended: a crash unless it returned because the worker is stopping."""
        error = task.exception() if not task.cancelled() else asyncio.CancelledError()
        if error is not None or not self._stopping:
            if self.crashed is None:
                self.crashed = error or RuntimeError(f"{task.get_name()} ended")
            log.error("worker task died; shutting down", exc_info=error, extra={"task": task.get_name()})

    async def _drain(self) -> None:
        """Wait for running jobs until the grace period (counted from the stop) ends, then stop the
        rest and give them back."""
        assert self._stop_at is not None
        left = self._stop_at + self.grace - time.monotonic()
        if (self._active or self._supervisors) and left > 0 and not self._hurry.is_set():
            if self._active:
                log.info(
                    "waiting for running jobs", extra={"running": len(self._active), "grace": self.grace}
                )
            self._idle = everyone = asyncio.get_running_loop().create_future()
            hurry = asyncio.ensure_future(self._hurry.wait())
            await asyncio.wait({everyone, hurry}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            self._idle = None
            hurry.cancel()
        self._db_deadline = time.monotonic() + SHUTDOWN_DB_WAIT
        while True:
            for slot in list(self._active.values()):
                self._request_job_stop(slot, "shutdown")  # a running one gets a supervisor
            if self._supervisors:
                await asyncio.gather(*self._supervisors, return_exceptions=True)
            elif self._active:
                await asyncio.sleep(0)  # a thread that has just ended: its done callback runs first
            else:
                return

    def _check_idle(self) -> None:
        """Wake shutdown's wait once no job runs and no report is pending."""
        if self._idle is not None and not self._active and not self._supervisors and not self._idle.done():
            self._idle.set_result(None)

    async def _open(self) -> None:
        # the worker's own calls; handlers' transactions get a pool of their own so that they can
        # never starve the heartbeat
        self._pool = self._async_pool("jobctl-worker", 2, 6, configure=_configure)
        await self._pool.open(wait=False)
        if self.is_async:
            self._tx_pool = self._async_pool("jobctl-worker-tx", 0, self.concurrency)
            await self._tx_pool.open(wait=False)
        else:
            self._sync_tx_pool = ConnectionPool(
                self.dsn,
                kwargs=connection_kwargs(self.dsn, APP_NAME, autocommit=True),
                min_size=0,
                max_size=self.concurrency,
                check=_check_sync,
                reconnect_timeout=POOL_RECONNECT,
                open=False,
                name="jobctl-worker-tx",
            )
            self._sync_tx_pool.open(wait=False)
            self._executor = ThreadPoolExecutor(self.concurrency, thread_name_prefix="jobctl-handler")

    def _async_pool(
        self,
        name: str,
        min_size: int,
        max_size: int,
        configure: Callable[[AsyncConn], Awaitable[None]] | None = None,
    ) -> AsyncConnectionPool[AsyncConn]:
        """Autocommit connections, checked before each use so that dead ones are replaced."""
        return AsyncConnectionPool(
            self.dsn,
            kwargs=connection_kwargs(self.dsn, APP_NAME, autocommit=True),
            min_size=min_size,
            max_size=max_size,
            check=_check_async,
            configure=configure,
            reconnect_timeout=POOL_RECONNECT,
            open=False,
            name=name,
        )

    async def _close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            if self._busy:
                log.warning("sync handlers still running after shutdown", extra={"threads": self._busy})
        closing: list[Awaitable[None]] = [p.close(timeout=5.0) for p in (self._tx_pool, self._pool) if p]
        if self._sync_tx_pool is not None:
            closing.append(asyncio.to_thread(self._sync_tx_pool.close, 5.0))
        await asyncio.gather(*closing)  # all at once: 5 s at most

    # --- the database, through one retry wrapper

    async def _db(
        self,
        what: str,
        op: Callable[[AsyncConn], Awaitable[T]],
        *,
        abort: Callable[[], bool] | None = None,
    ) -> T:
        """Run `op` on a pooled connection. Errors a retry can cure (`retryable`) are retried with
        backoff and jitter until it succeeds, `abort()` says to stop, or the shutdown deadline passes
        (GaveUp; after that deadline no call lasts longer); any other error is raised at once."""
        assert self._pool is not None
        delay = BACKOFF_FIRST
        while True:
            left = None if self._db_deadline is None else self._db_deadline - time.monotonic()
            if left is not None and left <= 0:
                raise GaveUp(f"{what}: shutting down, and the database did not answer in time")
            deadline = asyncio.timeout(left)
            try:
                async with deadline:
                    wait = POOL_WAIT if left is None else min(POOL_WAIT, left)
                    async with self._pool.connection(timeout=wait) as conn:
                        return await op(conn)
            except TimeoutError as e:
                if not deadline.expired():
                    raise
                raise GaveUp(f"{what}: shutting down, and the database did not answer in time") from e
            except psycopg.Error as e:
                if not retryable(e):
                    raise
                past_deadline = self._db_deadline is not None and time.monotonic() >= self._db_deadline
                if (abort is not None and abort()) or past_deadline:
                    raise GaveUp(f"{what}: {describe(e, one_line=True)}") from e
                pause = random.uniform(delay / 2, delay)
                if self._db_deadline is not None:
                    pause = min(pause, max(0.0, self._db_deadline - time.monotonic()))
                log.warning(
                    "database call failed; retrying",
                    extra={"call": what, **_error_fields(e), "retry_in": round(pause, 2)},
                )
                await asyncio.sleep(pause)
                delay = min(delay * 2, BACKOFF_MAX)

    # --- claiming

    async def _claim_loop(self) -> None:
        errors = 0  # claims in a row that failed with an error a retry cannot cure
        while not self._stopping:
            free = self.concurrency - self._busy
            if free <= 0:
                self._slot_freed.clear()
                await self._wait_any(self._slot_freed, self._stop)
                continue
            asked = min(free, MAX_BATCH)
            self._wake.clear()
            try:
                got = await self._claim(asked)
            except GaveUp:
                return
            except psycopg.Error as e:  # the retry wrapper retries the errors a retry can cure
                errors += 1
                pause = min(
                    self.poll_interval * 2 ** min(errors - 1, 16), max(self.poll_interval, CLAIM_ERROR_MAX)
                )
                log.error(
                    "claim failed; claiming again later",
                    extra={**_error_fields(e), "retry_in": round(pause, 2)},
                )
                await self._wait_any(self._stop, timeout=pause)
                continue
            errors = 0
            if got < asked:
                wait = SECOND_LOOK if got else self.poll_interval
                if time.monotonic() < self._hinted_until:
                    wait = min(wait, HINT_LOOK)
                await self._wait_any(self._wake, self._stop, timeout=min(wait, self.poll_interval))

    async def _claim(self, max_jobs: int) -> int:
        """One claim, which a stop cuts short: dropped while it waits for a connection or its next try;
        once sent, given CLAIM_ANSWER_WAIT to answer, and the jobs it brings are given back unrun."""
        params = {
            "worker_id": self.worker_id,
            "queues": self.queues,
            "max_jobs": max_jobs,
            "lease": timedelta(seconds=self.lease),
        }
        sending = _Sending()
        call = asyncio.ensure_future(
            self._db("claim_job", _rows(queries.CLAIM_JOB, params, sending), abort=lambda: self._stopping)
        )
        stop_wait = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({call, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_wait.cancel()
        if not call.done():
            if sending.sent:
                await asyncio.wait({call}, timeout=CLAIM_ANSWER_WAIT)
            if not call.done():
                was_sent = sending.sent
                call.cancel()  # psycopg asks the server to cancel a statement in flight
                call.add_done_callback(lambda c: c.cancelled() or c.exception())  # none goes unretrieved
                await asyncio.wait({call}, timeout=1.0)
                if was_sent:
                    log.warning(
                        "claim cancelled at shutdown without an answer; had it committed, its jobs"
                        " come back when their leases expire"
                    )
        if not call.done() or call.cancelled():
            return 0
        rows = call.result()  # GaveUp or psycopg.Error: to the claim loop
        # timeouts count from here (a retried claim: from its last try)
        claimed_at = asyncio.get_running_loop().time()
        log.debug("claimed", extra={"jobs": len(rows), "asked": max_jobs})
        self.stats.claimed += len(rows)
        jobs = [self._job(row) for row in rows]
        if self._stopping:
            if jobs:
                log.info("jobs claimed as the worker stopped: giving them back", extra={"jobs": len(jobs)})
            for job in jobs:
                self._track(self._release(job))
            return len(jobs)
        for job in jobs:
            self._start(job, claimed_at)
        return len(jobs)

    def _job(self, row: tuple[Any, ...]) -> Job:
        job_id, tenant_id, queue, payload, priority, attempt, max_attempts, epoch, expires, timeout = row
        return Job(
            job_id=int(job_id),
            tenant_id=tenant_id,
            queue=queue,
            payload=payload,
            priority=int(priority),
            attempt=int(attempt),
            max_attempts=int(max_attempts),
            lease_epoch=int(epoch),
            lease_expires_at=expires,
            timeout=None if timeout is None else float(timeout),
            _sync_pool=self._sync_tx_pool,
            _async_pool=self._tx_pool,
        )

    # --- running one job

    def _start(self, job: Job, claimed_at: float) -> None:
        loop = asyncio.get_running_loop()
        slot = _Slot(job)
        if self.is_async:
            slot.handler = loop.create_task(self._run_async(slot))
        else:
            slot.handler = loop.run_in_executor(self._executor, self.handler, job)
            slot.handler.add_done_callback(partial(self._thread_ended, slot))
        self._busy += 1
        if job.timeout is not None:
            slot.timer = loop.call_at(claimed_at + job.timeout, self._request_job_stop, slot, "timed_out")
        older = self._active.get(job.job_id)
        if older is not None:
            # claimed again, so the older attempt's lease is gone whether or not a heartbeat said so
            log.warning(
                "job claimed again while an older attempt runs; stopping that attempt",
                extra={**self._ids(job), "older_epoch": older.job.lease_epoch},
            )
            self._request_job_stop(older, "lost")
        self._active[job.job_id] = slot

    def _track(self, work: Awaitable[None]) -> None:
        """Run a job's supervisor (or its give-back) as a task that shutdown waits for."""
        task = asyncio.ensure_future(work)
        self._supervisors.add(task)
        task.add_done_callback(self._untrack)

    def _untrack(self, task: asyncio.Task[None]) -> None:
        self._supervisors.discard(task)
        self._check_idle()

    async def _run_async(self, slot: _Slot) -> None:
        """An async handler's task; it books the outcome itself as it ends (no done callback)."""
        try:
            value = await self.handler(slot.job)  # even a call that fails is the job's failure
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise  # asyncio lets the first two stop the loop; the last closes the unfinished task
        except BaseException as e:
            self._handler_ended(slot, None, e)  # the outcome is booked: the task itself ends quietly
        else:
            self._handler_ended(slot, value, None)

    def _thread_ended(self, slot: _Slot, handler: asyncio.Future[Any]) -> None:
        if handler.cancelled():
            self._handler_ended(slot, None, asyncio.CancelledError())
        else:
            error = handler.exception()
            self._handler_ended(slot, None if error is not None else handler.result(), error)

    def _handler_ended(self, slot: _Slot, value: Any, error: BaseException | None) -> None:
        """Free the slot and book the outcome; only one that needs the database gets a supervisor."""
        slot.ended = True
        self._busy -= 1
        self._slot_freed.set()
        if slot.timer is not None:
            slot.timer.cancel()
        if slot.supervised:
            return  # stopped: its supervisor reports
        self._forget(slot)
        try:
            work = self._report(slot.job, value, error)
        except Exception as e:
            work = self._supervisor_failed(slot, e)
        if work is not None:
            self._supervise(slot, work)

    def _request_job_stop(self, slot: _Slot, reason: str) -> None:
        """Stop a running handler: `cancelled`, `lost`, `timed_out` or `shutdown`. A handler that has
        already returned is left alone: its outcome stands (a fenced completion says the rest)."""
        if slot.handler.done():
            return
        slot.job._stop(reason)  # keeps the reason of a stop already asked for
        if slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None
        if not slot.supervised:
            self._supervise(slot, self._after_handler_stop(slot))
        if self.is_async:
            slot.handler.cancel()

    def _supervise(self, slot: _Slot, work: Coroutine[Any, Any, None]) -> None:
        slot.supervised = True
        self._track(self._supervised(slot, work))

    async def _supervised(self, slot: _Slot, work: Coroutine[Any, Any, None]) -> None:
        """Run what is left of a job's report. An unexpected error on the way fails the job for good
        rather than leaving it to its lease."""
        try:
            await work
        except Exception as e:
            await self._supervisor_failed(slot, e)
        finally:
            self._forget(slot)

    def _forget(self, slot: _Slot) -> None:
        """Stop heartbeating a job: only its own slot, never a newer attempt's."""
        if self._active.get(slot.job.job_id) is slot:
            del self._active[slot.job.job_id]
            self._check_idle()

    async def _supervisor_failed(self, slot: _Slot, error: Exception) -> None:
        job = slot.job
        log.error("job supervisor failed; failing the job for good", exc_info=error, extra=self._ids(job))
        self._request_job_stop(slot, "failed")
        self._forget(slot)
        try:
            await self._fail(job, f"worker error: {describe(error)}", retryable=False)
        except Exception:
            log.exception("could not fail job; it returns when its lease expires", extra=self._ids(job))

    async def _after_handler_stop(self, slot: _Slot) -> None:
        job, handler = slot.job, slot.handler
        if self.is_async:
            if not handler.done():
                await asyncio.wait({handler}, timeout=CANCEL_WAIT)  # let its transaction roll back
            if handler.done() and not slot.ended:  # cancelled before its first step: it never ran
                self._handler_ended(slot, None, asyncio.CancelledError())
        self._forget(slot)
        if job._completed:
            self.stats.completed += 1  # its own transaction completed it before the stop
        else:
            assert job._stop_reason is not None
            await self._after_stop(job, job._stop_reason)  # what a stopped handler did is ignored

    def _report(self, job: Job, value: Any, error: BaseException | None) -> Coroutine[Any, Any, None] | None:
        """Book the outcome of a handler that ended on its own. A result (or a completion made by the
        job's transaction) is booked at once; a failure is returned as the fail_job left to run."""
        if job._completed:
            self.stats.completed += 1  # its own transaction completed it
        elif error is None:
            try:
                result = result_json(value)
            except ValueError as e:
                return self._fail(job, str(e), retryable=False)
            self._outbox.append((job, result))
            self._flush_wake.set()
        elif isinstance(error, LeaseLost):
            self.stats.fenced += 1
            log.warning("job fenced: its lease was lost before it completed", extra=self._ids(job))
        else:
            log.debug("handler raised", exc_info=error, extra=self._ids(job))
            return self._fail(job, describe(error), retryable=not isinstance(error, PermanentError))
        return None

    async def _after_stop(self, job: Job, reason: str) -> None:
        ids = self._ids(job)
        if reason == "cancelled":
            self.stats.cancelled += 1
            log.info("job cancelled while running; handler stopped", extra=ids)
        elif reason == "lost":
            self.stats.fenced += 1
            log.warning("job lease lost; handler stopped", extra=ids)
        elif reason == "timed_out":
            self.stats.timed_out += 1
            log.warning("job timed out; handler stopped", extra={**ids, "timeout": job.timeout})
            await self._fail(job, f"timed out after {job.timeout:g}s", retryable=True)
        else:
            await self._release(job)

    @staticmethod
    def _ids(job: Job) -> dict[str, Any]:
        return {"job_id": job.job_id, "lease_epoch": job.lease_epoch, "attempt": job.attempt}

    async def _fail(self, job: Job, error: str, *, retryable: bool) -> None:
        params = {
            "job_id": job.job_id,
            "lease_epoch": job.lease_epoch,
            "error": error.replace("\x00", "\\0"),  # text cannot hold NUL
            "retryable": retryable,
        }
        try:
            state = await self._db("fail_job", _value(queries.FAIL_JOB, params))
        except (GaveUp, psycopg.Error) as e:
            log.error(
                "could not fail job; it returns when its lease expires",
                extra={**self._ids(job), **_error_fields(e), "job_error": first_line(error)},
            )
            return
        extra = {**self._ids(job), "error": first_line(error)}
        if state is None:
            self.stats.fenced += 1
            log.warning("job failure fenced: its lease was no longer current", extra=extra)
        elif state == "dead":
            self.stats.dead += 1
            log.warning("job dead", extra=extra)
        else:
            self.stats.failed += 1
            log.info("job failed; a retry is scheduled", extra=extra)

    async def _release(self, job: Job) -> None:
        params = {"job_id": job.job_id, "lease_epoch": job.lease_epoch}
        try:
            released = await self._db("release_job", _value(queries.RELEASE_JOB, params))
        except (GaveUp, psycopg.Error) as e:
            log.error(
                "could not release job; it returns when its lease expires",
                extra={**self._ids(job), **_error_fields(e)},
            )
            return
        if released:
            self.stats.released += 1
            log.info("job released at shutdown", extra=self._ids(job))
        else:
            self.stats.fenced += 1
            log.warning("job release fenced: its lease was no longer current", extra=self._ids(job))

    # --- completing in batches

    async def _flush_loop(self) -> None:
        while True:
            if not self._outbox:
                if self._closing:
                    return
                self._flush_wake.clear()
                await self._flush_wake.wait()
                continue
            batch, self._outbox = self._outbox[:MAX_BATCH], self._outbox[MAX_BATCH:]
            # heartbeats go on for the batch until its statement is sent (its rows are then locked)
            self._sending, self._send_state = batch, _Sending()
            try:
                await self._complete(batch)
            except GaveUp as e:
                unsent = len(batch) + len(self._outbox)
                log.error(
                    "completions not sent; those jobs run again after their lease",
                    extra={"jobs": unsent, "error": str(e)},
                )
                self._outbox.clear()
                return
            finally:
                self._sending = []

    async def _complete(self, batch: list[tuple[Job, str | None]]) -> None:
        batch.sort(key=lambda entry: entry[0].job_id)  # row locks in job_id order, as heartbeats take them
        results = [result for _, result in batch]
        params = {
            "job_ids": _bigint_array(job.job_id for job, _ in batch),
            "lease_epochs": _bigint_array(job.lease_epoch for job, _ in batch),
            # NULL when no job has a result: complete_jobs then skips joining the results
            "results": results if any(r is not None for r in results) else None,
        }
        try:
            rows = await self._db("complete_jobs", _rows(queries.COMPLETE_JOBS, params, self._send_state))
        except GaveUp:
            raise
        except psycopg.Error as e:
            log.error(
                "complete_jobs failed; completing one by one",
                extra={
                    "jobs": len(batch),
                    **_error_fields(e),
                    "job_ids": ",".join(str(j.job_id) for j, _ in batch[:20]),
                },
            )
            await self._complete_each(batch)
            return
        for (job, _), (_, completed) in zip(batch, rows, strict=True):
            self._completed(job, bool(completed))

    async def _complete_each(self, batch: list[tuple[Job, str | None]]) -> None:
        for job, result in batch:
            params = {"job_id": job.job_id, "lease_epoch": job.lease_epoch, "result": result}
            try:
                ok = await self._db("complete_job", _value(queries.COMPLETE_JOB, params))
            except GaveUp:
                raise
            except psycopg.Error as e:
                refused = (e.sqlstate or "")[:2] in RESULT_REFUSED  # the result: no retry would help
                log.error("could not complete job", extra={**self._ids(job), **_error_fields(e)})
                what = "result rejected" if refused else "completion failed"
                await self._fail(job, f"{what}: {describe(e, one_line=True)}", retryable=not refused)
                continue
            self._completed(job, bool(ok))

    def _completed(self, job: Job, completed: bool) -> None:
        if completed:
            self.stats.completed += 1
        else:
            self.stats.fenced += 1
            log.warning("job completion fenced: its lease was no longer current", extra=self._ids(job))

    # --- heartbeats

    async def _heartbeat_loop(self) -> None:
        loop = asyncio.get_running_loop()
        every = self.lease / 3
        next_at = loop.time() + every
        while True:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at = loop.time() + every
            targets = self._heartbeat_targets()
            if targets:
                await self._heartbeat(targets)

    def _heartbeat_targets(self) -> dict[int, tuple[Job, _Slot | None]]:
        """What to heartbeat, by job_id: running jobs not told to stop (with their slot), and finished
        ones waiting for complete_jobs to be sent (no slot). One entry per job_id (the answers carry
        only the job_id): its newest epoch, since an older one's lease is gone anyway."""
        targets: dict[int, tuple[Job, _Slot | None]] = {}
        waiting = self._outbox if self._send_state.sent else [*self._sending, *self._outbox]
        for job, _ in waiting:
            known = targets.get(job.job_id)
            if known is None or known[0].lease_epoch < job.lease_epoch:
                targets[job.job_id] = (job, None)
        for slot in self._active.values():
            known = targets.get(slot.job.job_id)
            if slot.job._stop_reason is None and (
                known is None or known[0].lease_epoch < slot.job.lease_epoch
            ):
                targets[slot.job.job_id] = (slot.job, slot)
        return targets

    async def _heartbeat(self, targets: dict[int, tuple[Job, _Slot | None]]) -> None:
        ordered = sorted(targets)  # row locks in job_id order, as complete_jobs takes them
        params = {
            "job_ids": _bigint_array(ordered),
            "lease_epochs": _bigint_array(targets[job_id][0].lease_epoch for job_id in ordered),
            "extend": timedelta(seconds=self.lease),
        }
        try:
            rows = await self._db("heartbeat", _rows(queries.HEARTBEATS, params))
        except (GaveUp, psycopg.Error) as e:
            log.error("heartbeat failed", extra={"jobs": len(ordered), **_error_fields(e)})
            return
        for job_id, status in rows:
            if status == "ok" or job_id not in targets:
                continue
            job, slot = targets[job_id]
            if slot is None:  # a finished job: its completion will be fenced and counted then
                log.debug("heartbeat of a finished job answered %s", status, extra=self._ids(job))
            elif self._active.get(job_id) is slot:
                self._request_job_stop(slot, status)

    # --- periodic work

    async def _tick_loop(self) -> None:
        """Drive jobctl.tick(false): promotion, reaping, schedules, the queue tables' upkeep. A failed
        tick is logged and tried again later; it never stops the worker."""
        while True:
            try:
                await self._db("tick", _value(queries.TICK, {}))
            except GaveUp:
                return
            except psycopg.Error as e:
                log.warning(
                    "tick failed; trying again later", extra={**_error_fields(e), "retry_in": TICK_ERROR_WAIT}
                )
                await asyncio.sleep(TICK_ERROR_WAIT)
                continue
            await asyncio.sleep(TICK_EVERY)

    # --- wake-ups

    async def _listen(self) -> None:
        delay = BACKOFF_FIRST
        first = True
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.dsn, **connection_kwargs(self.dsn, APP_NAME, autocommit=True)
                )
                async with conn:
                    await conn.execute(queries.LISTEN)
                    if not first:
                        log.info("listener reconnected; polling at once")
                        self._wake.set()
                    first, delay = False, BACKOFF_FIRST
                    await self._receive(conn)
            except psycopg.Error as e:
                if retryable(e):
                    pause = random.uniform(delay / 2, delay)
                    delay = min(delay * 2, BACKOFF_MAX)
                    message = "listener lost its connection; reconnecting"
                else:  # not a lost connection: try again much later (claims poll meanwhile)
                    pause = LISTEN_CHECK
                    message = "listener failed; polling only until it reconnects"
                log.warning(message, extra={**_error_fields(e), "retry_in": round(pause, 2)})
                await asyncio.sleep(pause)

    async def _receive(self, conn: AsyncConn) -> None:
        while True:
            async for note in conn.notifies(timeout=LISTEN_CHECK):
                if self.queues is None or note.payload in self.queues:
                    self._hinted_until = time.monotonic() + HINT_WINDOW
                    self._wake.set()
            await conn.execute(queries.PING)  # an idle connection: prove it is still there

    @staticmethod
    async def _wait_any(*events: asyncio.Event, timeout: float | None = None) -> None:
        waits = [asyncio.create_task(e.wait()) for e in events]
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()


async def run(handler: Handler, *, dsn: str, **options: Any) -> Stats:
    """Run a worker until SIGTERM/SIGINT (see `Worker` for the options) and return its stats."""
    return await Worker(handler, dsn=dsn, **options).run()
