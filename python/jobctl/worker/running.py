"""Running claimed jobs: each handler in a slot, its outcome booked as it ends, stops supervised.

Handlers run as asyncio tasks (`async def`) or in a thread pool sized to the concurrency (`def`).
A job's outcome is booked as its handler ends (at the end of an async handler's task, by a thread's
done callback): a result goes to the outbox, a completion made by the job's own transaction is
counted, with no other task per job. A job that needs more, a failure to report or a stop (its
timeout, a heartbeat's answer, shutdown) to wait out, gets a supervisor task. An unexpected error on
that path is logged with its traceback and fails the job for good.

A running job is known by its job_id and lease_epoch together. When the worker claims a job it is
still running (its lease was revoked while the worker did not hear, say during an outage longer than
the lease), the older attempt is stopped at once as `lost`, and it never touches the newer one's slot.
A thread cannot be interrupted: when its job times out, is cancelled, loses its lease or is given
back at shutdown, its `job.cancelled` is set and whatever it does afterwards is ignored (the
database fences any late completion), but it keeps its slot until it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from psycopg_pool import AsyncConnectionPool, ConnectionPool

from jobctl import tracing
from jobctl.worker.calls import async_pool, describe, sync_pool, trace
from jobctl.worker.durable import Suspended
from jobctl.worker.job import AsyncConn, Conn, Job, LeaseLost, PermanentError, ResultRefused, result_json
from jobctl.worker.outbox import Outbox, ids

if TYPE_CHECKING:
    from jobctl.worker.metrics import WorkerMetrics

log = logging.getLogger("jobctl.worker")

Handler = Callable[[Job], Any]

CANCEL_WAIT = 2.0  # how long a cancelled async handler gets to unwind (roll back) before we move on


def outcome(job: Job, error: BaseException | None) -> str:
    """How a handler ended, for the handler duration histogram (worker/metrics.py)."""
    if job._stop_reason is not None:
        return job._stop_reason
    if job._suspended:
        return "suspended"
    if error is None or job._completed:
        return "ok"
    if isinstance(error, LeaseLost):
        return "fenced"
    return "permanent" if isinstance(error, PermanentError) else "error"


@dataclass(eq=False, slots=True)
class Slot:
    """A job whose handler is running: what the heartbeat extends and a stop acts on."""

    job: Job
    handler: asyncio.Future[Any] = field(init=False)  # its task, or its thread's future
    timer: asyncio.TimerHandle | None = None  # its timeout (jobs without one have no timer)
    supervised: bool = False  # a supervisor task reports it (else the handler's end does)
    ended: bool = False  # handler_ended ran
    started: float = 0.0  # the loop's time when the handler started (with metrics only)


class Running:
    def __init__(self, handler: Handler, *, dsn: str, concurrency: int, outbox: Outbox) -> None:
        self.handler = handler
        # `async def` handlers, also callable objects with an async __call__
        call = getattr(handler, "__call__", None)  # noqa: B004 - the object's own __call__
        self.is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)
        self.dsn = dsn
        self.concurrency = concurrency
        self.outbox = outbox
        self.stats = outbox.stats
        self.busy = 0  # handlers still running (a stopped sync handler's thread included)
        self.slot_freed = asyncio.Event()
        # running jobs by job_id: the slot of the newest attempt; an older attempt's slot (a job claimed
        # again) is stopped at once and removed only by its own supervisor while it is still the one here
        self.active: dict[int, Slot] = {}
        self._supervisors: set[asyncio.Task[None]] = set()
        # handlers' transactions: pools of their own, so that they can never starve the worker's calls
        self._tx_pool: AsyncConnectionPool[AsyncConn] | ConnectionPool[Conn] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.metrics: WorkerMetrics | None = None  # the process's Prometheus metrics (--metrics-port)
        # set when a job's handler reports progress while none of its was pending (heartbeats.progress_loop)
        self.progress_reported = asyncio.Event()
        # one heartbeat statement at a time (the lease's and the progress's), so that an older progress
        # can never be written after a newer one
        self.heartbeating = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_progress = self._progress_reported  # one bound method for every job

    async def open(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.is_async:
            self._tx_pool = async_pool(self.dsn, "jobctl-worker-tx", 0, self.concurrency)
            await self._tx_pool.open(wait=False)
        else:
            self._tx_pool = sync_pool(self.dsn, "jobctl-worker-tx", self.concurrency)
            self._tx_pool.open(wait=False)
            self._executor = ThreadPoolExecutor(self.concurrency, thread_name_prefix="jobctl-handler")

    async def close(self) -> None:
        """Shut the thread pool (without waiting for its threads) and close the handlers' pools."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            if self.busy:
                log.warning("sync handlers still running after shutdown", extra={"threads": self.busy})
        if isinstance(self._tx_pool, AsyncConnectionPool):
            await self._tx_pool.close(timeout=5.0)
        elif self._tx_pool is not None:
            await asyncio.to_thread(self._tx_pool.close, 5.0)

    def job(self, row: tuple[Any, ...]) -> Job:
        """A claimed row as the Job its handler gets: CLAIM_JOB's columns are Job's first fields in
        order, already of their types (payload still text; positional: keywords and conversions cost
        five times as much), then the traceparent; the pool and the progress hook are the worker's."""
        job_id, tenant_id, queue, payload, priority, attempt, max_attempts, epoch, expires, timeout, tp = row
        return Job(
            job_id, tenant_id, queue, payload, priority, attempt, max_attempts, epoch, expires, timeout,
            None, tp, self._tx_pool, self._on_progress,
        )  # fmt: skip

    def _progress_reported(self) -> None:
        """Wake the progress loop (from a handler's thread or the loop itself)."""
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: a stuck thread after shutdown
                self._loop.call_soon_threadsafe(self.progress_reported.set)

    # --- a job's way through

    def start(self, jobs: list[Job], claimed_at: float, claim: Any = None) -> None:
        """Run a claim's jobs, each handler in a slot; timeouts count from `claimed_at` (the loop's
        time). `claim`: the claim span's context (tracing), which each run span links to."""
        loop = asyncio.get_running_loop()
        active = self.active
        for job in jobs:
            slot = Slot(job)
            if self.metrics is not None:
                slot.started = loop.time()
            if claim is not None:
                job._span = tracing.start_run(job, claim)
            if self.is_async:
                slot.handler = loop.create_task(self._run_async(slot))
            else:
                handler = self.handler if job._span is None else tracing.in_span(job._span, self.handler)
                slot.handler = loop.run_in_executor(self._executor, handler, job)
                slot.handler.add_done_callback(partial(self._thread_ended, slot))
            self.busy += 1
            if job.timeout is not None:
                slot.timer = loop.call_at(claimed_at + job.timeout, self.stop, slot, "timed_out")
            older = active.get(job.job_id)
            if older is not None:
                # claimed again, so the older attempt's lease is gone whether or not a heartbeat said so
                log.warning(
                    "job claimed again while an older attempt runs; stopping that attempt",
                    extra={**ids(job), "older_epoch": older.job.lease_epoch},
                )
                self.stop(older, "lost")
            active[job.job_id] = slot

    async def _run_async(self, slot: Slot) -> None:
        """An async handler's task; it books the outcome itself as it ends (no done callback)."""
        try:
            if slot.job._span is None:
                value = await self.handler(slot.job)  # even a call that fails is the job's failure
            else:
                with tracing.current(slot.job._span):
                    value = await self.handler(slot.job)
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise  # asyncio lets the first two stop the loop; the last closes the unfinished task
        except BaseException as e:
            self._handler_ended(slot, None, e)  # the outcome is booked: the task itself ends quietly
        else:
            self._handler_ended(slot, value, None)

    def _thread_ended(self, slot: Slot, handler: asyncio.Future[Any]) -> None:
        error = asyncio.CancelledError() if handler.cancelled() else handler.exception()
        self._handler_ended(slot, None if error is not None else handler.result(), error)

    def _handler_ended(self, slot: Slot, value: Any, error: BaseException | None) -> None:
        """Free the slot and book the outcome; only one that needs the database gets a supervisor."""
        slot.ended = True
        self.busy -= 1
        self.slot_freed.set()
        if self.metrics is not None:
            seconds = asyncio.get_running_loop().time() - slot.started
            self.metrics.observe_handler(slot.job.queue, outcome(slot.job, error), seconds)
        if slot.job._span is not None:
            tracing.end_run(slot.job._span, outcome(slot.job, error), error)
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

    def _report(self, job: Job, value: Any, error: BaseException | None) -> Coroutine[Any, Any, None] | None:
        """Book the outcome of a handler that ended on its own. A result (or a completion made by the
        job's transaction) is booked at once; a failure is returned as the fail_job left to run."""
        if job._completed:
            self.stats.completed += 1  # its own transaction completed it
        elif job._suspended:  # its lease ended in the database: it runs again when due
            self.stats.suspended += 1
            if not isinstance(error, Suspended):
                log.warning(
                    "handler went on after its job was suspended; what it did is ignored", extra=ids(job)
                )
        elif error is None:
            try:
                result = result_json(value)
            except ValueError as e:
                return self.outbox.fail(job, str(e), cause="refused")
            self.outbox.add(job, result)
        elif isinstance(error, ResultRefused):  # its transaction could not store the result
            return self.outbox.fail(job, str(error), cause="refused")
        elif isinstance(error, LeaseLost):
            self.stats.fenced += 1
            log.warning("job fenced: its lease was lost before it completed", extra=ids(job))
        else:
            log.debug("handler raised", exc_info=error, extra=ids(job))
            return self.outbox.fail(
                job, describe(error), retryable=not isinstance(error, PermanentError), traceback=trace(error)
            )
        return None

    # --- stops

    def stop(self, slot: Slot, reason: str) -> None:
        """Stop a running handler: `cancelled`, `lost`, `timed_out` or `shutdown`. A handler that has
        already returned is left alone: its outcome stands (a fenced completion says the rest)."""
        if slot.handler.done():
            return
        slot.job._stop(reason)  # keeps the reason of a stop already asked for
        if slot.timer is not None:
            slot.timer.cancel()
        if not slot.supervised:
            self._supervise(slot, self._after_handler_stop(slot))
        if self.is_async:
            slot.handler.cancel()

    async def _after_handler_stop(self, slot: Slot) -> None:
        job, handler = slot.job, slot.handler
        if self.is_async:
            await asyncio.wait({handler}, timeout=CANCEL_WAIT)  # let its transaction roll back
            if handler.done() and not slot.ended:  # cancelled before its first step: it never ran
                self._handler_ended(slot, None, asyncio.CancelledError())
        self._forget(slot)
        if job._completed:
            self.stats.completed += 1  # its own transaction completed it before the stop
            return
        reason = job._stop_reason  # what a stopped handler did is ignored
        if reason == "cancelled":
            self.stats.cancelled += 1
            log.info("job cancelled while running; handler stopped", extra=ids(job))
        elif reason == "lost":
            self.stats.fenced += 1
            log.warning("job lease lost; handler stopped", extra=ids(job))
        elif reason == "timed_out":
            self.stats.timed_out += 1
            log.warning("job timed out; handler stopped", extra={**ids(job), "timeout": job.timeout})
            await self.outbox.fail(job, None, cause="timed_out")  # fail_job writes the reaper's message
        else:
            await self.outbox.release(job)

    # --- supervisors

    def track(self, work: Awaitable[None]) -> None:
        """Run a job's supervisor (or its give-back) as a task that shutdown waits for."""
        task = asyncio.ensure_future(work)
        self._supervisors.add(task)
        task.add_done_callback(self._supervisors.discard)

    def _supervise(self, slot: Slot, work: Coroutine[Any, Any, None]) -> None:
        slot.supervised = True
        self.track(self._supervised(slot, work))

    async def _supervised(self, slot: Slot, work: Coroutine[Any, Any, None]) -> None:
        """Run what is left of a job's report. An unexpected error on the way fails the job for good
        rather than leaving it to its lease."""
        try:
            await work
        except Exception as e:
            await self._supervisor_failed(slot, e)
        finally:
            self._forget(slot)

    async def _supervisor_failed(self, slot: Slot, error: Exception) -> None:
        job = slot.job
        log.error("job supervisor failed; failing the job for good", exc_info=error, extra=ids(job))
        self.stop(slot, "failed")
        self._forget(slot)
        try:
            error_text = f"worker error: {describe(error)}"
            await self.outbox.fail(job, error_text, retryable=False, traceback=trace(error))
        except Exception:
            log.exception("could not fail job; it returns when its lease expires", extra=ids(job))

    def _forget(self, slot: Slot) -> None:
        """Stop heartbeating a job: only its own slot, never a newer attempt's."""
        if self.active.get(slot.job.job_id) is slot:
            del self.active[slot.job.job_id]

    # --- shutdown

    async def wait_idle(self, timeout: float, hurry: asyncio.Event) -> None:
        """Wait until no job runs and no report is pending, `timeout` passes, or `hurry` is set: woken
        as any handler or supervisor ends, the loop looks again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self.active and timeout > 0 and not hurry.is_set():
            log.info(
                "waiting for running jobs",
                extra={"running": len(self.active), "grace_left": round(timeout, 3)},
            )
        hurrying = asyncio.ensure_future(hurry.wait())
        while (self.active or self._supervisors) and not hurry.is_set() and deadline > loop.time():
            ending = {hurrying, *self._supervisors, *(slot.handler for slot in self.active.values())}
            await asyncio.wait(ending, timeout=deadline - loop.time(), return_when=asyncio.FIRST_COMPLETED)
        hurrying.cancel()

    async def stop_all(self) -> None:
        """Stop every running job (each is given back) and wait for every supervisor."""
        while True:
            for slot in list(self.active.values()):
                self.stop(slot, "shutdown")  # a running one gets a supervisor
            if self._supervisors:
                await asyncio.gather(*self._supervisors, return_exceptions=True)
            elif self.active:
                await asyncio.sleep(0)  # a thread that has just ended: its done callback runs first
            else:
                return
