"""Moving a tenant between shards (docs/operations.md, Moving a tenant between shards).

The router holds the order of the move's steps (jobctl_router.move_next, sql/router/moves.sql): this
module asks it for the next step, does that step on its shard (the shards' private functions,
sql/functions/shard/_move_*.sql), each its own transaction, and reports it done. A loop in Python, not one
SQL call, because a move is a sequence of transactions on three databases (router, source, target),
each committed before the next starts, and PL/Proxy runs one remote statement per call; and because
the drain waits for the source's running jobs without holding a transaction open. Every step can be
run again: a crash anywhere (kill -9 of the mover included) leaves the move at its step, and a rerun
does that step again and goes on.

A job is claimable on at most one shard at a time: on the source only while it has a queue row
there and the tenant is not paused there, on the target only once it has been copied (after its
queue row on the source was deleted) and the tenant resumed (after its route was written).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from jobctl import queries

Conn = psycopg.Connection[Any]
PAGE = 2000
RETRY_SQLSTATES = {"40P01", "40001"}  # deadlock detected, serialization failure


class MoveError(RuntimeError):
    """The move cannot go on as asked (an unknown shard or tenant, another move under way, or its
    source still running jobs at the deadline: rerun to finish)."""


@dataclass
class MoveReport:
    tenant_id: str
    source: int | None
    target: int
    moved: int = 0  # jobs copied to the target by this run
    pages: int = 0
    pause_s: float | None = None  # from the pause on the source to the resume on the target (this run)
    drain_s: float = 0.0  # waiting for the source's running jobs and in-flight transactions
    total_s: float = 0.0
    resumed: bool = False  # this run picked up a move that an earlier run had started
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        if self.source is None:
            return f"move: tenant {self.tenant_id} is already on shard {self.target}, nothing to do"
        pause = "" if self.pause_s is None else f", tenant paused {self.pause_s:.2f} s"
        again = " (resumed an earlier run)" if self.resumed else ""
        return (
            f"move: tenant {self.tenant_id} shard {self.source} -> {self.target}: {self.moved} jobs moved in"
            f" {self.pages} pages{pause}, drain {self.drain_s:.2f} s, total {self.total_s:.2f} s{again}"
        )


def _row(conn: Conn, sql: str, params: dict[str, Any]) -> Any:
    """One row of one statement (its own transaction), again after a deadlock or serialization
    failure: taking a page's jobs may meet a claim that was already under way when the pause came."""
    for attempt in range(5):
        try:
            return conn.execute(sql, params).fetchone()
        except psycopg.Error as e:
            if e.sqlstate not in RETRY_SQLSTATES or attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _one(conn: Conn, sql: str, params: dict[str, Any]) -> Any:
    row = _row(conn, sql, params)
    return None if row is None else row[0]


def _copy(
    router: Conn, src: Conn, tgt: Conn, report: MoveReport, page: int, step: Callable[[str], None]
) -> int:
    """Copy every job of the tenant that the source holds unclaimed, page by page; returns how many."""
    tenant, after, copied = report.tenant_id, 0, 0
    while True:
        text, ids = _row(
            src, queries.MOVE_OUT_JOBS, {"tenant_id": tenant, "after_id": after, "max_jobs": page}
        )
        if not ids:
            return copied
        step("take")
        router.execute(queries.MOVE_ROUTE, {"tenant_id": tenant, "ids": ids})
        step("route")
        copied += int(_one(tgt, queries.MOVE_IN_JOBS, {"page": text}))
        step("import")
        _one(src, queries.MOVE_OUT_DELETE, {"tenant_id": tenant, "ids": ids})
        report.pages += 1
        after = max(ids)


def _next(router: Conn, tenant_id: str, to: int, done: str | None) -> dict[str, Any]:
    """jobctl_router.move_next: the step after `done`; its refusals of the move as MoveError."""
    try:
        with router.cursor(row_factory=dict_row) as cur:
            row = cur.execute(queries.MOVE_NEXT, {"tenant_id": tenant_id, "to": to, "done": done}).fetchone()
    except psycopg.Error as e:
        if e.sqlstate in ("JC001", "JC010", "P0002") and e.diag.message_primary:
            raise MoveError(e.diag.message_primary) from None
        raise
    assert row is not None
    return row


