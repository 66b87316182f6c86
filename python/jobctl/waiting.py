"""Waiting for a job to finish (`Client.wait`, `AsyncClient.wait`; docs/client.md, Waiting for a
result): woken by a completion hint, with polling behind it.

A wait opens a connection of its own (application_name `jobctl-wait`), LISTENs there on a random
channel (`jobctl_wait_` and 32 hex digits: no other login can guess it, so none hears the hint) and
registers the channel with `jobctl.watch_job`, which returns the job. When the job completes, dies or
is cancelled, the finishing transaction sends `NOTIFY <channel>` (jobctl._hint_finished) and the wait
reads the job at once. The listening connection goes to `Client(listen_dsn=...)`, JOBCTL_LISTEN_DSN, or
the client's DSN; behind a transaction pooler (JOBCTL_POOLER=transaction) with neither, there is none
and the wait polls only (docs/operations.md, Connection pooling).

Between hints it polls with get_job on the client's own connection, 50 ms after the start, then
doubling up to 1 s, so that a lost hint, or a listener whose connection dropped (the wait then goes
on polling only), costs at most a second. With `hint=False` it only polls: no second connection, no
waiter row.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from jobctl import db, errors, queries

if TYPE_CHECKING:
    from jobctl.client import AsyncClient, Client, JobInfo

log = logging.getLogger("jobctl.wait")

FINISHED = frozenset({"completed", "dead", "cancelled"})
FIRST_POLL = 0.05  # seconds: the first look after the start, doubling...
MAX_POLL = 1.0  # ...up to this: a lost hint costs at most a second
MAX_WATCH = 3600.0  # a waiter lives at most an hour (watch_job's bound); a longer wait registers again
APPLICATION_NAME = "jobctl-wait"


def seconds(timeout: timedelta | float) -> float:
    """A wait's length in seconds: more than 0 and finite (InvalidInput naming `timeout` otherwise)."""
    value = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise errors.InvalidInput(
            f"timeout must be a positive number of seconds, not {timeout!r}",
            sqlstate="JC001",
            field="timeout",
        )
    return float(value)


def new_channel() -> str:
    return "jobctl_wait_" + secrets.token_hex(16)


def polls() -> Iterator[float]:
    """The pauses between looks: 50 ms, doubling, then 1 s each."""
    pause = FIRST_POLL
    while True:
        yield pause
        pause = min(pause * 2, MAX_POLL)


def _outcome(job_id: int, job: JobInfo | None, deadline: float, limit: float) -> JobInfo | None:
    """The finished job to return, or None to go on waiting; raises when there is no job to wait for or
    the time is up."""
    if job is None:
        raise errors.NotFound(f"job {job_id} not found", sqlstate="P0002", field="job_id")
    if job.state in FINISHED:
        return job
    if time.monotonic() >= deadline:
        raise errors.WaitTimeout(f"job {job_id} is still {job.state} after {limit:g} s", job=job)
    return None


def _listen_sql(channel: str) -> sql.Composed:
    return sql.SQL(queries.LISTEN_CHANNEL).format(sql.Identifier(channel))


def _connect_kwargs(dsn: str) -> dict[str, Any]:
    return db.connection_kwargs(dsn, APPLICATION_NAME, autocommit=True)


_said_polling = False  # the log line that waits only poll behind the pooler: once a process


def _listen_target(client: Client | AsyncClient, hint: bool) -> str | None:
    """Where the wait LISTENs (None: it only polls)."""
    global _said_polling
    if not hint:
        return None
    target = db.listen_dsn(client.dsn, client.listen_dsn)
    if target is None and not _said_polling:
        _said_polling = True
        log.info("behind a transaction pooler with no JOBCTL_LISTEN_DSN: waits poll only")
    return target


