"""Waiting for a job to finish (`Client.wait`, `AsyncClient.wait`; docs/client.md, Waiting for a
result): woken by a completion hint, with polling behind it.

A client's waits share one listener (`Listener`, as the API's long polls share `api.long_poll.Hints`):
one connection (application_name `jobctl-wait`), opened by the first wait and closed when the last one
returns, that LISTENs on one random channel (`jobctl_wait_` and 32 hex digits: no other login can
guess it, so none hears the hint) and hands each hint (its payload is the job id) to the waits for
that job. A wait registers the channel for its job with `jobctl.watch_job` on the client's own
connection, which returns the job; waits for a job the channel is registered for already (and for at
least another half second) read it with get_job instead, so a client's thousand waits on one job are one
watcher row, not a thousand (watch_job allows 100 a job). When the job completes, dies or is cancelled,
the finishing transaction sends `NOTIFY <channel>, '<job id>'` (jobctl._notify_watchers) and the waits
read the job at once. A client thus holds two connections however many waits it runs: its own and the
listener. The listener goes to `Client(listen_dsn=...)`, JOBCTL_LISTEN_DSN, or the client's DSN; behind
a transaction pooler (JOBCTL_POOLER=transaction) with neither, there is none and the waits poll only
(docs/operations.md, Connection pooling).

Between hints a wait polls with get_job on the client's own connection, 50 ms after the start, then
doubling up to 1 s, so that a lost hint, or a listener whose connection dropped, costs at most a
second. A dropped listener reconnects after db.RECONNECT_FIRST doubling to db.RECONNECT_MAX (jittered), wakes
every wait to look at once, and the waits register again where needed. With `hint=False` a wait only
polls: no listener, no watcher row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from jobctl import db, errors, queries

if TYPE_CHECKING:
    from jobctl.client.calls import AsyncClient, Client
    from jobctl.client.rows import JobInfo

log = logging.getLogger("jobctl.wait")

FINISHED = frozenset({"completed", "dead", "cancelled"})
FIRST_POLL = 0.05  # seconds: the first look after the start, doubling...
MAX_POLL = 1.0  # ...up to this: a lost hint costs at most a second
MAX_WATCH = 3600.0  # a watcher lives at most an hour (watch_job's bound); a longer wait registers again
MIN_WATCH = 1.0  # the shortest registration; one with less than half of it left is renewed
APPLICATION_NAME = "jobctl-wait"
READY_WAIT = 10.0  # how long a wait waits for the listener's first attempt before it polls without
STOP_CHECK = 0.25  # the sync listener's thread looks this often whether it should stop


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


def _doubling(first: float, most: float) -> Iterator[float]:
    """`first`, doubling, then `most` each."""
    pause = first
    while True:
        yield pause
        pause = min(pause * 2, most)


def polls() -> Iterator[float]:
    """The pauses between looks: 50 ms, doubling, then 1 s each."""
    return _doubling(FIRST_POLL, MAX_POLL)


def reconnect_pauses() -> Iterator[float]:
    """The pauses between a listener's connection attempts: 0.1 s doubling to 1 s, each jittered
    between half and all of it, so that clients that lost the server together do not return together."""
    return (random.uniform(pause / 2, pause) for pause in _doubling(db.RECONNECT_FIRST, db.RECONNECT_MAX))


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
    """Where the waits LISTEN (None: they only poll)."""
    global _said_polling
    if not hint:
        return None
    target = db.listen_dsn(client.dsn, client.listen_dsn)
    if target is None and not _said_polling:
        _said_polling = True
        log.info("behind a transaction pooler with no JOBCTL_LISTEN_DSN: waits poll only")
    return target


class Registry:
    """What a client's listener knows, whether its thread or its task runs it: the channel, which
    jobs it is registered for (watch_job) until when, and who to wake for a job's hint. `_lock`
    guards the waits' events: a threading.Lock for the thread, nothing for the task (one loop)."""

    def __init__(self, lock: contextlib.AbstractContextManager[Any]) -> None:
        self.channel = new_channel()
        self.listening = False  # connected and LISTENing now
        self.watched: dict[int, float] = {}  # job id -> time.monotonic() its watcher row expires
        self._lock = lock
        self._events: dict[int, set[Any]] = {}  # job id -> the events of its waits

    def to_watch(self, job_id: int, deadline: float) -> float | None:
        """Seconds to register the job for (the wait's rest, at least MIN_WATCH, at most MAX_WATCH),
        when this wait should call watch_job now; None when the listener is not listening or the
        channel is registered for the job already, for at least another MIN_WATCH / 2 seconds."""
        now = time.monotonic()
        if not self.listening or self.watched.get(job_id, 0.0) > now + MIN_WATCH / 2:
            return None
        return min(max(deadline - now, MIN_WATCH), MAX_WATCH)

    def watching(self, job_id: int, wait: float) -> None:
        self.watched[job_id] = max(self.watched.get(job_id, 0.0), time.monotonic() + wait)
        if len(self.watched) > 1000:  # forget the expired ones now and then
            now = time.monotonic()
            self.watched = {j: t for j, t in self.watched.items() if t > now}

    def _enter(self, job_id: int, event: Any) -> None:
        """A wait's event joins those its job's hint sets (under `_lock`)."""
        self._events.setdefault(job_id, set()).add(event)

    def _leave(self, job_id: int, event: Any) -> int:
        """The wait's event leaves (under `_lock`); how many jobs have waits left (0: no wait is left)."""
        events = self._events[job_id]
        events.discard(event)
        if not events:
            del self._events[job_id]
        return len(self._events)

    def _wake(self, payload: str) -> None:
        """Wake the waits for the job a hint names (its watcher row is gone: the finish deleted it)."""
        with contextlib.suppress(ValueError):  # not a job id
            job_id = int(payload)
            self.watched.pop(job_id, None)
            with self._lock:
                for event in self._events.get(job_id, ()):
                    event.set()

    def _wake_all(self) -> None:
        with self._lock:
            for events in self._events.values():
                for event in events:
                    event.set()


