"""Durable execution with real worker processes (docs/durable.md): a job's steps run once across a
kill -9, sleeping jobs free their tenant's max_running place, racing emitters wake each waiter once
with the first payload, and timeouts resume on time. Handlers are in tests/durable_handlers.py."""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from test_worker import QUICK_RETRY, Conn, WorkerProcess, expire_lease, spawn, submit, wait_for

__all__ = ["spawn"]  # the fixture, re-exported for pytest

TABLES = """
create table if not exists public.durable_effect (
    job_id bigint, step text, attempt int, at timestamptz default clock_timestamp()
);
create table if not exists public.durable_run (
    job_id bigint, phase text, at timestamptz default clock_timestamp()
);
grant insert on public.durable_effect, public.durable_run to public;
"""


@pytest.fixture
def tables(conn: Conn) -> Iterator[None]:
    conn.execute(TABLES)
    yield


def args(queue: str, handler: str, *more: str) -> list[str]:
    return ["--handler", f"durable_handlers:{handler}", "--queue", queue, "--poll-interval", "0.2", *more]


def ended(conn: Conn, ids: list[int]) -> Callable[[], bool]:
    def check() -> bool:
        row = conn.execute(
            "select count(*) from jobctl.job"
            " where job_id = any(%s) and state in ('completed', 'dead', 'cancelled')",
            (ids,),
        ).fetchone()
        return row is not None and row[0] == len(ids)

    return check


def test_a_killed_workers_job_resumes_after_its_saved_steps(
    conn: Conn, name: str, tmp_path: Path, spawn: Callable[..., WorkerProcess], tables: None
) -> None:
    """A 5-step job (each step's row written in the step's own transaction) whose worker is killed
    with -9 after step 3 resumes on another worker and runs steps 1-3 zero more times."""
    queue, gate = name + "_q", tmp_path / "gate"
    (job_id,) = submit(conn, name, queue, [{"gate": str(gate)}], backoff=QUICK_RETRY)
    first = spawn(*args(queue, "five_steps"))
    wait_for(lambda: f"after s3 job={job_id}" in first.log, 30, "steps 1-3 on the first worker")
    first.signal(signal.SIGKILL)
    first.wait(10)
    gate.touch()
    expire_lease(conn, job_id)  # what the reaper does once the lease runs out
    second = spawn(*args(queue, "five_steps"))
    wait_for(ended(conn, [job_id]), 30, "the job's end on the second worker")
    second.stop()
    rows = conn.execute(
        "select step, count(*), min(attempt) from public.durable_effect"
        " where job_id = %s group by step order by step",
        (job_id,),
    ).fetchall()
    assert rows == [("s1", 1, 1), ("s2", 1, 1), ("s3", 1, 1), ("s4", 1, 2), ("s5", 1, 2)], rows
    state = conn.execute(
        "select state, attempt, result from jobctl.job where job_id = %s", (job_id,)
    ).fetchone()
    assert state == ("completed", 2, {"steps": 5}), state
    steps = conn.execute("select step, attempt from jobctl.job_steps(%s)", (job_id,)).fetchall()
    assert steps == [("s1", 1), ("s2", 1), ("s3", 1), ("s4", 2), ("s5", 2)], steps


