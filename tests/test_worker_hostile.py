"""The worker against hostile data: a payload its JSON decoder cannot take, results nested
too deep or not JSON at all, and wake-up hints that carry tags instead of queue names. Real worker
processes against the real database (helpers from tests/test_worker.py); handlers in
tests/worker_handlers.py."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from jobctl import queries
from jobctl.worker.calls import Database
from jobctl.worker.job import Job, decode_payload
from jobctl.worker.outbox import Outbox, Stats
from psycopg.conninfo import make_conninfo
from test_worker import (
    LEDGER_DDL,
    LISTENERS,
    QUICK_RETRY,
    WorkerProcess,
    all_in,
    assert_exactly_once,
    ledger_rows,
    states,
    submit,
    wait_for,
    worker_args,
)

Conn = psycopg.Connection[tuple[object, ...]]

DEEP = 3000  # levels: far past Python's recursion limit (1,000), as a payload or a result
DEEP_JSON = "[" * DEEP + "]" * DEEP
TOO_DEEP = "result must not be nested deeper than 100 levels"


@pytest.fixture
def spawn(dsn: str, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(*args: str) -> WorkerProcess:
        w = WorkerProcess(dsn, tmp_path, list(args))
        started.append(w)
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()


@pytest.fixture
def ledger(conn: Conn) -> None:
    conn.execute(LEDGER_DDL)


def last_errors(conn: Conn, ids: list[int]) -> dict[int, tuple[str, int, str | None]]:
    rows = conn.execute(
        "select job_id, state, attempt, last_error from jobctl.job where job_id = any(%s)", (ids,)
    ).fetchall()
    return {int(str(j)): (str(s), int(str(a)), e if e is None else str(e)) for j, s, a, e in rows}


def log_records(w: WorkerProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in w.log.splitlines() if line.startswith("{")]


# --- 1. a payload the worker's decoder cannot take


def test_decode_payload_is_bounded_and_says_why() -> None:
    assert decode_payload('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    with pytest.raises(
        ValueError, match="^payload could not be decoded: nested too deep for the worker's JSON"
    ):
        decode_payload(DEEP_JSON)
    with pytest.raises(ValueError, match="^payload could not be decoded: Expecting value"):
        decode_payload("[1,]")


def test_a_payload_nested_too_deep_fails_that_job_alone(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    """One claim brings tenant A's poison job and tenant B's 40: the worker keeps running, B's jobs
    complete, A's job is dead at once with a clear error."""
    queue = name + "_q"
    [poison] = submit(conn, name + "a", queue, [{}])
    others = submit(conn, name + "b", queue, [{"i": i} for i in range(40)])
    # as the superuser, behind submit's back: submit will soon refuse payloads deeper than 100 levels
    conn.execute("update jobctl.job set payload = %s::jsonb where job_id = %s", (DEEP_JSON, poison))
    w = spawn(
        *worker_args(queue, "handle", "--concurrency", "50", "--log-format", "json", "--log-level", "debug")
    )
    wait_for(
        lambda: states(conn, [poison]) == {"dead": 1} and all_in(conn, others, "completed")(),
        30,
        "the poison job dead and the 40 others completed",
    )
    assert w.proc.poll() is None, "the worker is still running"
    assert_exactly_once(conn, others)
    assert ledger_rows(conn, [poison]) == [], "the poison job's handler never ran"
    assert last_errors(conn, [poison])[poison] == (
        "dead",
        1,
        "payload could not be decoded: nested too deep for the worker's JSON decoder",
    )
    # every job was claimed by this one process, the poison job in the same claim as B's
    worker_id = f"{socket.gethostname()}:{w.proc.pid}"
    claimers = conn.execute(
        "select distinct h.worker_id from unnest(%s::bigint[]) as i (job_id),"
        " jobctl.job_history(i.job_id) as h where h.worker_id is not null",
        ([poison, *others],),
    ).fetchall()
    assert claimers == [(worker_id,)]
    claims = [r["jobs"] for r in log_records(w) if r["msg"] == "claimed" and r["jobs"]]
    assert claims == [41], claims
    assert w.stop() == 0
    final = [r for r in log_records(w) if r["msg"] == "worker stopped"][-1]
    assert (final["claimed"], final["completed"], final["dead"]) == (41, 40, 1), final


# --- 2. results nested too deep, or not JSON


