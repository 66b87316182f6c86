"""Handlers the worker tests run (`--handler worker_handlers:NAME`, with tests/ as the current directory).

Each reads what to do from the job's payload:
  sleep: seconds to sleep first;  sleep_attempt: sleep only on this attempt;
  sleeps: seconds to sleep on attempt 1, 2, ... (instead of sleep; 0 past the list's end);
  fail_times: raise on attempts up to this one;  permanent: raise PermanentError instead;
  ledger: false to skip the ledger row;  tx_sleep: seconds to sleep inside the transaction;
  result: the result to store;  nest: return a list nested this deep (no JSON for it);
  tx_nest: store such a list with job.transaction();  unserialisable: return an object json cannot encode;
  broken_mapping: return a mapping whose items() fails (an unexpected error in the worker's report);
  bad_str: raise an exception whose str() fails;  nul_error: raise one with a NUL in its message;
  raise_deep: raise a ValueError with this message from three calls down (_innermost_frame_of_the_test),
  chained to a KeyError (the traceback the worker records).
Then it writes a row to public.worker_ledger inside job.transaction(), which completes the job.
The progress handlers (handle_progress, handle_progress_sync) read instead:
  steps: report {"done": i, "total": steps, "attempt": attempt} for i = 1..steps, `pause` seconds apart;
  gate: after step 1, wait until the file <gate>.<attempt> exists;  then: seconds to wait after the last;
  burst: first report {"i": 1} .. {"i": burst} as fast as it can, `burst_pause` seconds apart;
  extra: a progress to report first (a value the database refuses, say), `after_extra` seconds before
  the steps; its ValueError, if any, is returned in the result as `refused`.
Each handler first logs `handler started job=ID epoch=N` (the worker's log, in its format), so that a test
can tell a running handler from a job whose claim committed but whose answer the worker has not read.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from typing import Any

from jobctl.worker import Job, PermanentError

log = logging.getLogger("worker_handlers")

LEDGER = "insert into public.worker_ledger (job_id, lease_epoch) values (%s, %s)"


class BadStr(Exception):
    """An exception whose str() fails, as a buggy exception class's can."""

    def __str__(self) -> str:
        raise AttributeError("BadStr has no message")


class BrokenMapping(dict[str, Any]):
    """A mapping whose items() fails: json.dumps raises neither TypeError nor ValueError for it."""

    def items(self) -> Any:
        raise RuntimeError("broken items")


def _started(job: Job) -> None:
    log.info("handler started job=%s epoch=%s", job.job_id, job.lease_epoch)


def _sleep_for(job: Job) -> float:
    p = job.payload
    if "sleeps" in p:
        sleeps = p["sleeps"]
        return float(sleeps[job.attempt - 1]) if job.attempt <= len(sleeps) else 0.0
    wanted = p.get("sleep_attempt")
    return float(p.get("sleep", 0)) if wanted is None or wanted == job.attempt else 0.0


def _maybe_fail(job: Job) -> None:
    p = job.payload
    if job.attempt <= int(p.get("fail_times", 0)):
        if p.get("permanent"):
            raise PermanentError(f"permanent failure on attempt {job.attempt}")
        raise RuntimeError(f"failure on attempt {job.attempt}")
    if p.get("bad_str"):
        raise BadStr()
    if p.get("nul_error"):
        raise RuntimeError("a NUL \x00 here")
    if "raise_deep" in p:
        _outer_frame(str(p["raise_deep"]))


def _outer_frame(message: str) -> None:
    try:
        {}["missing"]  # noqa: B018 - the KeyError the ValueError is raised while handling
    except KeyError:
        _middle_frame(message)


def _middle_frame(message: str) -> None:
    _innermost_frame_of_the_test(message)


def _innermost_frame_of_the_test(message: str) -> None:
    raise ValueError(message)


def _nested(depth: int) -> Any:
    value: Any = None
    for _ in range(depth):
        value = [value]
    return value


async def handle(job: Job) -> Any:
    """The async handler."""
    _started(job)
    await asyncio.sleep(_sleep_for(job))
    _maybe_fail(job)
    if job.payload.get("ledger", True):
        job.result = job.payload.get("result", {"job": job.job_id})
        if "tx_nest" in job.payload:
            job.result = _nested(int(job.payload["tx_nest"]))
        async with job.transaction() as conn:
            await conn.execute(LEDGER, (job.job_id, job.lease_epoch))
            await asyncio.sleep(float(job.payload.get("tx_sleep", 0)))
        return None
    if "nest" in job.payload:
        return _nested(int(job.payload["nest"]))
    if job.payload.get("broken_mapping"):
        return BrokenMapping(a=1)
    if job.payload.get("unserialisable"):
        return {"at": object()}
    return job.payload.get("result")