def wait(client: Client, job_id: int, limit: float, hint: bool) -> JobInfo:
    deadline = time.monotonic() + limit
    channel = new_channel()
    listener: psycopg.Connection[Any] | None = None
    watched_until = math.inf  # when the waiter registered expires
    target = _listen_target(client, hint)
    try:
        job: JobInfo | None = None
        if target is not None:
            try:
                listener = psycopg.connect(target, **_connect_kwargs(target))
                listener.execute(_listen_sql(channel))
                watched_until = time.monotonic() + min(limit, MAX_WATCH)
                job = client.watch_job(job_id, channel, min(limit, MAX_WATCH), conn=listener)
            except psycopg.OperationalError as e:  # the listener broke before it listened: poll
                log.info("the wait's listener broke (%s): polling only", str(e).strip())
                if listener is not None:
                    listener.close()
                listener, target = None, None
        if target is None:
            job = client.get_job(job_id)
        for pause in polls():
            if (done := _outcome(job_id, job, deadline, limit)) is not None:
                return done
            listener = _pause(listener, min(pause, deadline - time.monotonic()))
            if listener is not None and time.monotonic() >= watched_until:
                watched_until = time.monotonic() + min(deadline - time.monotonic(), MAX_WATCH)
                job = client.watch_job(
                    job_id, channel, max(watched_until - time.monotonic(), 1), conn=listener
                )
            else:
                job = client.get_job(job_id)
        raise AssertionError("unreachable")  # polls() never ends
    finally:
        if listener is not None:
            listener.close()


def _pause(listener: psycopg.Connection[Any] | None, pause: float) -> psycopg.Connection[Any] | None:
    """Sleep up to `pause` seconds, less when a hint arrives; the listener, or None once it broke."""
    if listener is None:
        time.sleep(max(pause, 0))
        return None
    try:
        for _ in listener.notifies(timeout=max(pause, 0), stop_after=1):
            pass
        return listener
    except psycopg.OperationalError as e:
        log.info("the wait's listener broke (%s): polling only", str(e).strip())
        listener.close()
        return None


async def wait_async(client: AsyncClient, job_id: int, limit: float, hint: bool) -> JobInfo:
    deadline = time.monotonic() + limit
    channel = new_channel()
    listener: psycopg.AsyncConnection[Any] | None = None
    watched_until = math.inf
    target = _listen_target(client, hint)
    try:
        job: JobInfo | None = None
        if target is not None:
            try:
                listener = await psycopg.AsyncConnection.connect(target, **_connect_kwargs(target))
                await listener.execute(_listen_sql(channel))
                watched_until = time.monotonic() + min(limit, MAX_WATCH)
                job = await client.watch_job(job_id, channel, min(limit, MAX_WATCH), conn=listener)
            except psycopg.OperationalError as e:
                log.info("the wait's listener broke (%s): polling only", str(e).strip())
                if listener is not None:
                    await listener.close()
                listener, target = None, None
        if target is None:
            job = await client.get_job(job_id)
        for pause in polls():
            if (done := _outcome(job_id, job, deadline, limit)) is not None:
                return done
            listener = await _pause_async(listener, min(pause, deadline - time.monotonic()))
            if listener is not None and time.monotonic() >= watched_until:
                watched_until = time.monotonic() + min(deadline - time.monotonic(), MAX_WATCH)
                left = max(watched_until - time.monotonic(), 1)
                job = await client.watch_job(job_id, channel, left, conn=listener)
            else:
                job = await client.get_job(job_id)
        raise AssertionError("unreachable")
    finally:
        if listener is not None:
            await listener.close()


async def _pause_async(
    listener: psycopg.AsyncConnection[Any] | None, pause: float
) -> psycopg.AsyncConnection[Any] | None:
    if listener is None:
        await asyncio.sleep(max(pause, 0))
        return None
    try:
        async for _ in listener.notifies(timeout=max(pause, 0), stop_after=1):
            pass
        return listener
    except psycopg.OperationalError as e:
        log.info("the wait's listener broke (%s): polling only", str(e).strip())
        await listener.close()
        return None
