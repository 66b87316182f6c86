"""The worker's view of workflows, with a real `jobctl worker` process: a child's handler
reads its parents' results as `job.parent_results`, a batch's callback its batch's counts as
`job.batch` (sync handlers: the properties; async handlers: `await job.load_...()`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from jobctl import Client
from test_worker import Conn, WorkerProcess, spawn, wait_for, worker_args

__all__ = ["spawn"]  # the fixture, used by name


def result_of(conn: Conn, job_id: int) -> Any:
    row = conn.execute("select state, result from jobctl.get_job(%s)", (job_id,)).fetchone()
    assert row is not None
    return row


def ended(conn: Conn, ids: list[int]) -> Callable[[], bool]:
    def check() -> bool:
        sql = "select g.state from unnest(%s::bigint[]) as u (j), jobctl.get_job(u.j) as g"
        rows = conn.execute(sql, (ids,))
        return all(r[0] in ("completed", "dead", "cancelled") for r in rows.fetchall())

    return check


@pytest.mark.parametrize("handler", ["flow_sync", "flow_async"])
def test_a_child_reads_its_parents_results(
    conn: Conn, dsn: str, name: str, spawn: Callable[..., WorkerProcess], handler: str
) -> None:
    c = Client(dsn)
    flow = c.submit_workflow([
        {"name": "a", "tenant_id": name, "queue": name, "payload": {"result": {"rows": 120}}},
        {"name": "b", "tenant_id": name, "queue": name, "payload": {"result": [1, 2]}},
        {"name": "child", "tenant_id": name, "queue": name, "payload": {}, "depends_on": ["a", "b"]},
        {"name": "alone", "tenant_id": name, "queue": name, "payload": {}},
    ])  # fmt: skip
    ids = flow.job_ids
    w = spawn(*worker_args(name, handler))
    wait_for(ended(conn, list(ids.values())), 30, "the workflow to end")
    assert w.stop() == 0
    state, result = result_of(conn, ids["child"])
    assert state == "completed"
    assert result == {"parents": {str(ids["a"]): {"rows": 120}, str(ids["b"]): [1, 2]}, "batch": None}
    assert result["parents"] == c.parent_results(ids["child"])
    assert result_of(conn, ids["alone"]) == ("completed", {"parents": None, "batch": None})


@pytest.mark.parametrize("handler", ["flow_sync", "flow_async"])
def test_a_batch_callback_reads_the_counts(
    conn: Conn, dsn: str, name: str, spawn: Callable[..., WorkerProcess], handler: str
) -> None:
    c = Client(dsn)
    members = [
        {"tenant_id": name, "queue": name, "payload": {"result": 1}},
        {"tenant_id": name, "queue": name, "payload": {"result": 2}},
        {"tenant_id": name, "queue": name, "payload": {"die": True}, "max_attempts": 1},
    ]
    batch = c.submit_batch(members, on_finish={"queue": name, "payload": {}})
    assert batch.on_finish_id is not None
    w = spawn(*worker_args(name, handler))
    wait_for(ended(conn, [*batch.job_ids, batch.on_finish_id]), 30, "the batch and its callback")
    assert w.stop() == 0
    state, result = result_of(conn, batch.on_finish_id)
    assert state == "completed", json.dumps(result)
    assert result == {
        "parents": None,
        "batch": {"batch_id": batch.batch_id, "counts": {"completed": 2, "dead": 1, "cancelled": 0},
                  "finished": True},
    }  # fmt: skip
    # a member reads its batch too (its counts: the members' states at that moment)
    _, member = result_of(conn, batch.job_ids[0])
    assert member == 1