def handle_sync(job: Job) -> Any:
    """The sync handler; it sleeps cooperatively (returns early when the worker cancels it)."""
    _started(job)
    if job.wait_cancelled(_sleep_for(job)):
        return None
    return _finish_sync(job)


def handle_sync_stubborn(job: Job) -> Any:
    """A sync handler that ignores cancellation (time.sleep), as a zombie would."""
    _started(job)
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


def _progress_plan(job: Job) -> tuple[list[Any], str | None]:
    """What a progress handler reports, and the ValueError (if any) of its `extra` report."""
    p = job.payload
    refused = None
    if "extra" in p:
        extra = _nested(101) if p["extra"] == "too_deep" else p["extra"]
        try:
            job.report_progress(extra)
        except ValueError as e:
            refused = str(e)
    steps = int(p.get("steps", 0))
    return [{"done": i, "total": steps, "attempt": job.attempt} for i in range(1, steps + 1)], refused


async def handle_progress(job: Job) -> Any:
    """Reports progress (see the module's doc); returns its refusal, if any."""
    _started(job)
    p = job.payload
    for i in range(1, int(p.get("burst", 0)) + 1):
        job.report_progress({"i": i})
        await asyncio.sleep(float(p.get("burst_pause", 0)))
    reports, refused = _progress_plan(job)
    await asyncio.sleep(float(p.get("after_extra", 0)))
    for n, report in enumerate(reports, 1):
        job.report_progress(report)
        if n == 1 and p.get("gate"):
            while not os.path.exists(f"{p['gate']}.{job.attempt}"):
                await asyncio.sleep(0.05)
        elif n < len(reports):
            await asyncio.sleep(float(p.get("pause", 0)))
    await asyncio.sleep(float(p.get("then", 0)))
    return {"refused": refused}


def handle_progress_sync(job: Job) -> Any:
    """The same in a thread."""
    _started(job)
    p = job.payload
    for i in range(1, int(p.get("burst", 0)) + 1):
        job.report_progress({"i": i})
        time.sleep(float(p.get("burst_pause", 0)))
    reports, refused = _progress_plan(job)
    time.sleep(float(p.get("after_extra", 0)))
    for n, report in enumerate(reports, 1):
        job.report_progress(report)
        if n == 1 and p.get("gate"):
            while not os.path.exists(f"{p['gate']}.{job.attempt}"):
                time.sleep(0.05)
        elif n < len(reports):
            time.sleep(float(p.get("pause", 0)))
    time.sleep(float(p.get("then", 0)))
    return {"refused": refused}


def handle_sync_crash(job: Job) -> Any:
    """Kills the worker's heartbeat task (a worker task dying: the worker shuts down and exits 1),
    then sleeps ignoring cancellation, as a stuck thread would."""
    _started(job)
    loop = next(o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and o.is_running())

    def kill_heartbeat() -> None:
        for task in asyncio.all_tasks(loop):
            if task.get_name() == "jobctl-heartbeat":
                task.cancel()

    loop.call_soon_threadsafe(kill_heartbeat)
    time.sleep(_sleep_for(job))
    return None


# --- workflows: what a job sees of its parents and its batch (tests/test_worker_flows.py).
# A payload {"result": X} returns X; {"die": true} fails for good; any other returns what the job read.


def _flow_answer(job: Job, parents: Any, batch: Any) -> Any:
    _started(job)
    if job.payload.get("die"):
        raise PermanentError("told to die")
    if "result" in job.payload:
        return job.payload["result"]
    seen = None if batch is None else {
        "batch_id": batch.batch_id, "counts": batch.counts, "finished": batch.finished_at is not None,
    }  # fmt: skip
    return {"parents": parents, "batch": seen}


def flow_sync(job: Job) -> Any:
    parents = job.parent_results
    assert job.parent_results is parents  # cached: read once
    return _flow_answer(job, parents, job.batch)


async def flow_async(job: Job) -> Any:
    parents = await job.load_parent_results()
    assert job.parent_results is parents
    return _flow_answer(job, parents, await job.load_batch())
