"""Durable execution inside a handler (docs/durable.md): steps whose results later attempts read back,
and sleeps and event waits that give up the job's lease. The rules live in SQL (jobctl.save_step,
sleep_job, await_event: fenced by the lease epoch, first save wins); this module calls them and maps
their answers onto return values and exceptions.

A sleep or a wait that parks the job raises `Suspended`: the handler stops, the worker reports nothing
(the lease already ended in the database), and the job runs again from the top when it is due, its
saved steps answered from the database instead of run. A sleep is saved as the step `sleep:<n>` (the
n-th sleep of the handler's run, from 0) in the transaction that parks the job, so the run that
resumes goes past it; an event's outcome is the step `event:<name>`, saved by await_event.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from psycopg_pool import AsyncConnectionPool, ConnectionPool

from jobctl import queries

if TYPE_CHECKING:
    from jobctl.worker.job import AsyncConn, Conn, Job


class Suspended(BaseException):  # noqa: N818 - a control-flow signal, like asyncio.CancelledError
    """The job gave up its lease to sleep or to wait for an event; it runs again from the top when it
    is due. Derives from BaseException, as asyncio.CancelledError does, so that `except Exception`
    lets it through: a handler that catches BaseException (or uses a bare `except:`) must re-raise it.
    The worker ends the attempt without reporting it: it does not count against max_attempts."""


class EventTimeout(Exception):  # noqa: N818 - the name the docs and users know
    """`job.wait_for(event, timeout=...)`: the event was not emitted within the timeout. Raised again
    by every later run of the handler: the outcome is saved."""


def _stored(value: Any) -> str | None:
    """A step's result as jsonb text; ResultRefused (the job dies at once) for one jsonb refuses."""
    from jobctl.worker.job import ResultRefused, result_json

    try:
        return result_json(value)
    except ValueError as e:
        raise ResultRefused(str(e).replace("result ", "step result ", 1)) from None


def _params(job: Job, **more: Any) -> dict[str, Any]:
    return {"job_id": job.job_id, "lease_epoch": job.lease_epoch, **more}


def _fenced(job: Job, what: str) -> Exception:
    from jobctl.worker.job import LeaseLost

    return LeaseLost(f"job {job.job_id}: lease epoch {job.lease_epoch} is no longer current ({what})")


def _outside_transaction(job: Job, what: str) -> None:
    if job._tx_conn is not None:
        raise RuntimeError(f"job.{what} gives up the lease: call it outside job.transaction()")


def _answer(job: Job, event: str, outcome: str, payload: Any) -> Any:
    """await_event's answer as wait_for's: the payload, or an exception."""
    if outcome == "received":
        return payload
    if outcome == "timed_out":
        raise EventTimeout(f"event {event!r} was not emitted within the timeout")
    if outcome == "suspended":
        job._suspended = True
        raise Suspended(f"waiting for event {event!r}")
    raise _fenced(job, "await_event")


def _until(seconds_or_time: float | datetime) -> datetime:
    if isinstance(seconds_or_time, datetime):
        if seconds_or_time.tzinfo is None:
            raise ValueError("sleep_until needs an aware datetime (with a time zone)")
        return seconds_or_time
    return datetime.now(UTC) + timedelta(seconds=seconds_or_time)


def _sleep_name(job: Job) -> str:
    name = f"sleep:{job._sleeps}"
    job._sleeps += 1
    return name


def _spawn_name(job: Job, name: str | None) -> str:
    if name is None:
        name = str(job._spawns)
        job._spawns += 1
    return f"spawn:{name}"


def _child(queue: str, payload: Any, options: dict[str, Any]) -> str:
    from jobctl.worker.job import result_json

    return result_json({"queue": queue, "payload": payload, **options}) or "{}"


def _ended(job: Job, outcome: str, child_id: Any, state: Any, result: Any, error: Any) -> Any:
    """await_job's answer as spawn_and_wait's: the child's result, or an exception."""
    from jobctl.worker.job import ChildFailed

    if outcome == "ended":
        if state == "completed":
            return result
        raise ChildFailed(f"child job {child_id} ended {state}: {error or 'no error'}", child_id, state)
    if outcome == "suspended":
        job._suspended = True
        raise Suspended(f"waiting for child job {child_id}")
    raise _fenced(job, "await_job")


def _saved_end(job: Job, saved: dict[str, Any]) -> Any:
    return _ended(job, "ended", saved["child_id"], saved["state"], saved.get("result"), saved.get("error"))


# --- sync handlers (the job's pool is a ConnectionPool)


def steps_sync(job: Job, pool: ConnectionPool[Conn]) -> dict[str, Any]:
    if job._steps is None:
        with pool.connection() as conn:
            job._steps = {r[0]: r[1] for r in conn.execute(queries.JOB_STEPS, {"job_id": job.job_id})}
    return job._steps


def save_sync(job: Job, conn: Conn, name: str, value: Any) -> Any:
    text = _stored(value)
    row = conn.execute(queries.SAVE_STEP, _params(job, step=name, result=text)).fetchone()
    if not (row and row[0]):
        raise _fenced(job, f"save_step {name!r}")
    saved = None if text is None else json.loads(text)
    _cache(job)[name] = saved
    return saved


def _cache(job: Job) -> dict[str, Any]:
    assert job._steps is not None  # read before any save
    return job._steps


def step_sync(
    job: Job, pool: ConnectionPool[Conn], name: str, fn: Callable[..., Any], transaction: bool
) -> Any:
    steps = steps_sync(job, pool)
    if name in steps:
        return steps[name]
    if job._tx_conn is not None:  # inside job.transaction(): saved with its writes and the completion
        return save_sync(job, job._tx_conn, name, fn(job._tx_conn) if transaction else fn())
    if not transaction:
        value = fn()
        with pool.connection() as conn:
            return save_sync(job, conn, name, value)
    with pool.connection() as conn, conn.transaction():
        return save_sync(job, conn, name, fn(conn))