def test_sleeping_jobs_give_their_tenants_place_to_its_other_jobs(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess], tables: None
) -> None:
    """1,000 jobs sleeping 2 s under their tenant's max_running = 1: the tenant's other jobs run during
    the sleeps, and every sleeper wakes and ends, its sleep not counted as an attempt. Were a sleep to
    keep its place, the jobs would take 2,000 s."""
    queue = name + "_q"
    conn.execute("select jobctl.put_tenant(%s, max_running => 1)", (name,))
    sleepers = submit(conn, name, queue, [{"sleep": 2}] * 1000)
    worker = spawn(*args(queue, "sleeper", "--concurrency", "8"))
    wait_for(
        lambda: bool(
            conn.execute(
                "select count(*) >= 100 from public.durable_run where job_id = any(%s)", (sleepers,)
            ).fetchone()[0]
        ),
        60,
        "100 sleepers asleep",
    )  # type: ignore[index]
    others = submit(conn, name, queue, [{}] * 5, priority=5)
    started = time.monotonic()
    wait_for(ended(conn, sleepers + others), 180, "every job's end")
    elapsed = time.monotonic() - started
    worker.stop()
    runs = conn.execute(
        "select job_id, phase, min(at), max(at) from public.durable_run where job_id = any(%s) group by 1, 2",
        (sleepers + others,),
    ).fetchall()
    asleep = {j: (first, last) for j, phase, first, last in runs if phase == "start" and j in set(sleepers)}
    woke = {j: last for j, phase, _, last in runs if phase == "end"}
    assert len(woke) == 1005, len(woke)
    for other in others:
        ran = next(first for j, phase, first, _ in runs if j == other and phase == "start")
        sleeping = sum(1 for j, (slept, _) in asleep.items() if slept < ran < woke[j])
        assert sleeping >= 1, f"job {other} ran while no sleeper slept"
    assert elapsed < 200, elapsed
    attempts = conn.execute(
        "select max(attempt), count(*) filter (where state = 'completed')"
        " from jobctl.job where job_id = any(%s)",
        (sleepers,),
    ).fetchone()
    assert attempts == (1, 1000), attempts


def _emitter(dsn: str, tenant: str, events: list[str], seed: int, out: str) -> None:
    rnd = random.Random(seed)
    woke = {}
    with psycopg.connect(dsn, autocommit=True) as c:
        for event in rnd.sample(events, len(events)):
            time.sleep(rnd.random() * 0.01)
            row = c.execute(
                "select jobctl.emit_event(%s, %s, %s::jsonb)", (tenant, event, json.dumps({"from": seed}))
            ).fetchone()
            assert row is not None
            woke[event] = int(row[0])
    with open(out, "w") as f:
        json.dump(woke, f)


def test_racing_emitters_wake_each_waiter_once_with_the_first_payload(
    conn: Conn, dsn: str, name: str, tmp_path: Path, spawn: Callable[..., WorkerProcess]
) -> None:
    """500 jobs wait on 50 events while 8 connections emit every event in their own random order, as
    the waiters park: each job ends once with its event's first payload, and the emits' counts add up
    to the jobs they woke."""
    queue = name + "_q"
    events = [f"e{i}" for i in range(50)]
    ids = submit(conn, name, queue, [{"event": events[i % 50]} for i in range(500)])
    workers = [spawn(*args(queue, "waiter", "--concurrency", "20")) for _ in range(2)]
    time.sleep(0.5)  # some wait already, others are still to be claimed when the emits come
    outs = [str(tmp_path / f"emit{i}.json") for i in range(8)]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_emitter, args=(dsn, name, events, i, outs[i])) for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    wait_for(ended(conn, ids), 60, "every waiter's end")
    for w in workers:
        w.stop()
    first = dict(
        conn.execute("select event, payload from jobctl._emitted where tenant_id = %s", (name,)).fetchall()
    )
    rows = conn.execute(
        "select job_id, payload ->> 'event', state, result from jobctl.job where job_id = any(%s)", (ids,)
    ).fetchall()
    assert all(state == "completed" for _, _, state, _ in rows)
    assert all(result == {"payload": first[event]} for _, event, _, result in rows)
    woken = conn.execute(
        "select job_id, count(*) from jobctl._event"
        " where job_id = any(%s) and event = 'woken' group by job_id",
        (ids,),
    ).fetchall()
    assert all(n == 1 for _, n in woken), woken
    emitted = [json.loads(Path(o).read_text()) for o in outs]
    assert sum(sum(e.values()) for e in emitted) == len(woken)
    assert all(sum(1 for e in emitted if e[event] > 0) <= 1 for event in events)


