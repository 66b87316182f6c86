"""What a handler sees: the claimed `Job`, its exactly-once `transaction()`, and the exceptions; how a
claimed payload is decoded and a result encoded."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from jobctl import queries, tracing
from jobctl.client.rows import Batch, json_depth
from jobctl.errors import first_line
from jobctl.worker import durable

Conn = psycopg.Connection[tuple[Any, ...]]
AsyncConn = psycopg.AsyncConnection[tuple[Any, ...]]


class PermanentError(Exception):
    """Raise from a handler to fail the job without a retry (it goes to `dead`)."""


class ChildFailed(PermanentError):
    """`job.spawn_and_wait`: the child job ended dead or cancelled (`child_id`, `state`). A
    PermanentError: every later run of the parent reads the same saved end, so a retry cannot help;
    catch it to go on without the child's result."""

    def __init__(self, message: str, child_id: int, state: str) -> None:
        super().__init__(message)
        self.child_id, self.state = child_id, state


class LeaseLost(Exception):
    """The job's lease is no longer ours (cancelled, reaped or taken over): its completion was fenced.

    Raised on leaving `job.transaction()`, whose writes are then rolled back. Let it propagate: the
    worker counts the job as fenced and reports nothing for it."""


class ResultRefused(PermanentError):
    """The result set in `job.transaction()` cannot be stored (not JSON-serialisable, or refused by
    complete_job): the job is dead at once, as when a returned result is refused."""


# SQLSTATEs by which complete_job refuses a job's result (a retry would be refused again): classes 22
# and 54 (bad or too complex JSON), and jobctl's invalid_parameter and payload_too_large (e.g. a
# result nested too deep: JC001 with DETAIL 'field: result')
RESULT_REFUSED_CLASSES = ("22", "54")
RESULT_REFUSED_STATES = frozenset({"JC001", "JC002"})


def result_refused(exc: psycopg.Error) -> bool:
    """True when a completion failed because of the job's result, not of the database."""
    state = exc.sqlstate or ""
    return state[:2] in RESULT_REFUSED_CLASSES or state in RESULT_REFUSED_STATES


def rejection(exc: psycopg.Error) -> str:
    """The last_error of a job whose result complete_job refused: one line, with SQLSTATE and field."""
    diag = exc.diag
    message = first_line(diag.message_primary or str(exc))
    detail = first_line(diag.message_detail or "")
    tags = ", ".join(t for t in (exc.sqlstate, detail if detail.startswith("field: ") else "") if t)
    return f"result rejected: {message} [{tags}]" if tags else f"result rejected: {message}"


_json_decode = json.JSONDecoder().decode  # json.loads without its sniffing of the encoding


def decode_payload(text: str) -> Any:
    """A claimed payload (jsonb as text) as the handler's `payload`. Claims fetch payloads as text and
    decode them here, job by job, so that one the decoder refuses (Python's decoder recurses and
    raises RecursionError past about 1,000 levels) fails that job alone instead of the whole claim.
    Raises ValueError with the message the job's last_error gets."""
    try:
        return _json_decode(text)
    except RecursionError:
        raise ValueError(
            "payload could not be decoded: nested too deep for the worker's JSON decoder"
        ) from None
    except ValueError as e:
        raise ValueError(f"payload could not be decoded: {e}") from None


def result_json(value: Any) -> str | None:
    """A handler's result as jsonb text (None: no result). Raises ValueError when PostgreSQL's jsonb
    would refuse it, so that one bad result cannot fail a whole batch of completions."""
    if value is None:
        return None
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"result is not JSON-serialisable: {e}") from None
    except RecursionError:
        raise ValueError("result is not JSON-serialisable: it is nested too deeply") from None
    if "\\u0000" in text:
        raise ValueError("result contains a NUL character, which jsonb does not accept")
    return text