def test_results_that_cannot_be_stored_fail_their_job_alone(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    """A 3,000-deep result (RecursionError on encode) and an object json cannot encode, returned or
    stored by job.transaction(): each job dead at its first attempt, its error clear; a 200-deep
    result is refused by complete_job once the SQL layer bounds results at 100 levels (JC001, field
    result): then dead at its first attempt too, else completed. The other jobs complete."""
    queue = name + "_q"
    deep, odd, tx_deep, sql_deep, sql_tx_deep = submit(
        conn,
        name,
        queue,
        [
            {"ledger": False, "nest": DEEP},
            {"ledger": False, "unserialisable": True},
            {"tx_nest": DEEP},
            {"ledger": False, "nest": 200},
            {"tx_nest": 200},
        ],
        backoff=QUICK_RETRY,  # a retry, were there one, would come at once
    )
    fine = submit(conn, name, queue, [{"i": i} for i in range(20)])
    w = spawn(*worker_args(queue, "handle", "--concurrency", "30"))
    bad = [deep, odd, tx_deep, sql_deep, sql_tx_deep]
    wait_for(
        lambda: (
            all_in(conn, fine, "completed")()
            and set(states(conn, bad)) <= {"dead", "completed"}
            and sum(states(conn, bad).values()) == len(bad)
        ),
        30,
        "every job to end",
    )
    time.sleep(0.5)  # nothing more happens to them: no retry
    assert w.proc.poll() is None, "the worker is still running"
    assert_exactly_once(conn, fine)
    got = last_errors(conn, bad)
    too_deep = "result is not JSON-serialisable: it is nested too deeply"
    assert got[deep] == ("dead", 1, too_deep)
    assert got[tx_deep] == ("dead", 1, too_deep)
    assert got[odd] == (
        "dead",
        1,
        "result is not JSON-serialisable: Object of type object is not JSON serializable",
    )
    assert ledger_rows(conn, [tx_deep]) == [], "the transaction rolled back"
    sql = [got[sql_deep], got[sql_tx_deep]]
    if sql[0][0] == "completed":  # the SQL bound has not landed: both stored
        assert sql == [("completed", 1, None), ("completed", 1, None)]
    else:
        for state, attempt, error in sql:
            assert (state, attempt) == ("dead", 1)
            assert (
                error is not None
                and error.startswith("result rejected: ")
                and "[JC001, field: result]" in error
            )
        assert ledger_rows(conn, [sql_tx_deep]) == [], "the transaction rolled back"
    assert w.stop() == 0


def test_a_result_complete_job_refuses_is_failed_for_good(conn: Conn) -> None:
    """The outbox's answer to a completion refused with JC001 (DETAIL field: result), as complete_job
    will answer a result nested too deep: the batch is sent again job by job, the refused job failed
    without a retry, the other completed. The database is stubbed; the error is a real one."""
    try:
        conn.execute(
            "do $$ begin raise exception using errcode = 'JC001',"
            f" message = '{TOO_DEEP}', detail = 'field: result'; end $$"
        )
    except psycopg.Error as e:
        refused = e
    sent: list[tuple[str, dict[str, Any]]] = []

    class Cursor:
        def __init__(self, rows: list[tuple[Any, ...]]) -> None:
            self.rows = rows

        async def fetchall(self) -> list[tuple[Any, ...]]:
            return self.rows

        async def fetchone(self) -> tuple[Any, ...] | None:
            return self.rows[0] if self.rows else None

    class Connection:
        async def execute(self, sql: str, params: dict[str, Any]) -> Cursor:
            sent.append((sql, params))
            if sql == queries.COMPLETE_JOBS or (sql == queries.COMPLETE_JOB and params["job_id"] == 1):
                raise refused
            return Cursor([(True,)] if sql == queries.COMPLETE_JOB else [("dead",)])

    class Stub(Database):
        def __init__(self) -> None:
            self.deadline = None

        async def call(self, what: str, op: Any, **_: Any) -> Any:
            return await op(Connection())

    def job(job_id: int) -> Job:
        return Job(job_id, "t", "q", {}, 0, 1, 3, 7, None, None)  # type: ignore[arg-type]

    async def scenario() -> Stats:
        stats = Stats()
        outbox = Outbox(Stub(), stats)
        outbox.add(job(1), "[[[]]]")
        outbox.add(job(2), '{"ok": true}')
        outbox.close()
        await outbox.run()
        return stats

    stats = asyncio.run(scenario())
    assert (stats.completed, stats.dead, stats.failed) == (1, 1, 0)
    fails = [p for sql, p in sent if sql == queries.FAIL_JOB]
    assert fails == [
        {
            "job_id": 1,
            "lease_epoch": 7,
            "error": f"result rejected: {TOO_DEEP} [JC001, field: result]",
            "retryable": True,  # no handler said otherwise: fail_job decides by the cause
            "traceback": None,  # the database refused the result: no handler's traceback
            "cause": "refused",
        }
    ]


# --- 5. hints carry tags, not queue names


def hint_tags_exist(conn: Conn) -> bool:
    row = conn.execute("select to_regprocedure('jobctl.hint_tags(text[])') is not null").fetchone()
    return bool(row and row[0])


def test_a_worker_with_a_queue_filter_wakes_on_its_queues_tag_only(
    dsn: str, conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    if not hint_tags_exist(conn):
        pytest.skip("jobctl.hint_tags is not in this database yet")
    queue = name + "_q"
    w = spawn("--handler", "worker_handlers:handle", "--queue", queue, "--poll-interval", "30")
    wait_for(lambda: "worker started" in w.log, 10, "the worker to start")
    wait_for(lambda: _listeners(conn) > 0, 10, "its listener")
    time.sleep(0.5)  # its first claim (nothing) is done; the next poll is 30 s away
    with psycopg.connect(dsn, autocommit=True) as quiet:
        quiet.execute("set jobctl.notify = off")  # this session's submit sends no hint
        [job_id] = submit(quiet, name, queue, [{}])
    row = conn.execute(queries.HINT_TAGS, {"queues": [queue]}).fetchone()
    assert row is not None
    [tag] = row[0]
    assert tag != queue
    conn.execute("select pg_notify('jobctl', %s)", (queue,))  # the queue's name no longer wakes it
    time.sleep(1.5)
    assert states(conn, [job_id]) == {"pending": 1}
    conn.execute("select pg_notify('jobctl', %s)", (tag,))
    wait_for(all_in(conn, [job_id], "completed"), 5, "the job to complete after its tag's hint")
    assert "matching hints by queue name" not in w.log
    assert w.stop() == 0


def test_a_strangers_replayed_tags_wake_no_worker(
    dsn: str, conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    """A login outside jobctl's roles that heard a queue's tag NOTIFYs it again, a
    thousand times; the worker ignores every one (jobctl.hint_senders), and wakes on the same tag
    from a session of jobctl's. Without the sender check the job completes at the first replay."""
    queue, stranger = name + "_q", name + "_stranger"
    conn.execute(f'create role "{stranger}" login')
    conn.execute(f'grant connect on database "{conn.info.dbname}" to "{stranger}"')
    try:
        w = spawn("--handler", "worker_handlers:handle", "--queue", queue, "--poll-interval", "30")
        wait_for(lambda: "worker started" in w.log, 10, "the worker to start")
        wait_for(lambda: _listeners(conn) > 0, 10, "its listener")
        time.sleep(0.5)  # its first claim (nothing) is done; the next poll is 30 s away
        with psycopg.connect(dsn, autocommit=True) as quiet:
            quiet.execute("set jobctl.notify = off")  # this session's submit sends no hint
            [job_id] = submit(quiet, name, queue, [{}])
        row = conn.execute(queries.HINT_TAGS, {"queues": [queue]}).fetchone()
        assert row is not None
        [tag] = row[0]
        with psycopg.connect(make_conninfo(dsn, user=stranger), autocommit=True) as attacker:
            for _ in range(1000):
                attacker.execute("select pg_notify('jobctl', %s)", (tag,))
        time.sleep(1.0)
        assert states(conn, [job_id]) == {"pending": 1}, "a stranger's hint woke the worker"
        wait_for(lambda: "ignoring wake-up hints from sessions outside jobctl's roles" in w.log, 5, "the log")
        conn.execute("select pg_notify('jobctl', %s)", (tag,))  # a session of jobctl's: it counts
        wait_for(all_in(conn, [job_id], "completed"), 5, "the job to complete after our own hint")
        assert w.stop() == 0
    finally:
        conn.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (stranger,))
        conn.execute(f'revoke all on database "{conn.info.dbname}" from "{stranger}"')
        conn.execute(f'drop role "{stranger}"')


def _listeners(conn: Conn) -> int:
    row = conn.execute(LISTENERS).fetchone()
    return int(str(row[0])) if row else 0
