"""Heartbeats and the tick: the worker's periodic calls.

Every lease/3 seconds one statement extends the lease of every running job and of every finished
one whose completion waits in the outbox (until complete_jobs is sent for it); a running job whose
heartbeat answers `cancelled` or `lost` is stopped and nothing is reported for it. A failed
heartbeat is logged with the job count; the next one tries again.

Progress (`job.report_progress`) rides on the heartbeat: each heartbeat statement carries the latest
progress each running job reported since the last one (one HOT update of the lease row either way).
A report wakes the progress loop, which sends a heartbeat for the jobs with news at once, or
PROGRESS_EVERY after its previous one: a job's progress is written at most once a second by it, the
latest value winning. A heartbeat that fails leaves its progress pending for the next; a progress the
database would refuse as too big (over 2,000 bytes as jsonb) is not sent and is logged.

Every BEAT_EVERY seconds the same loop as the tick reports the worker to the registry of workers
(jobctl.worker_beat: host, pid, queues, concurrency, jobs in flight), on the worker's pool, no
connection of its own; `Registration.gone` removes it at a clean exit (jobctl.worker_gone). A
failed beat is logged, and the next one tries again.

Every TICK_EVERY seconds the worker calls jobctl.tick(false): promotion, reaping, schedules, the
queue tables' upkeep (one caller at a time per database does the work: a lock on
jobctl_owner._tick_lock, tried without waiting). A failed tick is logged and tried again TICK_ERROR_WAIT
later; it never stops the worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from datetime import timedelta

import psycopg

from jobctl import queries
from jobctl.worker.calls import Database, GaveUp, bigint_array, error_fields, rows, value
from jobctl.worker.job import Job
from jobctl.worker.outbox import Outbox, ids
from jobctl.worker.running import Running, Slot

log = logging.getLogger("jobctl.worker")

# jobctl.tick(false) this often: orphans come back and schedules fire within about a second; after
# an error a retry cannot cure, this much later
TICK_EVERY, TICK_ERROR_WAIT = 0.25, 30.0
PROGRESS_EVERY = 1.0  # progress is written at most this often (the latest report wins)
BEAT_EVERY = 5.0  # a worker_beat this often (the registry forgets a worker an hour after its last)
GONE_WAIT = 2.0  # at exit, how long worker_gone may take


async def heartbeat_loop(db: Database, running: Running, outbox: Outbox, lease: float) -> None:
    loop = asyncio.get_running_loop()
    every = lease / 3
    next_at = loop.time() + every
    while True:
        await asyncio.sleep(max(0.0, next_at - loop.time()))
        next_at = loop.time() + every
        targets = _targets(running, outbox)
        if targets:
            await _heartbeat(db, running, targets, lease)


async def progress_loop(db: Database, running: Running, lease: float) -> None:
    """Send reported progress: at once, or PROGRESS_EVERY after the previous send (the latest wins)."""
    loop = asyncio.get_running_loop()
    sent_at = float("-inf")
    while True:
        await running.progress_reported.wait()
        await asyncio.sleep(max(0.0, sent_at + PROGRESS_EVERY - loop.time()))
        running.progress_reported.clear()  # a report from now on wakes the next round
        sent_at = loop.time()
        targets: dict[int, tuple[Job, Slot | None]] = {
            job_id: (slot.job, slot)
            for job_id, slot in running.active.items()
            if slot.job._progress is not None and slot.job._stop_reason is None
        }
        if targets:
            await _heartbeat(db, running, targets, lease)


def _targets(running: Running, outbox: Outbox) -> dict[int, tuple[Job, Slot | None]]:
    """What to heartbeat, by job_id: running jobs not told to stop (with their slot), and finished
    ones waiting for complete_jobs to be sent (no slot). One entry per job_id (the answers carry
    only the job_id): its newest epoch, since an older one's lease is gone anyway."""
    targets: dict[int, tuple[Job, Slot | None]] = {}
    for job, _ in outbox.waiting():
        known = targets.get(job.job_id)
        if known is None or known[0].lease_epoch < job.lease_epoch:
            targets[job.job_id] = (job, None)
    for slot in running.active.values():
        known = targets.get(slot.job.job_id)
        if slot.job._stop_reason is None and (known is None or known[0].lease_epoch < slot.job.lease_epoch):
            targets[slot.job.job_id] = (slot.job, slot)
    return targets