class Listener(Registry):
    """A Client's shared listener: a thread holding one connection while the client has waits."""

    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self._stop: threading.Event | None = None  # the running thread's
        self._ready = threading.Event()  # its first attempt is over, listening or not
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def waiting(self, target: str | None, job_id: int) -> Iterator[threading.Event]:
        """An event set by a hint for job_id (or when the listener reconnects), while the with block
        lasts; the listener runs while any wait is in such a block. Without a target (no listener), an
        event nothing sets: each pause runs in full."""
        event = threading.Event()
        if target is None:
            yield event
            return
        with self._lock:
            self._enter(job_id, event)
            if self._stop is None:  # the first wait: start the thread
                self._stop, self._ready, self.listening = threading.Event(), threading.Event(), False
                self._thread = threading.Thread(
                    target=self._run, args=(target, self._stop, self._ready), name="jobctl-wait", daemon=True
                )
                self._thread.start()
            ready = self._ready
        try:
            ready.wait(READY_WAIT)
            yield event
        finally:
            with self._lock:
                if self._leave(job_id, event) == 0 and self._stop is not None:
                    self._stop.set()  # the thread closes the connection and ends on its own
                    self._stop, self.listening = None, False

    def close(self) -> None:
        """Stop the listener now (Client.close): the waits still running poll only."""
        with self._lock:
            if self._stop is not None:
                self._stop.set()
                self._stop = None
            self.listening = False
            thread = self._thread
        if thread is not None:
            thread.join(STOP_CHECK * 4)

    def _run(self, target: str, stop: threading.Event, ready: threading.Event) -> None:
        pauses = reconnect_pauses()
        while not stop.is_set():
            try:
                with psycopg.connect(target, **_connect_kwargs(target)) as conn:
                    conn.execute(_listen_sql(self.channel))
                    pauses = reconnect_pauses()
                    self._listening(stop, True)
                    ready.set()
                    self._wake_all()  # hints may have been missed while it was away: look now
                    while not stop.is_set():
                        for hint in conn.notifies(timeout=STOP_CHECK):
                            self._wake(hint.payload)
            except psycopg.Error as e:
                log.info("the waits' listener broke (%s): polling until it is back", str(e).strip())
            self._listening(stop, False)
            ready.set()
            stop.wait(next(pauses))

    def _listening(self, stop: threading.Event, listening: bool) -> None:
        """Say whether the listener listens, unless this thread was told to stop (a later one may run)."""
        with self._lock:
            if not stop.is_set():
                self.listening = listening


