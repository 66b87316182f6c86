"""The worker process's own metrics (`jobctl worker --metrics-port`) and its entry in the registry of
workers, with a real worker process against the real database: what it claimed, completed and
failed shows in its counters and its handler histogram by queue and outcome, a running job in the
in-flight gauge; it registers itself with worker_beat while it runs and leaves with worker_gone
when it stops cleanly. Handlers are in tests/worker_handlers.py."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families
from test_api import free_port
from test_worker import WorkerProcess, spawn, submit, wait_for, worker_args

Conn = psycopg.Connection[tuple[object, ...]]
_ = spawn  # the fixture

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    r = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    r.raise_for_status()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def scrape_when_up(w: WorkerProcess, port: int) -> Callable[[], bool]:
    def up() -> bool:
        assert w.proc.poll() is None, w.log[-3000:]
        try:
            scrape(port)
        except httpx.TransportError:
            return False
        return True

    return up


def registered(conn: Conn, worker_id: str) -> tuple[object, ...] | None:
    return conn.execute(
        "select pid, concurrency, queues from jobctl._worker where worker_id = %s", (worker_id,)
    ).fetchone()


def test_a_workers_metrics_count_what_it_did(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess]
) -> None:
    port, worker_id = free_port(), f"{name}-worker"
    w = spawn(
        *worker_args(name, "handle"), "--concurrency", "4", "--metrics-port", str(port),
        "--worker-id", worker_id,
    )  # fmt: skip
    wait_for(scrape_when_up(w, port), 20, "the metrics server")
    before = scrape(port)
    assert value(before, "jobctl_worker_jobs_in_flight") == 0
    assert value(before, "jobctl_worker_concurrency") == 4
    assert value(before, "jobctl_worker_info", worker_id=worker_id) == 1
    assert value(before, "process_resident_memory_bytes") > 0  # the process collectors

    wait_for(lambda: registered(conn, worker_id) is not None, 10, "the worker's first beat")
    assert registered(conn, worker_id) == (w.proc.pid, 4, [name])

    ok = submit(conn, name, name, [{"ledger": False, "result": {"i": i}} for i in range(5)])
    dead = submit(conn, name, name, [{"ledger": False, "fail_times": 1, "permanent": True}])
    slow = submit(conn, name, name, [{"ledger": False, "sleep": 3}])

    def settled() -> bool:
        s = scrape(port)
        return value(s, "jobctl_worker_jobs_completed_total") == len(ok) and (
            value(s, "jobctl_worker_jobs_dead_total") == 1
        )

    wait_for(settled, 20, "the jobs to finish")
    running = scrape(port)
    assert value(running, "jobctl_worker_jobs_in_flight") == 1  # the slow one
    wait_for(
        lambda: value(scrape(port), "jobctl_worker_jobs_completed_total") == len(ok) + 1, 10, "the slow job"
    )
    after = scrape(port)
    assert value(after, "jobctl_worker_jobs_claimed_total") == len(ok) + len(dead) + len(slow)
    assert value(after, "jobctl_worker_jobs_failed_total") == 0
    assert value(after, "jobctl_worker_jobs_in_flight") == 0
    count = "jobctl_worker_handler_duration_seconds_count"
    assert value(after, count, queue=name, outcome="ok") == len(ok) + 1
    assert value(after, count, queue=name, outcome="permanent") == 1
    assert value(after, "jobctl_worker_handler_duration_seconds_sum", queue=name, outcome="ok") >= 3
    assert value(after, "jobctl_worker_claim_duration_seconds_count") >= 1
    assert value(after, "jobctl_worker_claim_duration_seconds_sum") > 0

    assert w.stop() == 0, w.log[-3000:]
    assert registered(conn, worker_id) is None  # worker_gone at the clean exit


def test_without_a_port_no_metrics_server(conn: Conn, name: str, spawn: Callable[..., WorkerProcess]) -> None:
    w = spawn(*worker_args(name, "handle"), "--worker-id", f"{name}-w")
    ids = submit(conn, name, name, [{"ledger": False}])
    wait_for(lambda: registered(conn, f"{name}-w") is not None, 10, "the worker's first beat")
    row = conn.execute("select state from jobctl.job where job_id = %s", (ids[0],)).fetchone()
    deadline = time.monotonic() + 10
    while row != ("completed",) and time.monotonic() < deadline:
        time.sleep(0.1)
        row = conn.execute("select state from jobctl.job where job_id = %s", (ids[0],)).fetchone()
    assert row == ("completed",)
    assert "metrics" not in w.log
    assert w.stop() == 0


def test_a_taken_metrics_port_fails_the_worker(name: str, spawn: Callable[..., WorkerProcess]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        w = spawn(*worker_args(name, "handle"), "--metrics-port", str(taken))
        assert w.wait(15) == 1
    assert "Address already in use" in w.log, w.log[-2000:]
