"""A PostgreSQL restart of one second: the worker's and the API's reconnects are
capped at about a second (jittered), so both work again within about 2 s of the server being back.
Before, the first API submit came 10.3 s after the stop and the worker stayed idle 9.5 s: the pools'
reconnect attempts (psycopg_pool: 1 s doubling) and the worker's retries (0.1 s doubling to 5 s)
had grown while the server was down.

The cluster is a scratch one of this test's own (initdb, its own port and socket directory), so the
restart disturbs nobody else's test cluster; a worker and `jobctl serve` run against it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from jobctl import db, migrate
from psycopg.conninfo import make_conninfo
from test_api import Server, auth
from test_worker import WorkerProcess, submit, wait_for, worker_args

sys.path.insert(0, str(db.ROOT / "benchmarks" / "drills"))
from clusters import Cluster, as_pg, pg_bin, port_free, reachable_by_postgres  # noqa: E402

pytestmark = pytest.mark.slow  # left out by make test-quick

PORTS = range(25560, 25580)  # below the ephemeral range, beside the drills' (benchmarks/drills/clusters.py)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A fresh cluster with a migrated database `jobctl`, stopped and deleted at the end."""
    base = reachable_by_postgres(db.ROOT / f".restart-{uuid.uuid4().hex[:8]}")
    port = next(p for p in PORTS if port_free(p))
    c = Cluster(base, port)
    try:
        subprocess.run(
            as_pg(
                [str(pg_bin() / "initdb"), "-D", str(c.data), "-U", "postgres", "-A", "trust", "--no-sync"]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        c.ctl("-o", cluster_options(c), "-l", str(base / "server.log"), "-w", "start")
        with psycopg.connect(make_conninfo(c.dsn(), dbname="postgres"), autocommit=True) as conn:
            conn.execute("create database jobctl")
        with psycopg.connect(c.dsn(), autocommit=True) as conn:
            migrate.migrate(conn)
        yield c
    finally:
        if (c.data / "postmaster.pid").exists():
            c.ctl("-m", "immediate", "stop")
        shutil.rmtree(base.resolve(), ignore_errors=True)
        if base.is_symlink():
            base.unlink()


def test_the_api_and_a_worker_work_again_within_a_second_of_a_1_s_restart(
    cluster: Cluster, tmp_path: Path
) -> None:
    dsn = cluster.dsn()
    tenant, queue = "restart", "restart_q"
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select jobctl.create_api_token(%s, %s::text[])", (tenant, ["jobs:submit"])
        ).fetchone()
        assert row is not None
        token = str(row[0])
    worker = WorkerProcess(dsn, tmp_path, worker_args(queue, "handle", "--concurrency", "4"))
    server = Server(dsn)
    submits: list[tuple[float, int]] = []  # (time.time(), status: 0 for no answer) of each API submit
    stop_submitting = threading.Event()

    def keep_submitting() -> None:
        """API submits (a job for the worker) every 50 ms, all along, from each of 8 threads: the pools
        hold several connections, which the restart breaks, and the outage's failures grow the backoffs."""
        with httpx.Client(base_url=server.url, timeout=10) as http:
            while not stop_submitting.is_set():
                try:
                    r = http.post(
                        "/api/v1/jobs",
                        json={"queue": queue, "tenant_id": tenant, "payload": {"ledger": False}},
                        headers=auth(token),
                    )
                    submits.append((time.time(), r.status_code))
                except httpx.TransportError:
                    submits.append((time.time(), 0))
                time.sleep(0.05)

    submitters = [threading.Thread(target=keep_submitting) for _ in range(8)]
    try:
        server.wait_up()
        with psycopg.connect(dsn, autocommit=True) as conn:
            [first] = submit(conn, tenant, queue, [{"ledger": False}])
            done = "select state from jobctl.job where job_id = %s"
            wait_for(lambda: conn.execute(done, (first,)).fetchone() == ("completed",), 20, "the first job")
        for t in submitters:
            t.start()
        wait_for(lambda: any(s in (200, 201) for _, s in submits), 20, "an API submit")
        # the worker's claims fail all through the outage (it polls every 0.2 s), as the API's submits do
        stopped_at = time.time()
        cluster.ctl("-m", "fast", "-w", "stop")
        time.sleep(1)
        cluster.ctl("-o", cluster_options(cluster), "-l", str(cluster.path / "server.log"), "-w", "start")
        back_at = time.time()
        with psycopg.connect(dsn, autocommit=True) as conn:
            submit(conn, tenant, queue, [{"ledger": False} for _ in range(20)])
            claimed = "select min(started_at) from jobctl.job where started_at > to_timestamp(%s)"
            wait_for(lambda: conn.execute(claimed, (back_at,)).fetchone() != (None,), 30, "a claim after it")
            row = conn.execute(claimed, (back_at,)).fetchone()
            assert row is not None
            claimed_at = row[0].timestamp()
        wait_for(lambda: any(t > back_at and s in (200, 201) for t, s in submits), 30, "an API submit")
        api_at = min(t for t, s in submits if t > back_at and s in (200, 201))
    finally:
        stop_submitting.set()
        for t in submitters:
            t.join(15)
        server.stop()
        worker.stop()
    failed = sum(1 for t, s in submits if stopped_at <= t <= back_at and s not in (200, 201))
    print(
        f"\nrestart: back {back_at - stopped_at:.2f} s after the stop ({failed} API submits failed);"
        f" first API submit {api_at - back_at:.2f} s after it was back"
        f" ({api_at - stopped_at:.2f} s after the stop), first worker claim {claimed_at - back_at:.2f} s"
    )
    assert api_at - back_at < 1.2, f"the API's first submit came {api_at - back_at:.2f} s after the restart"
    assert claimed_at - back_at < 1.2, f"the worker's first claim came {claimed_at - back_at:.2f} s after it"


def cluster_options(c: Cluster) -> str:
    return f"-p {c.port} -k {c.path} -c listen_addresses='' -c fsync=off -c max_connections=100"