def wait(client: Client, job_id: int, limit: float, hint: bool) -> JobInfo:
    """The job once finished: a look at the start and after each pause (watch_job when the listener
    needs the job registered, else get_job), each pause cut short by a hint for the job."""
    deadline = time.monotonic() + limit
    listener, target = client._listener, _listen_target(client, hint)
    with listener.waiting(target, job_id) as event:
        for pause in polls():
            if target is None or (wait := listener.to_watch(job_id, deadline)) is None:
                job = client.get_job(job_id)
            else:
                job = client.watch_job(job_id, listener.channel, wait)
                listener.watching(job_id, wait)
            if (done := _outcome(job_id, job, deadline, limit)) is not None:
                return done
            event.wait(max(min(pause, deadline - time.monotonic()), 0))
            event.clear()
    raise AssertionError("unreachable")  # polls() never ends


class AsyncListener(Registry):
    """An AsyncClient's shared listener: a task holding one connection while the client has waits."""

    def __init__(self) -> None:
        super().__init__(contextlib.nullcontext())
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None

    @contextlib.asynccontextmanager
    async def waiting(self, target: str | None, job_id: int) -> AsyncIterator[asyncio.Event]:
        event = asyncio.Event()
        if target is None:  # no listener: an event nothing sets
            yield event
            return
        self._enter(job_id, event)
        if self._task is None or self._ready is None:
            self.listening, self._ready = False, asyncio.Event()
            self._task = asyncio.create_task(self._run(target, self._ready), name="jobctl-wait")
        ready = self._ready
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ready.wait(), READY_WAIT)
            yield event
        finally:
            if self._leave(job_id, event) == 0:
                await self.close()

    async def close(self) -> None:
        task, self._task, self._ready = self._task, None, None
        self.listening = False
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, target: str, ready: asyncio.Event) -> None:
        pauses = reconnect_pauses()
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(target, **_connect_kwargs(target)) as conn:
                    await conn.execute(_listen_sql(self.channel))
                    self.listening, pauses = True, reconnect_pauses()
                    ready.set()
                    self._wake_all()  # hints may have been missed while it was away: look now
                    async for hint in conn.notifies():
                        self._wake(hint.payload)
            except psycopg.Error as e:
                log.info("the waits' listener broke (%s): polling until it is back", str(e).strip())
            self.listening = False
            ready.set()
            await asyncio.sleep(next(pauses))


async def wait_async(client: AsyncClient, job_id: int, limit: float, hint: bool) -> JobInfo:
    """wait, awaited."""
    deadline = time.monotonic() + limit
    listener, target = client._listener, _listen_target(client, hint)
    async with listener.waiting(target, job_id) as event:
        for pause in polls():
            if target is None or (wait := listener.to_watch(job_id, deadline)) is None:
                job = await client.get_job(job_id)
            else:
                job = await client.watch_job(job_id, listener.channel, wait)
                listener.watching(job_id, wait)
            if (done := _outcome(job_id, job, deadline, limit)) is not None:
                return done
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), max(min(pause, deadline - time.monotonic()), 0))
            event.clear()
    raise AssertionError("unreachable")