def sleep_sync(job: Job, pool: ConnectionPool[Conn], until: float | datetime) -> None:
    _outside_transaction(job, "sleep")
    name, steps = _sleep_name(job), steps_sync(job, pool)
    if name in steps:
        return  # slept: this run resumes past it
    when = _until(until)
    with pool.connection() as conn, conn.transaction():
        save_sync(job, conn, name, {"until": when.isoformat()})
        row = conn.execute(queries.SLEEP_JOB, _params(job, until=when)).fetchone()
        if not (row and row[0]):
            raise _fenced(job, "sleep_job")
    job._suspended = True
    raise Suspended(f"sleeping until {when.isoformat()}")


def wait_for_sync(job: Job, pool: ConnectionPool[Conn], event: str, timeout: float | None) -> Any:
    _outside_transaction(job, "wait_for")
    saved = steps_sync(job, pool).get(f"event:{event}")
    if saved is not None:
        return _answer(job, event, saved["outcome"], saved.get("payload"))
    with pool.connection() as conn:
        row = conn.execute(queries.AWAIT_EVENT, _params(job, event=event, timeout=timeout)).fetchone()
    assert row is not None
    return _answer(job, event, row[0], row[1])


def spawn_and_wait_sync(
    job: Job,
    pool: ConnectionPool[Conn],
    queue: str,
    payload: Any,
    name: str | None,
    cancel: bool,
    options: dict[str, Any],
) -> Any:
    _outside_transaction(job, "spawn_and_wait")
    step = _spawn_name(job, name)
    saved = steps_sync(job, pool).get(step)
    if saved is not None:
        return _saved_end(job, saved)
    params = _params(job, step=step, child=_child(queue, payload, options), cancel_with_parent=cancel)
    with pool.connection() as conn:
        row = conn.execute(queries.AWAIT_JOB, params).fetchone()
    assert row is not None
    return _ended(job, *row)


# --- async handlers (the job's pool is an AsyncConnectionPool)


async def steps_async(job: Job, pool: AsyncConnectionPool[AsyncConn]) -> dict[str, Any]:
    if job._steps is None:
        async with pool.connection() as conn:
            cur = await conn.execute(queries.JOB_STEPS, {"job_id": job.job_id})
            job._steps = {r[0]: r[1] for r in await cur.fetchall()}
    return job._steps


async def save_async(job: Job, conn: AsyncConn, name: str, value: Any) -> Any:
    text = _stored(value)
    cur = await conn.execute(queries.SAVE_STEP, _params(job, step=name, result=text))
    row = await cur.fetchone()
    if not (row and row[0]):
        raise _fenced(job, f"save_step {name!r}")
    saved = None if text is None else json.loads(text)
    _cache(job)[name] = saved
    return saved


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    return await value if inspect.isawaitable(value) else value


async def step_async(
    job: Job, pool: AsyncConnectionPool[AsyncConn], name: str, fn: Callable[..., Any], transaction: bool
) -> Any:
    steps = await steps_async(job, pool)
    if name in steps:
        return steps[name]
    if job._tx_conn is not None:
        value = await (_call(fn, job._tx_conn) if transaction else _call(fn))
        return await save_async(job, job._tx_conn, name, value)
    if not transaction:
        value = await _call(fn)
        async with pool.connection() as conn:
            return await save_async(job, conn, name, value)
    async with pool.connection() as conn, conn.transaction():
        return await save_async(job, conn, name, await _call(fn, conn))


async def sleep_async(job: Job, pool: AsyncConnectionPool[AsyncConn], until: float | datetime) -> None:
    _outside_transaction(job, "sleep")
    name, steps = _sleep_name(job), await steps_async(job, pool)
    if name in steps:
        return
    when = _until(until)
    async with pool.connection() as conn, conn.transaction():
        await save_async(job, conn, name, {"until": when.isoformat()})
        cur = await conn.execute(queries.SLEEP_JOB, _params(job, until=when))
        row = await cur.fetchone()
        if not (row and row[0]):
            raise _fenced(job, "sleep_job")
    job._suspended = True
    raise Suspended(f"sleeping until {when.isoformat()}")


async def wait_for_async(
    job: Job, pool: AsyncConnectionPool[AsyncConn], event: str, timeout: float | None
) -> Any:
    _outside_transaction(job, "wait_for")
    saved = (await steps_async(job, pool)).get(f"event:{event}")
    if saved is not None:
        return _answer(job, event, saved["outcome"], saved.get("payload"))
    async with pool.connection() as conn:
        cur = await conn.execute(queries.AWAIT_EVENT, _params(job, event=event, timeout=timeout))
        row = await cur.fetchone()
    assert row is not None
    return _answer(job, event, row[0], row[1])


async def spawn_and_wait_async(
    job: Job,
    pool: AsyncConnectionPool[AsyncConn],
    queue: str,
    payload: Any,
    name: str | None,
    cancel: bool,
    options: dict[str, Any],
) -> Any:
    _outside_transaction(job, "spawn_and_wait")
    step = _spawn_name(job, name)
    saved = (await steps_async(job, pool)).get(step)
    if saved is not None:
        return _saved_end(job, saved)
    params = _params(job, step=step, child=_child(queue, payload, options), cancel_with_parent=cancel)
    async with pool.connection() as conn:
        cur = await conn.execute(queries.AWAIT_JOB, params)
        row = await cur.fetchone()
    assert row is not None
    return _ended(job, *row)
