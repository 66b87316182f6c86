"""Moving a tenant between shards (issue 23; docs/operations.md, Moving a tenant between shards).

The orchestration lives here, not in the router's SQL: a move is a sequence of transactions on three
databases (router, source, target), and each must commit before the next starts; PL/Proxy runs one
remote statement per call and cannot hold that sequence, and a Python loop can wait for the source's
running jobs to drain without holding a transaction open. Each step is one of the shards' private
functions (sql/functions/shard/_move_*.sql) or one statement on the router's tables, and every step
can be run again: a crash anywhere (kill -9 of the mover included) and a rerun converge.

    begin   source: record the move, pause the tenant's claims (its running jobs drain)
            router: placement.moving_to = target (submits still go to the source)
            target: the tenant with the source's settings, grants and API tokens, paused
    copy    page by page: source takes the jobs' queue rows (unclaimable from then on) -> router
            routes their ids to the target -> target inserts them under the same ids -> source
            deletes them, keeping their dedup keys (a repeat sent there answers the moved job)
    flip    source: fences the tenant's submits (JC011; the router's callers send them again) ->
            source: the dedup keys its jobs still hold -> target: records them (a repeat sent there
            answers the job on the source) -> target: the tenant resumes (unless it was paused) ->
            router: placement.shard = target
    drain   copy again until the source has no job of the tenant running, pending or failed and no
            transaction older than the fence: jobs running at the flip finish on the source (their
            by-id calls route there by id % 64), their retries move with the next page
    end     target: forgets the source's keys

A job is claimable on at most one shard at a time: on the source only while it has a queue row
there and the tenant is not paused there, on the target only once it has been copied (after its
queue row on the source was deleted) and the tenant resumed (after its route was written).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

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
        params = {"tenant_id": tenant, "after_id": after, "max_jobs": page}
        row = _row(src, queries.MOVE_OUT_JOBS, params)
        assert row is not None
        text, ids = row
        if not ids:
            return copied
        step("take")
        router.execute(queries.MOVE_ROUTE, {"ids": ids, "to": report.target})
        step("route")
        copied += int(_one(tgt, queries.MOVE_IN_JOBS, {"page": text}))
        step("import")
        _one(src, queries.MOVE_OUT_DELETE, {"tenant_id": tenant, "ids": ids})
        report.pages += 1
        after = max(ids)


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
    """Move tenant_id's unfinished jobs to shard `to`, or finish a move an earlier run started.
    router: an autocommit connection to the router database; connect(connstr) opens the shards
    (default: psycopg, autocommit). after_step(name) is called after each step (tests)."""
    started = time.monotonic()
    opener = connect or (lambda s: psycopg.connect(s, autocommit=True))
    step = after_step or (lambda name: None)
    shards = dict(router.execute(queries.MOVE_SHARDS).fetchall())
    if to not in shards:
        raise MoveError(f"no shard {to} in jobctl_router.shard")
    placed = router.execute(queries.MOVE_PLACEMENT, {"tenant_id": tenant_id}).fetchone()
    if placed is None:
        raise MoveError(f"tenant {tenant_id} is not placed on any shard (it has no jobs)")
    shard, moving_to = placed
    if moving_to is not None and moving_to != to:
        raise MoveError(f"tenant {tenant_id} is moving to shard {moving_to}: run that move again first")
    report = MoveReport(tenant_id, shard, to)
    flipped = shard == to
    if flipped:  # placed on the target: a move that flipped and may still drain on its source
        report.source = None
        for number, connstr in shards.items():
            if number == to:
                continue
            with opener(connstr) as c:
                if c.execute(queries.MOVE_OUT_OPEN, {"tenant_id": tenant_id}).fetchone() is not None:
                    report.source, report.resumed = number, True
                    break
        if report.source is None:  # finished on the source: the target's last step, again
            with opener(shards[to]) as tgt:
                _one(tgt, queries.MOVE_IN_END, {"tenant_id": tenant_id})
            report.total_s = time.monotonic() - started
            return report
    assert report.source is not None
    with opener(shards[report.source]) as src, opener(shards[to]) as tgt:
        open_move = src.execute(queries.MOVE_OUT_OPEN, {"tenant_id": tenant_id}).fetchone()
        report.resumed = report.resumed or open_move is not None
        paused_at = time.monotonic()
        config = _one(src, queries.MOVE_OUT_BEGIN, {"tenant_id": tenant_id, "to": to})
        step("begin")
        was_paused = bool(json.loads(config)["was_paused"])
        if not flipped:
            router.execute(queries.MOVE_MARK, {"tenant_id": tenant_id, "to": to, "source": report.source})
            tgt.execute(queries.MOVE_IN_BEGIN, {"config": config})
            step("mark")
            report.moved += _copy(router, src, tgt, report, page, step)
            step("copy")
            while not _one(src, queries.MOVE_OUT_FENCE, {"tenant_id": tenant_id}):
                pass  # the second call records the time after the fence committed
            step("fence")
            keys = _one(src, queries.MOVE_OUT_KEYS, {"tenant_id": tenant_id})
            _one(tgt, queries.MOVE_IN_KEYS, {"tenant_id": tenant_id, "keys": keys})
            step("keys")
            tgt.execute(queries.MOVE_IN_FINISH, {"tenant_id": tenant_id, "paused": was_paused})
            report.pause_s = time.monotonic() - paused_at
            step("resume")
            router.execute(queries.MOVE_FLIP, {"tenant_id": tenant_id, "to": to, "source": report.source})
            step("flip")
        drain_started = time.monotonic()
        deadline = drain_started + drain_timeout
        while True:
            report.moved += _copy(router, src, tgt, report, page, step)
            status = _one(src, queries.MOVE_OUT_FINISH, {"tenant_id": tenant_id})
            if status["finished"]:
                break
            if time.monotonic() > deadline:
                report.drain_s = time.monotonic() - drain_started
                raise MoveError(
                    f"tenant {tenant_id}: after {drain_timeout:.0f} s the source still has"
                    f" {status['running']} running jobs (settled: {status['settled']});"
                    f" the tenant runs on shard {to}: run the move again to finish"
                )
            time.sleep(poll)
        report.drain_s = time.monotonic() - drain_started
        step("finish")
        _one(tgt, queries.MOVE_IN_END, {"tenant_id": tenant_id})
        step("end")
    report.total_s = time.monotonic() - started
    return report
