"""The metrics and the queue list stay bounded whatever the number of queues. One
submit_jobs into QUEUES queues (2,000; `make cardinality`: 10,000), in a database of its own (a
worker without --queue drains it all):
the admin /metrics holds the busiest 200 tenant queues (jobctl.job_series, the setting
jobctl.metrics_queues) and one series summing the rest, under JOB_SERIES_BOUND bytes; the dashboard's
/queues serves one page of 100 with a next link; the worker's own metrics hold 100 queues and "other",
under WORKER_BOUND bytes; once drained, the queues' series disappear from /metrics."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from test_api import Server, free_port
from test_worker import WorkerProcess

pytestmark = pytest.mark.slow

# make test: 2,000 queues (past both bounds, the 200 of /metrics and the 100 of a page); make
# cardinality: the 10,000
QUEUES = int(os.environ.get("JOBCTL_CARDINALITY_QUEUES", "2000"))
JOB_SERIES_BOUND = 1_500_000  # bytes of /metrics at 200 tenant queues (docs/operations.md, Metrics)
WORKER_BOUND = 300_000  # bytes of a worker's metrics at 100 queues
Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture(scope="module")
def own_dsn(dsn: str) -> Iterator[str]:
    name = f"jobctl_cardinality_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'drop database if exists "{name}" with (force)')
        c.execute(f'create database "{name}"')
    made = make_conninfo(**{**conninfo_to_dict(dsn), "dbname": name})
    try:
        subprocess.run(
            [sys.executable, "-m", "jobctl.cli", "migrate"],
            env={**os.environ, "JOBCTL_DSN": made}, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        yield made
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'drop database "{name}" with (force)')


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def queue_labels(text: str, family: str) -> set[str]:
    return {
        s.labels["queue"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if f.name == family and "queue" in s.labels
    }


def test_many_queues(own_dsn: str, tmp_path: Path) -> None:
    with psycopg.connect(own_dsn, autocommit=True) as db:
        made = db.execute("select jobctl.create_api_token(null, jobctl._api_scopes())").fetchone()
        assert made is not None
        admin = str(made[0])
        jobs = [
            {"tenant_id": "wide", "queue": f"q{i:05}", "payload": {"ledger": False}} for i in range(QUEUES)
        ]
        db.execute("select count(*) from jobctl.submit_jobs(%s::jsonb)", (json.dumps(jobs),))
        db.execute("select jobctl.tick()")
        server = Server(own_dsn)
        try:
            server.wait_up()
            bearer = {"Authorization": f"Bearer {admin}"}
            started = time.monotonic()
            r = httpx.get(f"{server.url}/metrics", headers=bearer, timeout=60)
            seconds = time.monotonic() - started
            assert r.status_code == 200
            own = queue_labels(r.text, "jobctl_jobs") - {""}
            print(f"/metrics with {QUEUES} queues pending: {len(r.content):,} bytes in {seconds:.2f} s, "
                  f"{len(own)} queues of their own")  # fmt: skip
            assert len(r.content) < JOB_SERIES_BOUND and len(own) == 200
            assert f'jobctl_jobs{{tenant="",queue="",state="pending"}} {QUEUES - 200}' in r.text  # the others
            # the dashboard's queue list: one page of 100, a next link
            c = httpx.Client(base_url=server.url, timeout=60, headers={"Origin": server.url})
            form = c.get("/sign-in")
            csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', form.text)
            assert csrf is not None
            c.post("/sign-in", data={"csrf": csrf.group(1), "token": admin, "next": "/queues"})
            page = c.get("/queues")
            rows = re.findall(r'<a href="/jobs\?queue=(q\d+)">', page.text)
            has_next = 'rel="next"' in page.text
            print(f"/queues: {len(page.content):,} bytes, {len(rows)} queues, a next link: {has_next}")
            assert page.status_code == 200 and rows == [f"q{i:05}" for i in range(100)]
            assert 'rel="next" href="/queues?after=q00099"' in page.text
            second = re.findall(r'<a href="/jobs\?queue=(q\d+)">', c.get("/queues?after=q00099").text)
            assert second[0] == "q00100" and len(second) == 100
            # a worker without --queue drains every queue; its own metrics stay bounded
            port = free_port()
            args = ["--handler", "worker_handlers:handle", "--concurrency", "50", "--poll-interval", "0.2",
                    "--metrics-port", str(port)]  # fmt: skip
            w = WorkerProcess(own_dsn, tmp_path, args)
            try:

                def drained() -> bool:
                    assert w.proc.poll() is None, w.log[-3000:]
                    row = db.execute("select count(*) from jobctl.job where state <> 'completed'").fetchone()
                    return row is not None and row[0] == 0

                wait_for(drained, 600, f"the worker to drain {QUEUES:,} queues")
                started = time.monotonic()
                m = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=60)
                seconds = time.monotonic() - started
                queues = queue_labels(m.text, "jobctl_worker_handler_duration_seconds")
                print(f"worker metrics after {QUEUES} queues: {len(m.content):,} bytes in {seconds:.2f} s, "
                      f"{len(queues)} queue labels")  # fmt: skip
                assert len(m.content) < WORKER_BOUND and len(queues) == 101 and "other" in queues
            finally:
                w.proc.terminate()
                w.proc.wait(30)

            # drained: no tenant queue keeps a series of its own a minute after its last event. The
            # minute is not waited out: the counters' events (this test's own database) move 2 minutes back
            def only_other() -> bool:
                body = httpx.get(f"{server.url}/metrics", headers=bearer, timeout=60).text
                return queue_labels(body, "jobctl_jobs") == {""}

            assert not only_other(), "the drained queues' series went before their last minute had passed"
            db.execute("update jobctl._stat_delta set at = at - interval '2 minutes'")
            db.execute("update jobctl._stat_minute set minute = minute - interval '2 minutes'")
            wait_for(only_other, 30, "the drained queues' series to go")
            r = httpx.get(f"{server.url}/metrics", headers=bearer, timeout=60)
            print(f"/metrics drained: {len(r.content):,} bytes")
            assert f'jobctl_jobs{{tenant="",queue="",state="completed"}} {QUEUES}' in r.text
            assert re.findall(r'<a href="/jobs\?queue=(q\d+)">', c.get("/queues").text) == []
        finally:
            server.stop()
