"""`GET /api/v1/jobs/{id}?wait=S`: a bounded long poll that answers as soon as the job is finished
(completed, dead, cancelled), or when the wait runs out with the job as it is then.

No request holds a pooled connection while it waits. The API process keeps one connection of its
own (`Hints`, application_name `jobctl-api-hints`) that LISTENs on one random channel
(`jobctl_wait_` and 32 hex digits; no other login can guess it) and hands each hint (its payload is
the job id) to the requests waiting for that job. A long poll borrows a pooled connection three ways,
each for one short transaction that authenticates its token again (a token revoked meanwhile ends
the wait with 401): first to read the job and register the process's channel for it
(jobctl.watch_job, which also applies the tenant rule: another tenant's job answers 404 at once);
then, after a hint or a poll pause (50 ms doubling to 1 s, for a hint lost or sent while the
listener reconnected), to read the job again with get_job. A tenant's token runs at most
WAIT_CONCURRENCY long polls at once in this process (one more: 429 at once), so one tenant cannot
keep the pool busy with polls nor hold the event loop's sockets for every tenant.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from jobctl import errors, queries, waiting
from jobctl.api.auth import TokenSessions
from jobctl.api.limits import TenantPermits
from jobctl.client import JobInfo

log = logging.getLogger("jobctl.api.long_poll")

MAX_WAIT = 30.0  # seconds: the bound of `wait`
WAIT_CONCURRENCY = 10  # long polls of one token's tenants at once in one API process
APPLICATION_NAME = "jobctl-api-hints"


class Hints(waiting.Registry):
    """The process's shared listener: one connection, one channel, hints dispatched by job id (the
    registry of the client's waits, `waiting.Registry`, without its lock: one event loop)."""

    def __init__(self, conninfo: str | None, kwargs: dict[str, Any]) -> None:
        super().__init__(contextlib.nullcontext())
        self.conninfo = conninfo  # None: no listener (behind a transaction pooler); long polls poll
        self.kwargs = {**kwargs, "application_name": APPLICATION_NAME, "autocommit": True}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.conninfo is None:
            log.info("no hint listener (a transaction pooler and no JOBCTL_LISTEN_DSN): long polls poll")
            return
        self._task = asyncio.create_task(self._listen(), name="jobctl-api-hints")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @contextlib.contextmanager
    def subscribe(self, job_id: int) -> Iterator[asyncio.Event]:
        """An event set when a hint for job_id arrives, for the duration of the with block."""
        event = asyncio.Event()
        self._enter(job_id, event)
        try:
            yield event
        finally:
            self._leave(job_id, event)

    async def _listen(self) -> None:
        assert self.conninfo is not None
        pauses = waiting.reconnect_pauses()  # 0.1 s doubling to 1 s, jittered (polls go on meanwhile)
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.conninfo, **self.kwargs)
                async with conn:
                    await conn.execute(sql.SQL(queries.LISTEN_CHANNEL).format(sql.Identifier(self.channel)))
                    pauses = waiting.reconnect_pauses()
                    # hints may have been missed while it was away: wake every watcher to look now
                    self._wake_all()
                    async for hint in conn.notifies():
                        self._wake(hint.payload)
            except psycopg.Error as e:
                log.warning("hint listener lost (%s); long polls poll until it is back", str(e).strip())
            await asyncio.sleep(next(pauses))


async def long_poll(
    sessions: TokenSessions, hints: Hints, permits: TenantPermits, job_id: int, wait: float
) -> JobInfo:
    """The job once it is finished, or as it is when `wait` seconds have passed. The tenant's long-poll
    place (429 when it has none left) and the process's subscription to the job's hint are held
    throughout; the first look is watch_job's, the later ones get_job's."""
    deadline = time.monotonic() + wait
    with contextlib.ExitStack() as stack:
        event = stack.enter_context(hints.subscribe(job_id))
        async with sessions.open() as caller:
            stack.enter_context(permits.permit(caller.tenant_id))
            seconds = max(math.ceil(wait), 1)  # the watcher outlives the wait, never by much
            job = await caller.client.watch_job(job_id, hints.channel, seconds, conn=caller.conn)
        for pause in waiting.polls():
            # no such job, another tenant's, or one deleted meanwhile (delete_jobs, forget_subject)
            if job is None:
                raise errors.NotFound(f"job {job_id} not found", field="id", sqlstate="P0002")
            left = deadline - time.monotonic()
            if job.state in waiting.FINISHED or left <= 0:
                return job
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), min(pause, left))
            event.clear()
            async with sessions.open() as caller:
                job = await caller.client.get_job(job_id, conn=caller.conn)
    raise AssertionError("unreachable")
