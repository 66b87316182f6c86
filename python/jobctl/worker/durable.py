"""Durable execution inside a handler (docs/durable.md): steps whose results later attempts read back,
and sleeps, event waits and child jobs that give up the job's lease. The rules live in SQL
(jobctl.save_step, sleep_job, await_event, await_job: fenced by the lease epoch, first save wins);
this module calls them and maps their answers onto return values and exceptions.

Each call is written once, as a plan: a generator that yields what it needs done (`Sql`: a statement's
rows; `Run`: the handler's function called; `InTransaction`: a plan run in one transaction of its own)
and gets the answers back. `run_sync` runs plans for sync handlers on the worker's ConnectionPool,
`run_async` for async handlers on its AsyncConnectionPool; inside `job.transaction()` every statement
and function goes to that transaction's connection.

A sleep or a wait that parks the job raises `Suspended`: the handler stops, the worker reports nothing
(the lease already ended in the database), and the job runs again from the top when it is due, its
saved steps answered from the database instead of run. A sleep is saved as the step `sleep:<n>` (the
n-th sleep of the handler's run, from 0) in the transaction that parks the job, so the run that
resumes goes past it; an event's outcome is the step `event:<name>`, saved by await_event.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Generator
from dataclasses import dataclass
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
        if child_id is None:  # the tenant is moving between shards: asked again there in a second
            raise Suspended("the tenant is moving to another shard: the child is spawned after the move")
        raise Suspended(f"waiting for child job {child_id}")
    raise _fenced(job, "await_job")


def _saved_end(job: Job, saved: dict[str, Any]) -> Any:
    return _ended(job, "ended", saved["child_id"], saved["state"], saved.get("result"), saved.get("error"))


@dataclass(frozen=True)
class Sql:
    """A plan's statement: its rows come back."""

    statement: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Run:
    """A plan's call of the handler's function: `fn(conn)` with the transaction's connection when
    `with_conn`, else `fn()`; its value comes back (awaited, for an async function)."""

    fn: Callable[..., Any]
    with_conn: bool


@dataclass(frozen=True)
class InTransaction:
    """A plan run in one transaction on a pooled connection of its own: its value comes back."""

    plan: Plan


Request = Sql | Run | InTransaction  # what a plan yields
Plan = Generator[Request, Any, Any]


# --- the plans


def _steps(job: Job) -> Plan:
    """The job's saved steps, read once an attempt (on its first durable call)."""
    if job._steps is None:
        rows = yield Sql(queries.JOB_STEPS, {"job_id": job.job_id})
        job._steps = {r[0]: r[1] for r in rows}
    return job._steps


def _save(job: Job, name: str, value: Any) -> Plan:
    """Save a step (LeaseLost when fenced); its value as it reads back from JSON."""
    text = _stored(value)
    rows = yield Sql(queries.SAVE_STEP, _params(job, step=name, result=text))
    if not (rows and rows[0][0]):
        raise _fenced(job, f"save_step {name!r}")
    saved = None if text is None else json.loads(text)
    assert job._steps is not None  # read before any save
    job._steps[name] = saved
    return saved


def _run_then_save(job: Job, name: str, fn: Callable[..., Any], with_conn: bool) -> Plan:
    value = yield Run(fn, with_conn)
    return (yield from _save(job, name, value))


def step(job: Job, name: str, fn: Callable[..., Any], transaction: bool) -> Plan:
    steps = yield from _steps(job)
    if name in steps:
        return steps[name]
    if transaction and job._tx_conn is None:  # fn's writes and the save in a transaction of their own
        return (yield InTransaction(_run_then_save(job, name, fn, True)))
    # inside job.transaction() the save commits with its writes; else fn() runs, then its save
    return (yield from _run_then_save(job, name, fn, transaction))


def _park_asleep(job: Job, name: str, until: datetime) -> Plan:
    yield from _save(job, name, {"until": until.isoformat()})
    rows = yield Sql(queries.SLEEP_JOB, _params(job, until=until))
    if not (rows and rows[0][0]):
        raise _fenced(job, "sleep_job")


def sleep(job: Job, until: float | datetime) -> Plan:
    _outside_transaction(job, "sleep")
    name, steps = _sleep_name(job), (yield from _steps(job))
    if name in steps:
        return None  # slept: this run resumes past it
    when = _until(until)
    yield InTransaction(_park_asleep(job, name, when))
    job._suspended = True
    raise Suspended(f"sleeping until {when.isoformat()}")


def wait_for(job: Job, event: str, timeout: float | None) -> Plan:
    _outside_transaction(job, "wait_for")
    saved = (yield from _steps(job)).get(f"event:{event}")
    if saved is not None:
        return _answer(job, event, saved["outcome"], saved.get("payload"))
    rows = yield Sql(queries.AWAIT_EVENT, _params(job, event=event, timeout=timeout))
    return _answer(job, event, rows[0][0], rows[0][1])


def spawn_and_wait(
    job: Job, queue: str, payload: Any, name: str | None, cancel: bool, options: dict[str, Any]
) -> Plan:
    _outside_transaction(job, "spawn_and_wait")
    step_name = _spawn_name(job, name)
    saved = (yield from _steps(job)).get(step_name)
    if saved is not None:
        return _saved_end(job, saved)
    params = _params(job, step=step_name, child=_child(queue, payload, options), cancel_with_parent=cancel)
    rows = yield Sql(queries.AWAIT_JOB, params)
    return _ended(job, *rows[0])


# --- the runners: the same plan for sync handlers and for async ones


def run_sync(job: Job, pool: ConnectionPool[Conn], plan: Plan, conn: Conn | None = None) -> Any:
    conn = conn or job._tx_conn
    answer: Any = None
    while True:
        try:
            request = plan.send(answer)
        except StopIteration as stop:
            return stop.value
        if isinstance(request, Sql):
            if conn is not None:
                answer = conn.execute(request.statement, request.params).fetchall()
            else:
                with pool.connection() as own:
                    answer = own.execute(request.statement, request.params).fetchall()
        elif isinstance(request, Run):
            answer = request.fn(conn) if request.with_conn else request.fn()
        else:
            with pool.connection() as own, own.transaction():
                answer = run_sync(job, pool, request.plan, own)


async def run_async(
    job: Job, pool: AsyncConnectionPool[AsyncConn], plan: Plan, conn: AsyncConn | None = None
) -> Any:
    conn = conn or job._tx_conn
    answer: Any = None
    while True:
        try:
            request = plan.send(answer)
        except StopIteration as stop:
            return stop.value
        if isinstance(request, Sql):
            if conn is not None:
                answer = await (await conn.execute(request.statement, request.params)).fetchall()
            else:
                async with pool.connection() as own:
                    answer = await (await own.execute(request.statement, request.params)).fetchall()
        elif isinstance(request, Run):
            value = request.fn(conn) if request.with_conn else request.fn()
            answer = await value if inspect.isawaitable(value) else value
        else:
            async with pool.connection() as own, own.transaction():
                answer = await run_async(job, pool, request.plan, own)