def move_tenant(
    router: Conn,
    tenant_id: str,
    to: int,
    *,
    page: int = PAGE,
    drain_timeout: float = 600.0,
    poll: float = 0.2,
    connect: Callable[[str], Conn] | None = None,
    after_step: Callable[[str], None] | None = None,
) -> MoveReport:
    """Move tenant_id's unfinished jobs to shard `to`, or finish a move an earlier run started: each
    step jobctl_router.move_next names, until it says done. router: an autocommit connection to the
    router database; connect(connstr) opens the shards (default: psycopg, autocommit).
    after_step(name) is called after each step, and after each page's take, route and import (tests)."""
    started = time.monotonic()
    opener = connect or (lambda s: psycopg.connect(s, autocommit=True))
    hook = after_step or (lambda name: None)
    at = _next(router, tenant_id, to, None)
    report = MoveReport(tenant_id, at["from_shard"], to, resumed=at["resumed"])
    if at["step"] == "done":
        report.total_s = time.monotonic() - started
        return report
    paused_at: float | None = None
    with opener(at["from_connstr"]) as src, opener(at["to_connstr"]) as tgt:
        # the tenant's settings for the target (jobctl._move_out_begin: again, it changes nothing)
        begin = {"tenant_id": tenant_id, "to": to}
        settings = functools.cache(lambda: json.loads(_one(src, queries.MOVE_OUT_BEGIN, begin)))
        copy = functools.partial(_copy, router, src, tgt, report, page, hook)
        while at["step"] != "done":
            name = at["step"]
            if name == "begin":
                paused_at = time.monotonic()
                settings()
            elif name == "open":
                tgt.execute(queries.MOVE_IN_BEGIN, {"config": json.dumps(settings())})
            elif name == "copy":
                report.moved += copy()
            elif name == "fence":
                while not _one(src, queries.MOVE_OUT_FENCE, {"tenant_id": tenant_id}):
                    pass  # the second call records the time after the fence committed
            elif name == "keys":
                keys = _one(src, queries.MOVE_OUT_KEYS, {"tenant_id": tenant_id})
                _one(tgt, queries.MOVE_IN_KEYS, {"tenant_id": tenant_id, "keys": keys})
                # and its events (durable waits), each handed over once the source refuses emits
                events = _one(src, queries.MOVE_OUT_EVENTS, {"tenant_id": tenant_id})
                _one(tgt, queries.MOVE_IN_EVENTS, {"tenant_id": tenant_id, "events": events})
            elif name == "resume":
                paused = bool(settings()["was_paused"])
                tgt.execute(queries.MOVE_IN_FINISH, {"tenant_id": tenant_id, "paused": paused})
                report.pause_s = None if paused_at is None else time.monotonic() - paused_at
            elif name == "drain":
                _drain(src, report, copy, drain_timeout, poll)
                name = "finish"
            elif name == "end":
                _one(tgt, queries.MOVE_IN_END, {"tenant_id": tenant_id})
            else:
                raise MoveError(
                    f"tenant {tenant_id}: the router names a step this mover does not know: {name}"
                )
            hook(name)
            at = _next(router, tenant_id, to, at["step"])
            if at["performed"]:
                hook(at["performed"])
    report.total_s = time.monotonic() - started
    return report


def _drain(src: Conn, report: MoveReport, copy: Callable[[], int], timeout: float, poll: float) -> None:
    """Copy again until the source says the move is over there (jobctl._move_out_finish): its
    running jobs have finished and every transaction older than the fence has ended."""
    started = time.monotonic()
    try:
        while True:
            report.moved += copy()
            status = _one(src, queries.MOVE_OUT_FINISH, {"tenant_id": report.tenant_id})
            if status["finished"]:
                return
            if time.monotonic() > started + timeout:
                raise MoveError(
                    f"tenant {report.tenant_id}: after {timeout:.0f} s the source still has"
                    f" {status['running']} running jobs (settled: {status['settled']});"
                    f" the tenant runs on shard {report.target}: run the move again to finish"
                )
            time.sleep(poll)
    finally:
        report.drain_s = time.monotonic() - started
