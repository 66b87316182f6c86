"""Handlers the durable-execution tests run (`--handler durable_handlers:NAME`, tests/ as the current
directory). Each logs `handler started job=ID epoch=N attempt=A` first.

five_steps (sync): steps s1..s5, each `transaction=True` writing its row to public.durable_effect in
the step's own transaction; after s3, while the file in payload["gate"] is missing, it logs
`after s3 job=ID` and waits (a test kills the worker there). Returns {"steps": 5}.
sleeper (async): with payload["sleep"], a step, then `job.sleep(payload["sleep"])`; then returns
{"woke": True}. It writes a public.durable_run (job, phase, at) row as each run starts and as it ends.
waiter (async) and waiter_sync: `job.wait_for(payload["event"], timeout=payload.get("timeout"))`;
returns {"payload": ...} or {"timed_out": true}.
spawner (async): `job.spawn_and_wait` of a child (doubler) in payload["child_queue"]; returns its result.
mixed (sync): a step on its own, then one inside job.transaction().
step_sleep_wait (sync): the step `before` (its public.durable_effect row in the step's transaction),
a sleep of payload["sleep"] seconds when given, then a wait for payload["event"]; returns
{"payload": ...}.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from jobctl.worker import EventTimeout, Job, PermanentError

log = logging.getLogger("durable_handlers")

EFFECT = "insert into public.durable_effect (job_id, step, attempt) values (%s, %s, %s)"
RUN = "insert into public.durable_run (job_id, phase) values (%s, %s)"


def _started(job: Job) -> None:
    log.info("handler started job=%s epoch=%s attempt=%s", job.job_id, job.lease_epoch, job.attempt)


def five_steps(job: Job) -> Any:
    _started(job)
    for i in range(1, 6):
        name = f"s{i}"

        def effect(conn: Any, name: str = name) -> Any:
            conn.execute(EFFECT, (job.job_id, name, job.attempt))
            return {"step": name}

        job.step(name, effect, transaction=True)
        if i == 3:
            gate = str(job.payload.get("gate", ""))
            while gate and not os.path.exists(gate):
                log.info("after s3 job=%s", job.job_id)
                time.sleep(0.05)
    return {"steps": 5}


async def sleeper(job: Job) -> Any:
    _started(job)
    assert job._pool is not None
    async with job._pool.connection() as conn:  # type: ignore[union-attr]
        await conn.execute(RUN, (job.job_id, "start"))
    if "sleep" in job.payload:
        await job.step("before", lambda: {"at": time.time()})
        await job.sleep(float(job.payload["sleep"]))
    async with job._pool.connection() as conn:  # type: ignore[union-attr]
        await conn.execute(RUN, (job.job_id, "end"))
    return {"woke": True}


async def waiter(job: Job) -> Any:
    _started(job)
    try:
        return {"payload": await job.wait_for(str(job.payload["event"]), timeout=job.payload.get("timeout"))}
    except EventTimeout:
        return {"timed_out": True}


def waiter_sync(job: Job) -> Any:
    _started(job)
    try:
        return {"payload": job.wait_for(str(job.payload["event"]), timeout=job.payload.get("timeout"))}
    except EventTimeout:
        return {"timed_out": True}


async def spawner(job: Job) -> Any:
    """Spawns one child in payload["child_queue"] with payload {"n": n, "fail": fail} and returns its
    result; a child that died raises ChildFailed (the parent dies too)."""
    _started(job)
    p = job.payload
    child = {"n": p["n"], "fail": p.get("fail", False)}
    return {"child": await job.spawn_and_wait(p["child_queue"], child, name="double", max_attempts=1)}


async def doubler(job: Job) -> Any:
    _started(job)
    if job.payload.get("fail"):
        raise PermanentError("the child fails")
    return {"double": 2 * int(job.payload["n"])}


def mixed(job: Job) -> Any:
    """A sync handler's step outside any transaction, then one inside job.transaction(), saved there
    with the handler's own write and the completion."""
    _started(job)
    plain = job.step("plain", lambda: {"x": 1})
    with job.transaction() as conn:
        conn.execute(EFFECT, (job.job_id, "tx", job.attempt))
        inside = job.step("in_tx", lambda c: c.execute("select 2").fetchone()[0], transaction=True)
        job.result = {"plain": plain, "in_tx": inside}
    return None


def step_sleep_wait(job: Job) -> Any:
    _started(job)

    def effect(conn: Any) -> Any:
        conn.execute(EFFECT, (job.job_id, "before", job.attempt))
        return {"attempt": job.attempt}

    job.step("before", effect, transaction=True)
    if job.payload.get("sleep"):
        job.sleep(float(job.payload["sleep"]))
    return {"payload": job.wait_for(str(job.payload["event"]))}
