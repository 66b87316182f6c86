"""Reporting outcomes to the database: completions in batches through an outbox, failures and
give-backs one by one.

Finished jobs wait in the outbox, which one task (`run`) sends with complete_jobs as soon as the
previous batch has its answer: whatever accumulated meanwhile goes in the next batch (at most
MAX_BATCH). A batch that fails with an error a retry cannot cure is sent again one job at a time; a
job whose own completion fails is failed, with cause `refused` when its result was refused
(`job.result_refused`: SQLSTATE class 22 or 54, JC001 or JC002, e.g. a result nested too deep), for
which fail_job decides no retry, else as a failure to retry.
Completions are retried until they get an answer, never dropped; until a batch's statement is sent,
the heartbeat extends its jobs' leases (`waiting`). A failed fail_job or release_job is logged with
the job ids, and the job comes back when its lease expires.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg

from jobctl import queries, tracing
from jobctl.errors import first_line
from jobctl.worker.calls import Database, GaveUp, Sending, bigint_array, describe, error_fields, rows, value
from jobctl.worker.job import Job, rejection, result_refused

log = logging.getLogger("jobctl.worker")

MAX_BATCH = 1000  # claim_job's and complete_jobs' cap


def counter(help_text: str) -> Any:
    """A count of `Stats`, served as jobctl_worker_jobs_<name>_total (worker/metrics.py) with this help."""
    return field(default=0, metadata={"help": help_text})


@dataclass
class Stats:
    """What a worker did; `failed` and `dead` count fail_job answers, timeouts included."""

    claimed: int = counter("Jobs this process claimed.")
    completed: int = counter("Jobs this process completed.")
    failed: int = counter("Attempts this process failed with a retry to come (timeouts included).")
    dead: int = counter("Attempts this process failed that made their job dead.")
    fenced: int = counter("Reports of this process refused for a stale lease (a lost lease).")
    cancelled: int = counter("Jobs cancelled while this process ran them.")
    timed_out: int = counter("Jobs that ran past their timeout here.")
    released: int = counter("Jobs given back at shutdown.")
    suspended: int = counter("Jobs that gave up their lease to sleep or to wait for an event.")
    elapsed: float = 0.0

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = asdict(self)
        out["elapsed"] = round(self.elapsed, 3)
        out["jobs_per_s"] = round(self.completed / self.elapsed, 1) if self.elapsed > 0 else 0.0
        return out


def ids(job: Job) -> dict[str, Any]:
    """A job's log fields."""
    return {"job_id": job.job_id, "lease_epoch": job.lease_epoch, "attempt": job.attempt}


