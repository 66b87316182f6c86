"""Dependencies and batches under concurrency, with real processes: children released exactly once
while many workers complete their parents, a fenced zombie parent that releases nothing, kill -9
during a wide fan-in, and a batch's callback enqueued once however its members' ends race."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

Conn = psycopg.Connection[tuple[object, ...]]

# A worker process: claims from the queues, and for each job writes one effect row and completes the
# job in the same transaction (rolled back when the completion is fenced): effects happen once per
# completion. Ticks as every worker does (the reaper, the recheck of racing parents). Exits after
# `idle` seconds without a job, or runs until killed when idle is 0.
WORKER = r"""
import sys, time, random, psycopg
dsn, queues, ledger = sys.argv[1], sys.argv[2].split(','), sys.argv[3]
idle, lease = float(sys.argv[4]), sys.argv[5]
name = 'w%d' % __import__('os').getpid()
last = time.monotonic()
with psycopg.connect(dsn, autocommit=True) as c:
    print('ready', flush=True)
    while idle == 0 or time.monotonic() - last < idle:
        c.execute("select jobctl.tick(false)")
        rows = c.execute("select job_id, lease_epoch from jobctl.claim_job(%s, %s, 5, %s::interval)",
                         (name, queues, lease)).fetchall()
        if not rows:
            time.sleep(0.01)
            continue
        last = time.monotonic()
        for job_id, epoch in rows:
            time.sleep(random.random() * 0.002)
            with c.transaction() as tx:
                c.execute(f"insert into public.{ledger} (job_id, worker) values (%s, %s)", (job_id, name))
                if not c.execute("select jobctl.complete_job(%s, %s, %s::jsonb)",
                                 (job_id, epoch, '{"by": "%s"}' % name)).fetchone()[0]:
                    raise psycopg.Rollback(tx)
