"""The dashboard's reads that the client's calls do not give it: job_overview with its waiting column
(JobOverview predates it), count_job_states (the chips of a filter the counters cannot answer),
job_actions (what a job's state allows). One jobctl function a statement, on the page's connection
and transaction (caller.conn), so the token authenticated for the page governs them as it governs
the client's calls."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from jobctl import errors, queries
from jobctl.api.auth import Caller
from jobctl.client import JobOverview

T = TypeVar("T")
Row = dict[str, Any]


async def rows(caller: Caller, statement: str, params: dict[str, Any]) -> list[Row]:
    """A statement's rows on the page's connection; a database error as jobctl.errors maps it."""
    try:
        async with caller.conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(statement, params)
            return await cur.fetchall()
    except psycopg.Error as e:
        raise (errors.from_db(e) or e) from e


def typed(cls: type[T], row: Row) -> T:
    return cls(**{f.name: row[f.name] for f in fields(cls)})  # type: ignore[arg-type]


@dataclass(frozen=True)
class GridRow(JobOverview):
    """A row of job_overview with its last column: the jobs waiting for their parents or batch."""

    waiting: int = 0


async def job_overview(
    caller: Caller, window: timedelta, tenant_id: str | None = None, queue: str | None = None
) -> list[GridRow]:
    params = {"window": window, "tenant_id": tenant_id, "queue": queue}
    return [typed(GridRow, r) for r in await rows(caller, queries.JOB_OVERVIEW, params)]


@dataclass(frozen=True)
class StateCounts:
    """count_job_states: the jobs a filter names, by the counters' gauges (capped: more matched)."""

    pending: int
    delayed: int
    retrying: int
    running: int
    dead: int
    completed: int
    cancelled: int
    waiting: int
    capped: bool


async def count_job_states(caller: Caller, job_filter: dict[str, Any], max_count: int = 10000) -> StateCounts:
    params = {"filter": json.dumps(job_filter), "max_count": max_count}
    return typed(StateCounts, (await rows(caller, queries.COUNT_JOB_STATES, params))[0])


async def job_actions(caller: Caller, state: str) -> frozenset[str]:
    """What a job in `state` allows of retry, cancel and delete, as the database answers it
    (jobctl.job_actions: the states those actions take)."""
    return frozenset((await rows(caller, queries.JOB_ACTIONS, {"state": state}))[0]["actions"])


async def areas(caller: Caller) -> frozenset[str]:
    """The areas (jobs, queues, tenants, schedules, workers, audit) the caller may see, as the database
    answers it (jobctl.caller_access: the areas' own checks, shared ones for every-tenant callers only)."""
    return frozenset(r["area"] for r in await rows(caller, queries.CALLER_ACCESS, {}) if r["allowed"])


@dataclass(frozen=True)
class QueueRow:
    """A row of queue_overview: a queue's settings and its jobs summed over the tenants."""

    queue: str
    paused: bool
    max_running: int | None
    claim_rate: Decimal | None
    claim_burst: int | None
    configured: bool
    pending: int
    delayed: int
    retrying: int
    running: int
    dead: int
    waiting: int
    claims_per_second: float
    oldest_due_at: datetime | None


async def queue_page(caller: Caller, after: str | None, max_rows: int, window: timedelta) -> list[QueueRow]:
    params = {"after": after, "max_rows": max_rows, "window": window}
    return [typed(QueueRow, r) for r in await rows(caller, queries.QUEUE_OVERVIEW, params)]