# A progress whose JSON text is longer than this is refused at once (jobctl.heartbeat's own bound,
# 2,000 bytes as jsonb, is checked by the database: text can be several times its jsonb, e.g. escapes);
# deeper than PROGRESS_MAX_DEPTH too (jobctl._too_deep's bound: a deeper one would fail the batch)
PROGRESS_MAX_TEXT, PROGRESS_MAX_DEPTH = 65536, 100
_PROGRESS_LOCK = threading.Lock()  # a job's pending progress: set by its handler, taken by the worker's loop


def progress_json(value: Any) -> str:
    """A handler's progress as jsonb text. Raises ValueError for a value the heartbeat would refuse
    whatever its size as jsonb: not JSON-serialisable, not valid UTF-8, a NUL, nested over 100 levels."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
        size = len(text.encode())  # a lone surrogate cannot be encoded (and jsonb refuses its escape)
    except (TypeError, ValueError) as e:
        raise ValueError(f"progress is not JSON-serialisable: {e}") from None
    except RecursionError:
        raise ValueError("progress is not JSON-serialisable: it is nested too deeply") from None
    if "\\u0000" in text:
        raise ValueError("progress contains a NUL character, which jsonb does not accept")
    if size > PROGRESS_MAX_TEXT:
        raise ValueError(f"progress is {size} bytes of JSON; the database keeps at most 2000 bytes as jsonb")
    if text.count("[") + text.count("{") > PROGRESS_MAX_DEPTH and json_depth(text) > PROGRESS_MAX_DEPTH:
        raise ValueError(f"progress must not nest arrays and objects over {PROGRESS_MAX_DEPTH} levels deep")
    return text


# a lazily read value not read yet (job.parent_results, job.batch)
_UNREAD: Any = object()

# Guards the lazy creation of a job's cancel event against the stop that sets it (few jobs ever need
# one: a threading.Event per job cost as much as the rest of the job's bookkeeping)
_CANCEL_LOCK = threading.Lock()


@dataclass(eq=False)
class Job:
    """A job claimed under a lease, as handed to the handler.

    `payload` is the submitted JSON; `attempt` counts from 1; `timeout` is in seconds (None: none).
    Set `result` (JSON-serialisable) before leaving `transaction()` to store it with the completion;
    outside a transaction the handler's return value is the result.
    """

    job_id: int
    tenant_id: str
    queue: str
    payload: Any
    priority: int
    attempt: int
    max_attempts: int
    lease_epoch: int
    lease_expires_at: datetime
    timeout: float | None
    result: Any = None
    traceparent: str | None = None  # the W3C trace context stored with the job at submit (tracing)
    # the worker's pool for the handler's transactions and reads: sync or async, as the handler is
    _pool: ConnectionPool[Conn] | AsyncConnectionPool[AsyncConn] | None = field(default=None, repr=False)
    _on_progress: Callable[[], None] | None = field(default=None, repr=False)  # wakes the progress loop
    _cancel: threading.Event | None = field(default=None, repr=False)  # made by wait_cancelled()
    _stop_reason: str | None = field(default=None, repr=False)  # set once: the job is cancelled
    _completed: bool = field(default=False, repr=False)
    _span: Any = field(default=None, repr=False)  # the attempt's run span (tracing; None without)
    _parent_results: Any = field(default=_UNREAD, repr=False)  # read on first use (parent_results)
    _batch: Any = field(default=_UNREAD, repr=False)  # read on first use (batch)
    _progress: str | None = field(default=None, repr=False)  # reported, not yet sent (JSON text)
    _steps: dict[str, Any] | None = field(default=None, repr=False)  # saved steps, read on first use
    _sleeps: int = field(default=0, repr=False)  # sleeps this run went through (their steps' names)
    _spawns: int = field(default=0, repr=False)  # unnamed spawn_and_wait calls this run went through
    _suspended: bool = field(default=False, repr=False)  # parked by a sleep or a wait: nothing to report
    _tx_conn: Any = field(default=None, repr=False)  # the connection of the open job.transaction()

    @property
    def idempotency_key(self) -> str:
        """Stable across all attempts of this job: pass it to downstream services that deduplicate."""
        return f"jobctl-{self.job_id}"

    @property
    def cancelled(self) -> bool:
        """True once the worker wants this handler to stop (cancelled, lease lost, timed out or
        shutting down). Sync handlers cannot be interrupted: poll this, or sleep with
        `wait_cancelled()`. Whatever a stopped handler does afterwards is ignored."""
        return self._stop_reason is not None

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block up to `timeout` seconds or until the job is cancelled; True when cancelled."""
        with _CANCEL_LOCK:
            if self._stop_reason is not None:
                return True
            if self._cancel is None:
                self._cancel = threading.Event()
            cancel = self._cancel
        return cancel.wait(timeout)

    def report_progress(self, progress: Any) -> None:
        """Report how far the handler has come: any JSON value (`{"done": 40, "total": 100}` and
        `{"percent": 40}` show as a bar on the dashboard), at most 2,000 bytes as jsonb. It returns at
        once, never waiting for the database: the worker writes the latest value with the job's next
        heartbeat, or by itself at most once a second (a report within a second of the last write
        waits for the second to pass, and a newer report replaces it), so report as often as you
        like. get_job, the API, the CLI and the dashboard show it; the job keeps the last one written
        when the attempt ends. Fenced like every report: once the lease is lost nothing is stored.
        Raises ValueError (nothing reported) for a value that is not JSON, nests over 100 levels or
        is over 64 KiB of JSON; one over 2,000 bytes as jsonb is refused by the database: the worker
        logs a warning and the last stored progress stays."""
        text = progress_json(progress)
        if self._stop_reason is not None:
            return  # stopped (lost, cancelled, timed out): whatever it does now is ignored
        with _PROGRESS_LOCK:
            idle = self._progress is None
            self._progress = text
        if idle and self._on_progress is not None:
            self._on_progress()

    def _take_progress(self) -> str | None:
        """The progress to send now (None: nothing new); it is no longer pending."""
        with _PROGRESS_LOCK:
            text, self._progress = self._progress, None
        return text

    def _keep_progress(self, text: str) -> None:
        """A progress whose heartbeat failed is pending again, unless a newer one came meanwhile."""
        with _PROGRESS_LOCK:
            if self._progress is None:
                self._progress = text

    def _stop(self, reason: str) -> None:
        """Cancel the job (from the worker's loop); the first reason stands."""
        with _CANCEL_LOCK:
            if self._stop_reason is None:
                self._stop_reason = reason
            if self._cancel is not None:
                self._cancel.set()

    # --- workflows: read on first use through the worker's pool, then cached

    @property
    def parent_results(self) -> dict[str, Any] | None:
        """The results of the job's parents (its depends_on), {"<parent id>": result}; None for a job
        without parents. Read with jobctl.parent_results on first use (one query), then cached. Async
        handlers: `await job.load_parent_results()` (reading this property first raises TypeError)."""
        if self._parent_results is _UNREAD:
            row = self._read_sync(queries.PARENT_RESULTS, {"job_id": self.job_id}, "load_parent_results")
            self._parent_results = row[0] if row else None
        results: dict[str, Any] | None = self._parent_results
        return results

    async def load_parent_results(self) -> dict[str, Any] | None:
        """`parent_results` for async handlers: read on the first call, then cached."""
        if self._parent_results is _UNREAD:
            row = await self._read_async(queries.PARENT_RESULTS, {"job_id": self.job_id})
            self._parent_results = row[0] if row else None
        return self.parent_results

    @property
    def batch(self) -> Batch | None:
        """The job's batch (jobctl.get_batch), for a batch's member or callback; None for a job of no
        batch. A callback reads the members' outcomes in `batch.counts` ({"completed": n, "dead": n,
        "cancelled": n}). Read on first use, then cached; async handlers: `await job.load_batch()`.
        The worker's role needs get_job (jobctl_reader) besides get_batch to find the job's batch."""
        if self._batch is _UNREAD:
            row = self._read_sync(queries.BATCH_OF_JOB, {"job_id": self.job_id}, "load_batch")
            self._batch = Batch(*row) if row else None
        batch: Batch | None = self._batch
        return batch

    async def load_batch(self) -> Batch | None:
        """`batch` for async handlers: read on the first call, then cached."""
        if self._batch is _UNREAD:
            row = await self._read_async(queries.BATCH_OF_JOB, {"job_id": self.job_id})
            self._batch = Batch(*row) if row else None
        return self.batch

    def _read_sync(self, statement: str, params: dict[str, Any], loader: str) -> tuple[Any, ...] | None:
        if not isinstance(self._pool, ConnectionPool):
            if self._pool is not None:
                raise TypeError(f"this worker runs an async handler: use `await job.{loader}()` first")
            raise TypeError("this job has no worker pool to read from")
        with self._pool.connection() as conn:
            return conn.execute(statement, params).fetchone()

    async def _read_async(self, statement: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        if not isinstance(self._pool, AsyncConnectionPool):
            raise TypeError("this worker runs a sync handler: read the property instead")
        async with self._pool.connection() as conn:
            cur = await conn.execute(statement, params)
            return await cur.fetchone()

    # --- durable execution (docs/durable.md; jobctl.worker.durable)

    def step(self, name: str, fn: Callable[..., Any], *, transaction: bool = False) -> Any:
        """The result of the step `name`: the one saved by an earlier run of this job, or else `fn()`'s,
        saved (jobctl.save_step) and returned as it reads back from JSON. Async handlers await it (`fn`
        may be async). A step that raises is not saved: the job's retry policy applies, and the next
        attempt runs it again. With `transaction=True`, `fn(conn)` runs in a transaction of its own
        whose last statement saves the step: its writes commit once, with the step. Inside
        `job.transaction()`, the step is saved in that transaction (`fn(conn)` with transaction=True
        gets its connection). Bounds: a name of 1 to 200 printable characters (not `event:...`), a result
        of at most 256 KiB of JSON, 1,000 steps a job. Raises LeaseLost when the lease was lost (nothing
        saved) and ResultRefused (the job dies) for a result JSON cannot hold."""
        return self._durable(durable.step(self, name, fn, transaction), "step")

    def sleep(self, seconds: float) -> Any:
        """Give up the lease for `seconds`: the handler stops (`Suspended`: let it propagate), the job is
        pending, due then, and runs again from the top, going past this sleep and every saved step. The
        attempt does not count against max_attempts, and the job holds no worker slot, no running place
        of its tenant, queue or concurrency key while it sleeps. Async handlers await it. Saved as the
        step `sleep:<n>` (the handler's n-th sleep, from 0): keep sleeps in a stable order."""
        return self._durable(durable.sleep(self, seconds), "sleep")

    def sleep_until(self, until: datetime) -> Any:
        """`sleep` until an aware datetime (a past one: the job is due again at once)."""
        return self._durable(durable.sleep(self, until), "sleep_until")

    def wait_for(self, event: str, timeout: float | None = None) -> Any:
        """The payload of the tenant's `event` (jobctl.emit_event; the first emit wins). If it has not
        been emitted yet, the job gives up its lease as in `sleep` and runs again from the top when the
        event comes or `timeout` seconds pass (None: no timeout), then this call answers the payload,
        or raises `EventTimeout`, and keeps answering so. Async handlers await it."""
        return self._durable(durable.wait_for(self, event, timeout), "wait_for")

    def spawn_and_wait(
        self,
        queue: str,
        payload: Any,
        *,
        name: str | None = None,
        cancel_with_parent: bool = True,
        **options: Any,
    ) -> Any:
        """Submit a child job once (in this job's tenant; `options` are submit_jobs' keys: priority,
        max_attempts, timeout, ...) and give up the lease until it ends, as in `sleep`; then return its
        result, or raise `ChildFailed` when it ended dead or cancelled. The child and its end are kept as
        the step `spawn:<name>` (default: the handler's n-th unnamed spawn, from 0). With
        `cancel_with_parent` (the default) a cancel of this job cancels the child too. Async handlers
        await it."""
        plan = durable.spawn_and_wait(self, queue, payload, name, cancel_with_parent, options)
        return self._durable(plan, "spawn_and_wait")

    def _durable(self, plan: durable.Plan, what: str) -> Any:
        """Run a plan of jobctl.worker.durable: awaitable for an async handler, at once for a sync one."""
        if isinstance(self._pool, AsyncConnectionPool):
            return durable.run_async(self, self._pool, plan)
        if not isinstance(self._pool, ConnectionPool):
            plan.close()
            raise TypeError(f"job.{what} needs the worker's pool: this job has none")
        return durable.run_sync(self, self._pool, plan)

    @property
    def completed(self) -> bool:
        """True once a `transaction()` of this job has committed its completion."""
        return self._completed

    def transaction(self) -> JobTransaction:
        """A transaction on a pooled connection of its own that completes this job when it commits.

        Sync handlers: `with job.transaction() as conn:`; async handlers: `async with ...`. On leaving
        the block without an exception it calls `complete_job(job_id, lease_epoch, job.result)` in
        the same transaction: when that answers false (fenced: the lease was lost, the job was
        cancelled or reaped) it raises `LeaseLost` and everything written in the block rolls back, so
        a zombie's writes never land. After it committed, the worker reports nothing more for the job.
        """
        return JobTransaction(self)


class JobTransaction:
    """The context manager `Job.transaction()` returns: `with` for sync handlers, `async with` for
    async ones (the worker gives the job the pool that matches its handler)."""

    def __init__(self, job: Job) -> None:
        self._job = job

    def __enter__(self) -> Conn:
        self._sync = _sync_transaction(self._job)
        return self._sync.__enter__()

    def __exit__(self, *exc: Any) -> bool | None:
        return self._sync.__exit__(*exc)

    async def __aenter__(self) -> AsyncConn:
        self._async = _async_transaction(self._job)
        return await self._async.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._async.__aexit__(*exc)


def _params(job: Job) -> dict[str, Any]:
    """complete_job's parameters; raises ResultRefused for a result jsonb would refuse."""
    try:
        result = result_json(job.result)
    except ValueError as e:
        raise ResultRefused(str(e)) from None
    return {"job_id": job.job_id, "lease_epoch": job.lease_epoch, "result": result}


@contextmanager
def _sync_transaction(job: Job) -> Iterator[Conn]:
    if not isinstance(job._pool, ConnectionPool):
        raise TypeError("this worker runs an async handler: use `async with job.transaction()`")
    with job._pool.connection() as conn, conn.transaction():
        job._tx_conn = conn
        try:
            yield conn
        finally:
            job._tx_conn = None
        params, started_ns = _params(job), time.time_ns()
        try:
            row = conn.execute(queries.COMPLETE_JOB, params).fetchone()
        except psycopg.Error as e:
            if result_refused(e):  # the transaction rolls back either way
                raise ResultRefused(rejection(e)) from e
            raise
        _answered(job, started_ns, row)
    job._completed = True


@asynccontextmanager
async def _async_transaction(job: Job) -> AsyncIterator[AsyncConn]:
    if not isinstance(job._pool, AsyncConnectionPool):
        raise TypeError("this worker runs a sync handler: use `with job.transaction()`")
    async with job._pool.connection() as conn, conn.transaction():
        job._tx_conn = conn
        try:
            yield conn
        finally:
            job._tx_conn = None
        params, started_ns = _params(job), time.time_ns()
        try:
            cur = await conn.execute(queries.COMPLETE_JOB, params)
        except psycopg.Error as e:
            if result_refused(e):  # the transaction rolls back either way
                raise ResultRefused(rejection(e)) from e
            raise
        _answered(job, started_ns, await cur.fetchone())
    job._completed = True


def _answered(job: Job, started_ns: int, row: tuple[Any, ...] | None) -> None:
    """complete_job's answer in the job's own transaction: traced (the `jobctl complete` span), and
    LeaseLost when it was fenced."""
    completed = bool(row and row[0])
    if job._span is not None:
        tracing.reported("jobctl complete", job._span, started_ns, time.time_ns(), completed, **{
            "jobctl.in_transaction": True,
        })  # fmt: skip
    if not completed:
        raise LeaseLost(f"job {job.job_id}: lease epoch {job.lease_epoch} is no longer current")