"""


def start_worker(
    dsn: str, queues: list[str], ledger: str, idle: float = 3.0, lease: str = "30 seconds"
) -> Any:
    p = subprocess.Popen(
        [sys.executable, "-c", WORKER, dsn, ",".join(queues), ledger, str(idle), lease],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


@pytest.fixture
def ledger(conn: Conn, name: str) -> Iterator[str]:
    table = name + "_effects"
    conn.execute(f"create table public.{table} (job_id bigint not null, worker text not null)")
    yield table
    conn.execute(f"drop table if exists public.{table}")


def effects(conn: Conn, ledger: str) -> dict[int, int]:
    rows = conn.execute(f"select job_id, count(*) from public.{ledger} group by job_id").fetchall()
    return {int(r[0]): int(r[1]) for r in rows}  # type: ignore[call-overload]


def wait_all(procs: list[Any], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    for p in procs:
        p.wait(timeout=max(1.0, deadline - time.monotonic()))
        assert p.returncode == 0, f"worker exited with {p.returncode}"


def test_eight_workers_completing_the_parents_of_500_children_run_each_child_once(
    conn: Conn, name: str, ledger: str, dsn: str
) -> None:
    # 1,000 parents; each of 500 children depends on 4 of them (neighbours, so siblings share parents
    # and their last parents often complete at once in different workers)
    jobs: list[dict[str, Any]] = [
        {"name": f"p{i}", "tenant_id": name, "queue": name + "_p", "payload": {"i": i}} for i in range(1000)
    ]
    jobs += [
        {
            "name": f"c{k}",
            "tenant_id": name,
            "queue": name + "_c",
            "payload": {"k": k},
            "depends_on": [f"p{(2 * k + d) % 1000}" for d in range(4)],
        }
        for k in range(500)
    ]
    rows = conn.execute(
        "select name, job_id from jobctl.submit_workflow(%s::jsonb)", (json.dumps(jobs),)
    ).fetchall()
    ids = {str(r[0]): int(r[1]) for r in rows}  # type: ignore[call-overload]
    children = {ids[f"c{k}"] for k in range(500)}
    procs = [start_worker(dsn, [name + "_p", name + "_c"], ledger) for _ in range(8)]
    wait_all(procs)

    done = effects(conn, ledger)
    assert set(done) == set(ids.values()), "every job ran"
    assert [j for j, n in done.items() if n != 1] == [], "no job ran twice"
    states = conn.execute(
        "select state, min(attempt), max(attempt), count(*) from jobctl.job"
        " where tenant_id = %s group by state",
        (name,),
    ).fetchall()
    assert states == [("completed", 1, 1, 1500)]
    # every child ran after each of its parents had completed
    late = conn.execute(
        """select count(*) from jobctl.job as c
           cross join lateral unnest(c.depends_on) as d (parent_id)
           join jobctl.job as p on p.job_id = d.parent_id
           where c.job_id = any(%s) and c.started_at < p.finished_at""",
        (list(children),),
    ).fetchone()
    assert late == (0,)
    leftovers = conn.execute(
        "select (select count(*) from jobctl._edge where child_id = any(%s)),"
        " (select count(*) from jobctl._waiting where job_id = any(%s))",
        (list(children), list(children)),
    ).fetchone()
    assert leftovers == (0, 0)


def test_a_fenced_zombie_parent_releases_nothing(conn: Conn, name: str, dsn: str) -> None:
    queue = name + "_q"
    rows = conn.execute(
        "select name, job_id from jobctl.submit_workflow(%s::jsonb)",
        (
            json.dumps(
                [
                    {"name": "p", "tenant_id": name, "queue": queue, "payload": {}},
                    {
                        "name": "c",
                        "tenant_id": name,
                        "queue": name + "_c",
                        "payload": {},
                        "depends_on": ["p"],
                    },
                ]
            ),
        ),
    ).fetchall()
    parent, child = int(rows[0][1]), int(rows[1][1])  # type: ignore[call-overload]
    zombie = psycopg.connect(dsn, autocommit=True)
    healthy = psycopg.connect(dsn, autocommit=True)
    try:
        _, epoch1 = zombie.execute(
            "select job_id, lease_epoch from jobctl.claim_job('zombie', array[%s], 1, '1 second')", (queue,)
        ).fetchone()  # type: ignore[misc]
        time.sleep(1.2)
        healthy.execute("select jobctl.reap_expired_leases()")
        row = healthy.execute(
            "select job_id, lease_epoch from jobctl.claim_job('healthy', array[%s], 1, '1 minute')", (queue,)
        ).fetchone()
        assert row is not None and row[0] == parent and row[1] > epoch1
        # the zombie's completion is fenced: the child stays waiting, its edge in place
        assert zombie.execute("select jobctl.complete_job(%s, %s, '{}')", (parent, epoch1)).fetchone() == (
            False,
        )
        assert conn.execute("select state from jobctl.get_job(%s)", (child,)).fetchone() == ("waiting",)
        assert conn.execute("select count(*) from jobctl._edge where child_id = %s", (child,)).fetchone() == (
            1,
        )
        assert conn.execute("select jobctl._recheck_waiting()").fetchone() == (0,)
        assert conn.execute("select state from jobctl.get_job(%s)", (child,)).fetchone() == ("waiting",)
        # the current lease's completion releases it
        assert healthy.execute("select jobctl.complete_job(%s, %s, '{}')", row).fetchone() == (True,)
        assert conn.execute("select state from jobctl.get_job(%s)", (child,)).fetchone() == ("pending",)
    finally:
        zombie.close()
        healthy.close()


def test_kill_9_during_a_fan_in_loses_nothing(conn: Conn, name: str, ledger: str, dsn: str) -> None:
    n = 1500
    jobs: list[dict[str, Any]] = [
        {"name": f"p{i}", "tenant_id": name, "queue": name + "_p", "payload": {"i": i}} for i in range(n)
    ]
    jobs.append(
        {
            "name": "sink",
            "tenant_id": name,
            "queue": name + "_c",
            "payload": {},
            "depends_on": [f"p{i}" for i in range(n)],
        }
    )
    rows = conn.execute(
        "select name, job_id from jobctl.submit_workflow(%s::jsonb)", (json.dumps(jobs),)
    ).fetchall()
    ids = {str(r[0]): int(r[1]) for r in rows}  # type: ignore[call-overload]
    queues = [name + "_p", name + "_c"]
    doomed = start_worker(dsn, queues, ledger, idle=0, lease="2 seconds")
    others = [start_worker(dsn, queues, ledger, idle=6, lease="2 seconds") for _ in range(3)]
    # kill -9 the first worker mid-drain, holding leases
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(effects(conn, ledger)) < n // 3:
        time.sleep(0.05)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()
    wait_all(others)

    done = effects(conn, ledger)
    assert set(done) == set(ids.values()), f"{len(set(ids.values()) - set(done))} jobs never ran"
    assert [j for j, c in done.items() if c != 1] == [], "a job's effect happened twice"
    sink = conn.execute(
        "select state, attempt, started_at from jobctl.job where job_id = %s", (ids["sink"],)
    ).fetchone()
    assert sink is not None and sink[:2] == ("completed", 1)
    last_parent = conn.execute(
        "select max(finished_at) from jobctl.job where tenant_id = %s and job_id <> %s", (name, ids["sink"])
    ).fetchone()
    assert last_parent is not None and sink[2] >= last_parent[0]
    assert conn.execute(
        "select count(*) from jobctl._edge where child_id = %s", (ids["sink"],)
    ).fetchone() == (0,)


def test_a_batch_callback_is_enqueued_once_when_members_end_in_racing_workers(
    conn: Conn, name: str, ledger: str, dsn: str
) -> None:
    for round_ in range(2):
        members = [{"tenant_id": name, "queue": f"{name}_m", "payload": {"i": i}} for i in range(300)]
        row = conn.execute(
            "select batch_id, on_finish_id, on_success_id from jobctl.submit_batch(%s::jsonb,"
            " on_finish => %s::jsonb, on_success => %s::jsonb)",
            (
                json.dumps(members),
                json.dumps({"queue": f"{name}_cb", "payload": {"round": round_}}),
                json.dumps({"queue": f"{name}_cb", "payload": {"ok": round_}}),
            ),
        ).fetchone()
        assert row is not None
        batch, on_finish, on_success = (int(x) for x in row)  # type: ignore[call-overload]
        wait_all([start_worker(dsn, [f"{name}_m", f"{name}_cb"], ledger, idle=2) for _ in range(4)])
        done = effects(conn, ledger)
        assert done.get(on_finish) == 1 and done.get(on_success) == 1
        counts = conn.execute(
            "select counts, finished_at is not null from jobctl.get_batch(%s)", (batch,)
        ).fetchone()
        assert counts == ({"completed": 300, "dead": 0, "cancelled": 0}, True)
    assert [j for j, c in effects(conn, ledger).items() if c != 1] == []


def _scoped_submitter(dsn: str, tenant: str, barrier: Any, out: str) -> None:
    got = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        for i in range(20):
            row = c.execute(
                "select job_id from jobctl.submit_job(%s, %s || '_q', %s::jsonb, dedup_key => 'sync',"
                " dedup_states => '{pending,running}', dedup_mode => 'replace')",
                (tenant, tenant, json.dumps({"pid": os.getpid(), "i": i})),
            ).fetchone()
            got.append(int(row[0]))  # type: ignore[index]
    with open(out, "w") as f:
        json.dump(got, f)


def test_eight_submitters_racing_on_a_state_scoped_key_make_one_active_job(
    conn: Conn, name: str, tmp_path
) -> None:

    ctx = mp.get_context("spawn")
    made: set[int] = set()
    for round_ in range(4):
        barrier = ctx.Barrier(8)
        outs = [str(tmp_path / f"r{round_}_{i}.json") for i in range(8)]
        procs = [ctx.Process(target=_scoped_submitter, args=(conn.info.dsn, name, barrier, o)) for o in outs]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=120)
            assert p.exitcode == 0
        ids = {j for o in outs for j in json.loads(Path(o).read_text())}
        assert len(ids) == 1, f"round {round_}: {len(ids)} jobs for one scoped key"
        active = conn.execute(
            "select job_id, payload from jobctl.job where tenant_id = %s and state in ('pending', 'running')",
            (name,),
        ).fetchall()
        assert [r[0] for r in active] == list(ids)
        made |= ids
        # the job runs: the key is free again, and the next round makes one new job
        row = conn.execute(
            "select job_id, lease_epoch from jobctl.claim_job('w', array[%s], 1)", (name + "_q",)
        ).fetchone()
        assert row is not None and row[0] in ids
        assert conn.execute("select jobctl.complete_job(%s, %s)", row).fetchone() == (True,)
    assert len(made) == 4


@pytest.mark.parametrize("first_end", ["commits", "rolls back"])
def test_last_parents_ending_at_once_release_the_child_once_the_slower_commits(
    conn: Conn, name: str, dsn: str, first_end: str
) -> None:
    """A completes P1 and stays open (it saw P2's edge untouched, so it leaves the child to P2's end);
    B completes P2 and commits (it saw P1's edge being deleted: a recheck row). A recheck while A is
    open keeps the row; once A commits, the next releases the child. If A rolls back, P1's edge is
    untouched again: the recheck drops the row, and P1's real completion releases the child."""
    rows = conn.execute(
        "select name, job_id from jobctl.submit_workflow(%s::jsonb)",
        (
            json.dumps(
                [
                    {"name": "p1", "tenant_id": name, "queue": name + "_p", "payload": {}},
                    {"name": "p2", "tenant_id": name, "queue": name + "_p", "payload": {}},
                    {
                        "name": "c",
                        "tenant_id": name,
                        "queue": name + "_c",
                        "payload": {},
                        "depends_on": ["p1", "p2"],
                    },
                ]
            ),
        ),
    ).fetchall()
    ids = {str(r[0]): int(r[1]) for r in rows}  # type: ignore[call-overload]
    leases = dict(
        conn.execute(
            "select job_id, lease_epoch from jobctl.claim_job('w', array[%s], 2)", (name + "_p",)
        ).fetchall()
    )
    child = ids["c"]

    def state() -> object:
        return conn.execute("select state from jobctl.job where job_id = %s", (child,)).fetchone()[0]  # type: ignore[index]

    a = psycopg.connect(dsn)
    try:
        assert a.execute("select jobctl.complete_job(%s, %s)", (ids["p1"], leases[ids["p1"]])).fetchone() == (
            True,
        )
        assert conn.execute(
            "select jobctl.complete_job(%s, %s)", (ids["p2"], leases[ids["p2"]])
        ).fetchone() == (True,)
        assert state() == "waiting"
        assert conn.execute(
            "select count(*) from jobctl._recheck where child_id = %s", (child,)
        ).fetchone() == (1,)
        assert conn.execute("select jobctl._recheck_waiting()").fetchone() == (0,)
        assert conn.execute(
            "select count(*) from jobctl._recheck where child_id = %s", (child,)
        ).fetchone() == (1,)
        if first_end == "commits":
            a.commit()
            assert conn.execute("select jobctl._recheck_waiting()").fetchone() == (1,)
            assert state() == "pending"
        else:
            a.rollback()
            assert conn.execute("select jobctl._recheck_waiting()").fetchone() == (0,)
            assert conn.execute(
                "select count(*) from jobctl._recheck where child_id = %s", (child,)
            ).fetchone() == (0,)
            assert state() == "waiting"
            assert conn.execute(
                "select jobctl.complete_job(%s, %s)", (ids["p1"], leases[ids["p1"]])
            ).fetchone() == (True,)
            assert state() == "pending"
    finally:
        a.close()
