"""Handlers the worker tests run (`--handler worker_handlers:NAME`, with tests/ as the current directory).

Each reads what to do from the job's payload:
  sleep: seconds to sleep first;  sleep_attempt: sleep only on this attempt;
  fail_times: raise on attempts up to this one;  permanent: raise PermanentError instead;
  ledger: false to skip the ledger row;  tx_sleep: seconds to sleep inside the transaction;
  result: the result to store.
Then it writes a row to public.worker_ledger inside job.transaction(), which completes the job.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from jobctl.worker import Job, PermanentError

LEDGER = "insert into public.worker_ledger (job_id, lease_epoch) values (%s, %s)"


def _sleep_for(job: Job) -> float:
    p = job.payload
    wanted = p.get("sleep_attempt")
    return float(p.get("sleep", 0)) if wanted is None or wanted == job.attempt else 0.0


def _maybe_fail(job: Job) -> None:
    p = job.payload
    if job.attempt <= int(p.get("fail_times", 0)):
        if p.get("permanent"):
            raise PermanentError(f"permanent failure on attempt {job.attempt}")
        raise RuntimeError(f"failure on attempt {job.attempt}")


async def handle(job: Job) -> Any:
    """The async handler."""
    await asyncio.sleep(_sleep_for(job))
    _maybe_fail(job)
    if job.payload.get("ledger", True):
        job.result = job.payload.get("result", {"job": job.job_id})
        async with job.transaction() as conn:
            await conn.execute(LEDGER, (job.job_id, job.lease_epoch))
            await asyncio.sleep(float(job.payload.get("tx_sleep", 0)))
        return None
    return job.payload.get("result")


def handle_sync(job: Job) -> Any:
    """The sync handler; it sleeps cooperatively (returns early when the worker cancels it)."""
    if job.wait_cancelled(_sleep_for(job)):
        return None
    return _finish_sync(job)


def handle_sync_stubborn(job: Job) -> Any:
    """A sync handler that ignores cancellation (time.sleep), as a zombie would."""
    time.sleep(_sleep_for(job))
    return _finish_sync(job)


def _finish_sync(job: Job) -> Any:
    _maybe_fail(job)
    if job.payload.get("ledger", True):
        job.result = job.payload.get("result", {"job": job.job_id})
        with job.transaction() as conn:
            conn.execute(LEDGER, (job.job_id, job.lease_epoch))
            time.sleep(float(job.payload.get("tx_sleep", 0)))
        return None
    return job.payload.get("result")