class Outbox:
    def __init__(self, db: Database, stats: Stats) -> None:
        self.db = db
        self.stats = stats
        self._entries: list[tuple[Job, str | None]] = []  # finished jobs waiting for complete_jobs
        self._sending: list[tuple[Job, str | None]] = []  # the batch being sent
        self._send_state = Sending()  # whether that batch's statement is on the wire
        self._wake = asyncio.Event()
        self._closing = False

    def add(self, job: Job, result: str | None) -> None:
        self._entries.append((job, result))
        self._wake.set()

    def waiting(self) -> list[tuple[Job, str | None]]:
        """The finished jobs whose complete_jobs statement has not been sent: their leases must last."""
        return self._entries if self._send_state.sent else [*self._sending, *self._entries]

    def close(self) -> None:
        """`run` sends what is left and returns."""
        self._closing = True
        self._wake.set()

    async def run(self) -> None:
        while True:
            if not self._entries:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            batch, self._entries = self._entries[:MAX_BATCH], self._entries[MAX_BATCH:]
            self._sending, self._send_state = batch, Sending()
            try:
                await self._complete(batch)
            except GaveUp as e:
                unsent = len(batch) + len(self._entries)
                log.error(
                    "completions not sent; those jobs run again after their lease",
                    extra={"jobs": unsent, "error": str(e)},
                )
                self._entries.clear()
                return
            finally:
                self._sending = []

    async def _complete(self, batch: list[tuple[Job, str | None]]) -> None:
        batch.sort(key=lambda entry: entry[0].job_id)  # row locks in job_id order, as heartbeats take them
        results = [result for _, result in batch]
        params = {
            "job_ids": bigint_array(job.job_id for job, _ in batch),
            "lease_epochs": bigint_array(job.lease_epoch for job, _ in batch),
            # NULL when no job has a result: complete_jobs then skips joining the results
            "results": results if any(r is not None for r in results) else None,
        }
        started_ns = time.time_ns()
        try:
            answers = await self.db.call(
                "complete_jobs", rows(queries.COMPLETE_JOBS, params, self._send_state)
            )
        except psycopg.Error as e:  # GaveUp (no psycopg.Error) goes to run
            first_ids = ",".join(str(j.job_id) for j, _ in batch[:20])
            extra = {"jobs": len(batch), **error_fields(e), "job_ids": first_ids}
            log.error("complete_jobs failed; completing one by one", extra=extra)
            await self._complete_each(batch)
            return
        ended_ns = time.time_ns()
        fenced = {n - 1 for (n,) in answers}
        self.stats.completed += len(batch) - len(fenced)
        for i in fenced:
            self._completed(batch[i][0], False)
        for i, (job, _) in enumerate(batch):
            if job._span is not None:
                completed = i not in fenced
                tracing.reported("jobctl complete", job._span, started_ns, ended_ns, completed, **{
                    "jobctl.batch": len(batch),
                })  # fmt: skip

    async def _complete_each(self, batch: list[tuple[Job, str | None]]) -> None:
        for job, result in batch:
            params = {"job_id": job.job_id, "lease_epoch": job.lease_epoch, "result": result}
            started_ns = time.time_ns()
            try:
                ok = await self.db.call("complete_job", value(queries.COMPLETE_JOB, params))
            except psycopg.Error as e:
                log.error("could not complete job", extra={**ids(job), **error_fields(e)})
                if result_refused(e):  # the result itself
                    await self.fail(job, rejection(e), cause="refused")
                else:
                    await self.fail(job, f"completion failed: {describe(e, one_line=True)}")
                continue
            self._completed(job, bool(ok))
            if job._span is not None:
                tracing.reported("jobctl complete", job._span, started_ns, time.time_ns(), bool(ok))

    def _completed(self, job: Job, completed: bool) -> None:
        if completed:
            self.stats.completed += 1
        else:
            self.stats.fenced += 1
            log.warning("job completion fenced: its lease was no longer current", extra=ids(job))

    async def fail(
        self,
        job: Job,
        error: str | None,
        *,
        retryable: bool = True,
        traceback: str | None = None,
        cause: str | None = None,
    ) -> None:
        """fail_job: `error` as last_error, `traceback` (calls.trace: a handler's exception's) as
        last_traceback (None: the failure has none, as a timeout's). `retryable` False: the handler
        said no retry (PermanentError). `cause`: why the attempt ended when no handler failed it,
        `timed_out` or `refused`; fail_job decides the retry (and a timeout's message) by it."""
        params = {
            "job_id": job.job_id,
            "lease_epoch": job.lease_epoch,
            "error": None if error is None else error.replace("\x00", "\\0"),  # text cannot hold NUL
            "retryable": retryable,
            "traceback": traceback,
            "cause": cause,
        }
        started_ns, job_error = time.time_ns(), first_line(error or cause or "")
        try:
            state = await self.db.call("fail_job", value(queries.FAIL_JOB, params))
        except (GaveUp, psycopg.Error) as e:
            extra = {**ids(job), **error_fields(e), "job_error": job_error}
            log.error("could not fail job; it returns when its lease expires", extra=extra)
            return
        extra = {**ids(job), "error": job_error}
        if job._span is not None:
            tracing.reported("jobctl fail", job._span, started_ns, time.time_ns(), state is not None, **{
                "jobctl.state": state or "fenced", "jobctl.retryable": state == "failed",
            })  # fmt: skip
        if state is None:
            self.stats.fenced += 1
            log.warning("job failure fenced: its lease was no longer current", extra=extra)
        elif state == "dead":
            self.stats.dead += 1
            log.warning("job dead", extra=extra)
        else:
            self.stats.failed += 1
            log.info("job failed; a retry is scheduled", extra=extra)

    async def release(self, job: Job) -> None:
        params = {"job_id": job.job_id, "lease_epoch": job.lease_epoch}
        try:
            released = await self.db.call("release_job", value(queries.RELEASE_JOB, params))
        except (GaveUp, psycopg.Error) as e:
            extra = {**ids(job), **error_fields(e)}
            log.error("could not release job; it returns when its lease expires", extra=extra)
            return
        if released:
            self.stats.released += 1
            log.info("job released at shutdown", extra=ids(job))
        else:
            self.stats.fenced += 1
            log.warning("job release fenced: its lease was no longer current", extra=ids(job))