def test_a_waits_timeout_resumes_it_within_a_second(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess]
) -> None:
    """Jobs waiting 2 s for an event that never comes are claimed again within 1 s of their timeout
    (the worker's tick(false), every 0.25 s, makes them due) and answer timed_out; a sync handler too."""
    queue = name + "_q"
    ids = submit(conn, name, queue, [{"event": "never", "timeout": 2}] * 20)
    sync_ids = submit(conn, name, queue + "s", [{"event": "never", "timeout": 2}] * 5)
    workers = [spawn(*args(queue, "waiter")), spawn(*args(queue + "s", "waiter_sync"))]
    wait_for(ended(conn, ids + sync_ids), 30, "every waiter's end")
    for w in workers:
        w.stop()
    # a parked job's run_at is its timeout; the claim that resumed it set started_at
    rows = conn.execute(
        "select job_id, result, extract(epoch from started_at - run_at)::float8"
        " from jobctl.job where job_id = any(%s)",
        (ids + sync_ids,),
    ).fetchall()
    assert len(rows) == 25
    assert all(result == {"timed_out": True} for _, result, _ in rows), rows
    late = sorted(r[2] for r in rows)
    assert late[0] >= 0 and late[-1] < 1.0, late


def test_a_parent_waits_for_the_child_it_spawned_without_a_slot(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess]
) -> None:
    """20 parents each spawn a child and wait for it, parked; each gets its child's result, one child
    each however often the parent runs; a parent whose child dies fails for good (ChildFailed)."""
    queue, children = name + "_p", name + "_c"
    ids = submit(conn, name, queue, [{"child_queue": children, "n": i} for i in range(20)])
    (doomed,) = submit(conn, name, queue, [{"child_queue": children, "n": 0, "fail": True}], max_attempts=3)
    workers = [spawn(*args(queue, "spawner")), spawn(*args(children, "doubler"))]
    wait_for(ended(conn, [*ids, doomed]), 60, "every parent's end")
    for w in workers:
        w.stop()
    rows = conn.execute(
        "select payload ->> 'n', state, result, attempt from jobctl.job where job_id = any(%s)", (ids,)
    ).fetchall()
    assert all(state == "completed" for _, state, _, _ in rows), rows
    assert all(result == {"child": {"double": 2 * int(n)}} for n, _, result, _ in rows), rows
    assert all(attempt == 1 for *_, attempt in rows), rows
    n_children = conn.execute("select count(*) from jobctl.job where queue = %s", (children,)).fetchone()
    assert n_children == (21,)
    dead = conn.execute(
        "select state, attempt, last_error from jobctl.job where job_id = %s", (doomed,)
    ).fetchone()
    assert dead is not None and dead[0] == "dead" and dead[1] == 1 and "ended dead" in str(dead[2]), dead


def test_a_step_inside_the_jobs_transaction_commits_with_it(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess], tables: None
) -> None:
    """A sync handler saves a step on its own, then one inside job.transaction(): both are saved, the
    second with the handler's write and the completion, once."""
    queue = name + "_q"
    (job_id,) = submit(conn, name, queue, [{}])
    worker = spawn(*args(queue, "mixed"))
    wait_for(ended(conn, [job_id]), 30, "the job's end")
    worker.stop()
    row = conn.execute("select state, result from jobctl.job where job_id = %s", (job_id,)).fetchone()
    assert row == ("completed", {"plain": {"x": 1}, "in_tx": 2}), row
    steps = conn.execute("select step, result from jobctl.job_steps(%s)", (job_id,)).fetchall()
    assert steps == [("plain", {"x": 1}), ("in_tx", 2)], steps
    effects = conn.execute(
        "select count(*) from public.durable_effect where job_id = %s", (job_id,)
    ).fetchone()
    assert effects == (1,)
