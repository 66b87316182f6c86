"""The worker's engine: claim in batches, run handlers, heartbeat, complete in batches, shut down gracefully.

`Worker` puts together the parts a job passes through, each in a module of its own, over one
asyncio loop and a small autocommit pool of the worker's own (`calls.Database`):
- claiming.py: the claim loop (`max_jobs = free slots`) and the listener whose hints wake it;
- running.py: each claimed job's handler in a slot, its outcome booked as it ends, stops supervised;
- outbox.py: completions in batches (complete_jobs), failures and give-backs, and the `Stats`;
- heartbeats.py: the heartbeat (lease/3) and the progress it carries (written at most once a second a
  job), jobctl.tick (TICK_EVERY) and the registry of workers (worker_beat every BEAT_EVERY, worker_gone
  at exit);
- metrics.py: the process's Prometheus metrics, served on --metrics-port (none without);
- calls.py: the pool and the one retry wrapper every database call goes through.

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
import logging
import os
import signal
import socket
import time
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from jobctl import queries
from jobctl.worker.calls import Database, value
from jobctl.worker.claiming import Claimer
from jobctl.worker.heartbeats import Registration, heartbeat_loop, progress_loop, tick_loop
from jobctl.worker.metrics import WorkerMetrics
from jobctl.worker.outbox import MAX_BATCH, Outbox, Stats
from jobctl.worker.running import Handler, Running

log = logging.getLogger("jobctl.worker")

T = TypeVar("T")

SHUTDOWN_DB_WAIT = 15.0  # after the grace period, how long shutdown keeps trying the database


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on uvloop's event loop where uvloop is installed (a dependency wherever it
    builds), else asyncio's: its scheduling is in C, which saves a no-op job about a sixth of the
    worker's CPU (docs/benchmarks.md, the per-job budget)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


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
        queues: Sequence[str] | None = None,
        concurrency: int = 10,
        lease: float = 30.0,
        poll_interval: float = 1.0,
        grace: float = 30.0,
        worker_id: str | None = None,
        handle_signals: bool = True,
        metrics_port: int = 0,
        metrics_host: str = "127.0.0.1",
        metrics_queues: int = 100,
        listen_dsn: str | None = None,
    ) -> None:
        if not 1 <= concurrency <= MAX_BATCH:
            raise ValueError(f"concurrency must be from 1 to {MAX_BATCH}")
        if lease <= 0 or poll_interval <= 0 or grace < 0:
            raise ValueError("lease and poll_interval must be positive, grace not negative")
        self.worker_id = worker_id or default_worker_id()
        self.queues = sorted(set(queues)) if queues else None
        self.concurrency = concurrency
        self.lease = lease
        self.poll_interval = poll_interval
        self.dsn = dsn
        self.listen_dsn = listen_dsn  # None: db.listen_dsn decides (JOBCTL_LISTEN_DSN, JOBCTL_POOLER)
        self.grace = grace
        self.handle_signals = handle_signals
        self.stats = Stats()
        self.crashed: BaseException | None = None  # a background task that died: exit non-zero
        self._stop_at: float | None = None  # time.monotonic() of the first stop: the grace counts from it
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self._db = Database(dsn)
        self._outbox = Outbox(self._db, self.stats)
        self._running = Running(handler, dsn=dsn, concurrency=concurrency, outbox=self._outbox)
        self._claimer = Claimer(self)
        self._registration = Registration(self.worker_id, self.queues, concurrency, self._running)
        # the process's metrics (served from run() on metrics_port; 0: none)
        self.metrics_port, self.metrics_host = metrics_port, metrics_host
        self.metrics = WorkerMetrics(self, metrics_queues) if metrics_port else None
        self._running.metrics = self.metrics

    @property
    def stuck_threads(self) -> int:
        """Sync handlers still running after run() returned (threads cannot be killed)."""
        return self._running.busy if not self._running.is_async else 0

    async def claimable_weight(self) -> float:
        """Its database's claimable weight for its queues (jobctl.claimable_weight); one try."""
        query = value(queries.CLAIMABLE_WEIGHT, {"queues": self.queues})
        return float(await self._db.call("claimable_weight", query, abort=lambda: True))

    async def slot_shares(self, slots: int, weights: list[float | None]) -> list[int]:
        """`slots` shared among shards of these weights, as its database answers (jobctl.slot_shares);
        one try."""
        query = value(queries.SLOT_SHARES, {"slots": slots, "weights": weights})
        return list(await self._db.call("slot_shares", query, abort=lambda: True))

    def share_slots(self, slots: int) -> None:
        """Fill at most `slots` of its slots (a worker among several sharing one process's slots)."""
        self._claimer.set_share(slots)

    def request_stop(self) -> None:
        """First call: stop claiming and let running jobs finish within the grace period. Later
        calls: stop waiting. Call it from the worker's event loop (signal handlers do)."""
        running = len(self._running.active)
        if not self._stop.is_set():
            log.info("stopping: no new claims", extra={"grace": self.grace, "running": running})
            self._begin_stop()
        else:
            log.info("stopping now: not waiting for running jobs", extra={"running": running})
            self._hurry.set()

    def _begin_stop(self) -> None:
        if self._stop_at is None:
            self._stop_at = time.monotonic()
        self._stop.set()

    async def run(self) -> Stats:
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        if self.handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.request_stop)
        try:
            if self.metrics is not None:
                self.metrics.serve(self.metrics_port, self.metrics_host)  # OSError: the port is taken
            await self._db.pool.open(wait=False)
            await self._running.open()
            log.info(
                "worker started",
                extra={
                    "worker_id": self.worker_id,
                    "queues": ",".join(self.queues) if self.queues else "*",
                    "concurrency": self.concurrency,
                    "handler_kind": "async" if self._running.is_async else "sync",
                },
            )
            await self._serve()
        finally:
            if self.metrics is not None:
                self.metrics.close()
            # all at once: 5 s at most
            await asyncio.gather(self._running.close(), self._db.pool.close(timeout=5.0))
            if self.handle_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
            self.stats.elapsed = time.monotonic() - started
            log.info("worker stopped", extra=self.stats.summary())
        return self.stats

    async def _serve(self) -> None:
        background = [
            asyncio.create_task(self._claimer.listen(), name="jobctl-listen"),
            asyncio.create_task(
                heartbeat_loop(self._db, self._running, self._outbox, self.lease), name="jobctl-heartbeat"
            ),
            asyncio.create_task(tick_loop(self._db, self._registration), name="jobctl-tick"),
            asyncio.create_task(progress_loop(self._db, self._running, self.lease), name="jobctl-progress"),
        ]
        flusher = asyncio.create_task(self._outbox.run(), name="jobctl-flush")
        claimer = asyncio.create_task(self._claimer.run(), name="jobctl-claim")
        stop_wait = asyncio.create_task(self._stop.wait())
        watched = {stop_wait, claimer, flusher, *background}
        done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        stopping = self._stop.is_set()  # a task that ended before the stop crashed
        for task in done - {stop_wait}:
            self._task_ended(task, stopping)
        stop_wait.cancel()
        self._begin_stop()
        try:
            if not claimer.done():
                # a stop ends claiming at once (a claim already sent: CLAIM_ANSWER_WAIT and a moment)
                await asyncio.wait({claimer})
                self._task_ended(claimer, True)
            # running jobs get the rest of the grace period (counted from the stop), then the rest are
            # stopped and given back
            assert self._stop_at is not None
            await self._running.wait_idle(self._stop_at + self.grace - time.monotonic(), self._hurry)
            self._db.deadline = time.monotonic() + SHUTDOWN_DB_WAIT
            await self._running.stop_all()
        finally:
            for task in background:
                task.cancel()
            # a statement being cancelled can take psycopg a while: not waited for beyond a moment
            await asyncio.wait(background, timeout=1.0)
            self._outbox.close()
            await asyncio.gather(flusher, return_exceptions=True)
            await self._registration.gone(self._db)

    def _task_ended(self, task: asyncio.Task[Any], stopping: bool) -> None:
        """A long-lived task ended: a crash unless it returned because the worker is stopping."""
        error = task.exception() if not task.cancelled() else asyncio.CancelledError()
        if error is not None or not stopping:
            if self.crashed is None:
                self.crashed = error or RuntimeError(f"{task.get_name()} ended")
            log.error("worker task died; shutting down", exc_info=error, extra={"task": task.get_name()})


async def run(handler: Handler, *, dsn: str, **options: Any) -> Stats:
    """Run a worker until SIGTERM/SIGINT (see `Worker` for the options) and return its stats."""
    return await Worker(handler, dsn=dsn, **options).run()