async def _heartbeat(
    db: Database, running: Running, targets: dict[int, tuple[Job, Slot | None]], lease: float
) -> None:
    ordered = sorted(targets)  # row locks in job_id order, as complete_jobs takes them
    # the running jobs' progress reported since their last heartbeat (a finished job's is not sent)
    progress = {
        job_id: text
        for job_id in ordered
        if targets[job_id][1] is not None and (text := targets[job_id][0]._take_progress()) is not None
    }
    params = {
        "job_ids": bigint_array(ordered),
        "lease_epochs": bigint_array(targets[job_id][0].lease_epoch for job_id in ordered),
        "extend": timedelta(seconds=lease),
        "progress": [progress.get(job_id) for job_id in ordered] if progress else None,
    }
    try:
        async with running.heartbeating:
            answers = await db.call("heartbeat", rows(queries.HEARTBEATS, params))
    except (GaveUp, psycopg.Error) as e:
        for job_id, text in progress.items():
            targets[job_id][0]._keep_progress(text)  # for the next heartbeat
        log.error("heartbeat failed", extra={"jobs": len(ordered), **error_fields(e)})
        return
    for job_id, status, refused_bytes in answers:  # one row per job_id sent
        job, slot = targets[job_id]
        if refused_bytes is not None:
            log.warning(
                "progress not stored: over 2000 bytes as jsonb",
                extra={**ids(job), "progress_bytes": refused_bytes},
            )
        if status == "ok":
            continue
        if slot is None:  # a finished job: its completion will be fenced and counted then
            log.debug("heartbeat of a finished job answered %s", status, extra=ids(job))
        elif running.active.get(job_id) is slot:
            running.stop(slot, status)


class Registration:
    """This worker's entry in the registry of workers: its beats, and whether one landed."""

    def __init__(self, worker_id: str, queues: list[str] | None, concurrency: int, running: Running) -> None:
        self.worker_id = worker_id
        self.running = running
        # what every beat says besides the jobs in flight
        self.beat_params = {
            "worker_id": worker_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "queues": queues,
            "concurrency": concurrency,
        }
        self.registered = False  # a beat landed: worker_gone is due at exit

    async def beat(self, db: Database) -> None:
        params = {**self.beat_params, "in_flight": self.running.busy}
        try:
            await db.call("worker_beat", value(queries.WORKER_BEAT, params))
        except psycopg.Error as e:
            log.warning("worker beat failed; trying again later", extra=error_fields(e))
            return
        self.registered = True

    async def gone(self, db: Database) -> None:
        """Leave the registry (a clean exit); a failure is logged: the entry expires after an hour."""
        if not self.registered:
            return
        try:
            await asyncio.wait_for(
                db.call("worker_gone", value(queries.WORKER_GONE, {"worker_id": self.worker_id})), GONE_WAIT
            )
        except (GaveUp, TimeoutError, psycopg.Error) as e:
            log.warning("could not leave the registry of workers", extra=error_fields(e))


async def tick_loop(db: Database, registration: Registration) -> None:
    loop = asyncio.get_running_loop()
    beat_at = loop.time()
    while True:
        try:
            if loop.time() >= beat_at:
                beat_at = loop.time() + BEAT_EVERY
                await registration.beat(db)
            await db.call("tick", value(queries.TICK, {}))
        except GaveUp:
            return
        except psycopg.Error as e:
            log.warning(
                "tick failed; trying again later", extra={**error_fields(e), "retry_in": TICK_ERROR_WAIT}
            )
            await asyncio.sleep(TICK_ERROR_WAIT)
            continue
        await asyncio.sleep(TICK_EVERY)
