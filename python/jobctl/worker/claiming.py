"""Claiming: the claim loop, and the listener whose hints wake it.

The claim loop claims `max_jobs = free slots` (at most MAX_BATCH) in one statement; when that filled
every free slot it claims again as soon as a slot frees, otherwise it waits for a NOTIFY hint or the
poll interval, whichever comes first. A claim that fails with an error a retry cannot cure is logged
and tried again after a pause that doubles from the poll interval up to CLAIM_ERROR_MAX. A claim
whose answer is lost after it committed leaves its jobs leased to nobody: they come back when their
lease expires.

The listener is a dedicated connection running LISTEN jobctl; a hint for one of our queues wakes the
claim loop, which then looks again every HINT_LOOK seconds for the hint window (the submits whose
hint jobctl._notify skipped in it: the listener asks jobctl.hint_window each time it connects); after
it reconnects the claim loop polls at once (hints may have been missed). A hint's payload is an
opaque tag of its queue, not its name: a worker with a queue filter asks for its queues' tags
(jobctl.hint_tags) each time it starts listening; one without a filter wakes on any tag. A hint
counts only from a session of jobctl's roles: any login may NOTIFY on channel jobctl and send a tag
it heard again, so the listener checks the sender's process id against jobctl.hint_senders
(SENDERS_ASK, SENDERS_AGE) and ignores a stranger's.

Payloads are claimed as text and decoded job by job: one that cannot be decoded fails that job for
good, and the rest of the claim runs.

At a stop, claiming ends at once: a claim still waiting for a connection or for its next try is
dropped; one already sent gets CLAIM_ANSWER_WAIT to answer, and its jobs are given back unrun (no
answer by then: it is cancelled, and anything it claimed comes back with its lease).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from jobctl import queries, tracing
from jobctl.db import connection_kwargs, listen_dsn
from jobctl.waiting import reconnect_pauses
from jobctl.worker.calls import (
    APP_NAME,
    GaveUp,
    Sending,
    error_fields,
    retryable,
    rows,
    value,
)
from jobctl.worker.job import AsyncConn, decode_payload
from jobctl.worker.outbox import ids

if TYPE_CHECKING:
    from jobctl.worker.runner import Worker

log = logging.getLogger("jobctl.worker")

CLAIM_ANSWER_WAIT = 2.0  # at a stop, how long a claim already sent gets to answer
CLAIM_ERROR_MAX = 30.0  # the longest pause after a claim error a retry cannot cure
LISTEN_CHECK = 30.0  # an idle listener checks its connection this often
# jobctl._notify sends one hint per queue at a time across sessions: a job whose submit skipped its
# hint may commit just after the claim the other hint caused, so look again this soon after a claim
# that found work
SECOND_LOOK = 0.01
# and a session sends one per queue per window (jobctl.hint_window): after a hint, look again this
# often for that long, so that the jobs submitted later in its window wait no longer than it
HINT_LOOK = 0.05
# The sessions whose hints count (jobctl.hint_senders) are asked again when a hint comes from a
# process not among them, at most this often (a stranger's flood costs at most 10 asks a second; a
# new session of ours whose first hint lands within this long of the last ask goes unheard until its
# next hint, and that job waits for the poll or the next hint at worst), and at least this often (a
# process id one of our sessions had may be a stranger's now)
SENDERS_ASK, SENDERS_AGE = 0.1, 10.0
IGNORED_LOG = 60.0  # ignored hints are logged at most this often


async def wait_any(*events: asyncio.Event, timeout: float | None = None) -> None:
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


class Claimer:
    """The claim loop and the listener of `worker`, by its settings (worker_id, queues, lease,
    poll_interval, dsn, listen_dsn)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.db, self.running = worker._db, worker._running
        self.stopping = worker._stop  # set: claiming ends
        self._wake = asyncio.Event()
        self.share: int | None = None  # the slots it may fill (None: all): a multi-shard worker's share
        self._hinted_until = 0.0  # time.monotonic() until which claims look again every HINT_LOOK
        self.hint_window = 0.0  # how long after a hint (jobctl.hint_window, asked as the listener connects)
        self._senders: frozenset[int] = frozenset()  # whose hints count
        self._senders_at = -SENDERS_AGE  # time.monotonic() when they were asked for
        self._asking: asyncio.Future[None] | None = None  # a background ask of the senders (SENDERS_AGE)
        self._ignored = 0  # hints ignored since the last log of them
        self._ignored_logged = -IGNORED_LOG

    async def run(self) -> None:
        """The claim loop, until the stop."""
        errors = 0  # claims in a row that failed with an error a retry cannot cure
        poll = self.worker.poll_interval
        while not self.stopping.is_set():
            slots = self.running.concurrency
            free = (slots if self.share is None else min(self.share, slots)) - self.running.busy
            if free <= 0:
                self.running.slot_freed.clear()
                await wait_any(self.running.slot_freed, self.stopping)
                continue
            self._wake.clear()
            try:
                got = await self._claim(free)  # at most MAX_BATCH, as Worker checks the concurrency
            except GaveUp:
                return
            except psycopg.Error as e:  # the retry wrapper retries the errors a retry can cure
                errors += 1
                pause = min(poll * 2 ** min(errors - 1, 16), max(poll, CLAIM_ERROR_MAX))
                log.error(
                    "claim failed; claiming again later",
                    extra={**error_fields(e), "retry_in": round(pause, 2)},
                )
                await wait_any(self.stopping, timeout=pause)
                continue
            errors = 0
            if got < free:
                wait = SECOND_LOOK if got else poll
                if time.monotonic() < self._hinted_until:
                    wait = min(wait, HINT_LOOK)
                await wait_any(self._wake, self.stopping, timeout=min(wait, poll))

    def set_share(self, slots: int) -> None:
        """Fill at most `slots` slots from now on; a larger share claims again at once."""
        grew = self.share is not None and slots > self.share
        self.share = slots
        if grew:
            self._wake.set()
            self.running.slot_freed.set()

    async def _claim(self, max_jobs: int) -> int:
        """One claim, which a stop cuts short: dropped while it waits for a connection or its next try;
        once sent, given CLAIM_ANSWER_WAIT to answer, and the jobs it brings are given back unrun."""
        params = {
            "worker_id": self.worker.worker_id,
            "queues": self.worker.queues,
            "max_jobs": max_jobs,
            "lease": timedelta(seconds=self.worker.lease),
        }
        sending = Sending()
        sent_at = asyncio.get_running_loop().time()
        sent_ns = time.time_ns()  # the claim span's start (tracing)
        call = asyncio.ensure_future(
            self.db.call("claim_job", rows(queries.CLAIM_JOB, params, sending), abort=self.stopping.is_set)
        )
        stop_wait = asyncio.ensure_future(self.stopping.wait())
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
        claimed = call.result()  # GaveUp or psycopg.Error: to the claim loop
        # timeouts count from here (a retried claim: from its last try)
        claimed_at = asyncio.get_running_loop().time()
        if self.running.metrics is not None:
            self.running.metrics.claim.observe(claimed_at - sent_at)
        log.debug("claimed", extra={"jobs": len(claimed), "asked": max_jobs})
        claim: Any = None  # the claim span's context, which each run links to
        if claimed and tracing.recording():
            traceparents = [row[10] for row in claimed]
            claim = tracing.claimed(sent_ns, time.time_ns(), self.worker.worker_id, max_jobs, traceparents)
        self.running.stats.claimed += len(claimed)
        jobs = []
        for row in claimed:
            job = self.running.job(row)
            try:
                job.payload = decode_payload(job.payload)
            except ValueError as e:  # this job alone fails (fail_job: for good, no attempt could decode it)
                log.error("job payload could not be decoded", extra={**ids(job), "error": str(e)})
                self.running.track(self.running.outbox.fail(job, str(e), cause="refused"))
                continue
            jobs.append(job)
        if not self.stopping.is_set():
            self.running.start(jobs, claimed_at, claim)
        elif jobs:
            log.info("jobs claimed as the worker stopped: giving them back", extra={"jobs": len(jobs)})
            for job in jobs:
                self.running.track(self.running.outbox.release(job))
        return len(claimed)

    # --- wake-ups

    async def listen(self) -> None:
        """The listener, until cancelled. Behind a transaction pooler with no direct DSN to listen on,
        none: the claims poll every poll_interval."""
        target = listen_dsn(self.worker.dsn, self.worker.listen_dsn)
        if target is None:
            log.info(
                "behind a transaction pooler with no --listen-dsn: no wake-up hints, polling only",
                extra={"poll_interval": self.worker.poll_interval},
            )
            await asyncio.Event().wait()  # until cancelled
            return
        pauses, first = reconnect_pauses(), True
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    target, **connection_kwargs(target, APP_NAME, autocommit=True)
                )
                async with conn:
                    self.hint_window = float(await value(queries.HINT_WINDOW, {})(conn))
                    # our queues' hints' payloads (None: any hint wakes us); asked before LISTEN, whose
                    # statement then shows while it listens
                    tags = None
                    if self.worker.queues is not None:
                        tags = frozenset(await value(queries.HINT_TAGS, {"queues": self.worker.queues})(conn))
                    await conn.execute(queries.LISTEN)
                    if not first:
                        log.info("listener reconnected; polling at once")
                        self._wake.set()
                    first, pauses = False, reconnect_pauses()
                    await self._receive(conn, tags)
            except psycopg.Error as e:
                if retryable(e):
                    pause = next(pauses)
                    message = "listener lost its connection; reconnecting"
                else:  # not a lost connection: try again much later (claims poll meanwhile)
                    pause = LISTEN_CHECK
                    message = "listener failed; polling only until it reconnects"
                log.warning(message, extra={**error_fields(e), "retry_in": round(pause, 2)})
                await asyncio.sleep(pause)

    async def _receive(self, conn: AsyncConn, tags: frozenset[str] | None) -> None:
        while True:
            async for note in conn.notifies(timeout=LISTEN_CHECK):
                if (tags is None or note.payload in tags) and await self._counts(note.pid):
                    self._hinted_until = time.monotonic() + self.hint_window
                    self._wake.set()
            await conn.execute(queries.PING)  # an idle connection: prove it is still there

    async def _counts(self, pid: int) -> bool:
        """Whether a hint from process `pid` counts: a session of jobctl's roles (jobctl.hint_senders).
        A known sender's hint counts at once, and a list older than SENDERS_AGE is asked for again in
        the background (the ask waits for a pooled connection, which claims and completions hold under
        load: the listener must not wait with it); an unknown sender's waits for a new list, asked at
        most every SENDERS_ASK."""
        age = time.monotonic() - self._senders_at
        if pid in self._senders:
            if age >= SENDERS_AGE and (self._asking is None or self._asking.done()):
                self._senders_at = time.monotonic()
                self._asking = asyncio.ensure_future(self._ask_senders())
            return True
        if age >= SENDERS_ASK:
            self._senders_at = time.monotonic()
            await self._ask_senders()
            if pid in self._senders:
                return True
        self._ignored += 1
        if time.monotonic() - self._ignored_logged >= IGNORED_LOG:
            log.warning(
                "ignoring wake-up hints from sessions outside jobctl's roles (any login may NOTIFY)",
                extra={"hints": self._ignored, "pid": pid},
            )
            self._ignored, self._ignored_logged = 0, time.monotonic()
        return False

    async def _ask_senders(self) -> None:
        """The process ids whose hints count, asked for anew (jobctl.hint_senders): one try."""
        try:
            senders = await self.db.call("hint_senders", value(queries.HINT_SENDERS, {}), abort=lambda: True)
            self._senders = frozenset(senders)
        except (GaveUp, psycopg.Error) as e:  # the last answer stands; the claims poll meanwhile
            log.warning("could not ask whose hints count", extra=error_fields(e))
