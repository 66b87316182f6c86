"""jobctl behind PgBouncer 1.18 in transaction pooling mode, scaled down (`make pooler-test` runs the
contract's suites through it and measures it): a pgbouncer of the test's own (benchmarks/drills/pooler.py's
Bouncer, a port from 25542 up, .pooler/test-<pid>/) in front of the test database; submit, claim,
heartbeat, complete and fail with prepared statements off; a worker process through it (its listener
direct, and one with none that polls); the tenant rule on server connections that two tenants' callers
share; and the API through it."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from jobctl import db, queries
from jobctl.client import Client
from psycopg.conninfo import conninfo_to_dict
from test_api import Server, auth, job_id_of
from test_api import submit as api_submit
from test_worker import QUICK_RETRY, WorkerProcess, all_in, states, submit, wait_for, worker_args

sys.path.insert(0, str(db.ROOT / "benchmarks" / "drills"))
from clusters import Bouncer, port_free  # noqa: E402

pytestmark = pytest.mark.slow  # left out by make test-quick

SHARED = "jobctl_shared"  # the pooler's entry with 2 server connections, for the tenant rule
Conn = psycopg.Connection[Any]


@pytest.fixture(scope="module")
def bouncer(dsn: str) -> Iterator[Bouncer]:
    port = next((p for p in range(25542, 25550) if port_free(p)), None)
    assert port is not None, "no free port in 25542-25549 for pgbouncer"
    directory = db.ROOT / ".pooler" / f"test-{os.getpid()}"
    dbname = str(conninfo_to_dict(dsn)["dbname"])
    b = Bouncer(directory, port, dsn, pool_size=4, aliases={SHARED: f"dbname={dbname} pool_size=2"})
    b.start()
    try:
        yield b
    finally:
        b.stop()
        shutil.rmtree(b.dir, ignore_errors=True)  # the directory, or where its link led
        if directory.is_symlink():
            directory.unlink()


@pytest.fixture
def pooled(bouncer: Bouncer, dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The pgbouncer DSN of the test database, with JOBCTL_POOLER=transaction for this process and
    what it starts."""
    monkeypatch.setenv("JOBCTL_POOLER", "transaction")
    monkeypatch.delenv("JOBCTL_LISTEN_DSN", raising=False)
    return bouncer.dsn(str(conninfo_to_dict(dsn)["dbname"]))


def connect(dsn: str, app: str = "jobctl-pooler-test") -> Conn:
    return psycopg.connect(dsn, **db.connection_kwargs(dsn, app, autocommit=True))


def test_prepared_statements_break_behind_the_pooler_unless_off(bouncer: Bouncer, pooled: str) -> None:
    """The control: psycopg's prepared statements (threshold 0: at once) from two clients meet on the
    one server connection of a pool of 1 ... and jobctl's connections prepare nothing."""
    one = bouncer.dsn(SHARED)
    with (
        psycopg.connect(one, autocommit=True, prepare_threshold=0) as a,
        psycopg.connect(one, autocommit=True, prepare_threshold=0) as b,
    ):
        a.execute("select 1").fetchone()  # _pg3_0 on the server connection a borrowed
        with pytest.raises(psycopg.Error, match="_pg3_0"):
            for _ in range(20):  # b gets the same server connection (2 in the pool) soon enough
                b.execute("select 2").fetchone()
                a.execute("select 1").fetchone()
    assert db.pooler_kwargs() == {"prepare_threshold": None}
    with connect(pooled) as c, connect(pooled) as d:
        for _ in range(20):
            c.execute("select 1").fetchone()
            d.execute("select 2").fetchone()
        assert c.prepare_threshold is None


def test_submit_claim_heartbeat_complete_fail_through_the_pooler(pooled: str, name: str) -> None:
    with Client(pooled) as client, connect(pooled) as w:
        queue = f"{name}-q"  # its own: a claim takes any tenant's jobs of the queue
        ids = [client.submit(name, queue, {"n": i}, max_attempts=1).job_id for i in range(12)]
        claim = {"worker_id": name, "queues": [queue], "max_jobs": 1, "lease": "30 seconds"}
        done = []
        for i in range(12):  # more than psycopg's prepare threshold (5) of each statement
            row = w.execute(queries.CLAIM_JOB, claim).fetchone()
            assert row is not None
            job_id, epoch = int(row[0]), int(row[7])
            beat = w.execute(
                queries.HEARTBEATS,
                {"extend": "30 seconds", "job_ids": [job_id], "lease_epochs": [epoch], "progress": [None]},
            ).fetchone()
            assert beat is not None and beat[1] == "ok", beat
            if i % 3 == 0:
                w.execute(
                    queries.FAIL_JOB,
                    {
                        "job_id": job_id,
                        "lease_epoch": epoch,
                        "error": "e",
                        "retryable": True,
                        "traceback": None,
                        "cause": None,
                    },  # fmt: skip
                )
            else:
                w.execute(queries.COMPLETE_JOB, {"job_id": job_id, "lease_epoch": epoch, "result": "{}"})
            done.append(job_id)
        assert sorted(done) == sorted(ids)
        got = {i: client.get_job(i) for i in ids}
        assert sorted(j.state for j in got.values() if j) == ["completed"] * 8 + ["dead"] * 4
        # waits: no listener behind the pooler without JOBCTL_LISTEN_DSN; they poll, and finish
        assert client.wait(ids[0], 5).state == "dead"


def test_a_worker_through_the_pooler_listens_directly_or_polls(
    pooled: str, dsn: str, conn: Conn, name: str, tmp_path: Path, bouncer: Bouncer
) -> None:
    conn.execute(
        "create table if not exists public.worker_ledger (job_id bigint, lease_epoch bigint,"
        " at timestamptz default clock_timestamp())"
    )
    direct = WorkerProcess(pooled, tmp_path, [*worker_args(f"{name}-a"), "--listen-dsn", dsn])
    polling = WorkerProcess(pooled, tmp_path, worker_args(f"{name}-b"))
    try:
        listens = (
            "select count(*) from pg_stat_activity where application_name = 'jobctl-worker'"
            " and query = 'listen jobctl'"
        )
        wait_for(lambda: conn.execute(listens).fetchone() == (1,), 15, "the direct listener")
        ids_a = submit(
            conn, name, f"{name}-a", [{"n": i} for i in range(20)] + [{"fail_times": 1}], backoff=QUICK_RETRY
        )
        ids_b = submit(conn, name, f"{name}-b", [{"n": i} for i in range(20)])
        wait_for(all_in(conn, ids_a + ids_b, "completed"), 30, "both workers' jobs")
        assert states(conn, ids_a) == {"completed": 21}
        # the workers' SQL went through pgbouncer: its clients carry their application_name
        apps = [r.get("application_name") for r in bouncer.admin("show clients")]
        assert apps.count("jobctl-worker") >= 2, apps
    finally:
        assert direct.stop() == 0, direct.log[-3000:]
        assert polling.stop() == 0, polling.log[-3000:]
    assert "polling only" in polling.log and "polling only" not in direct.log
    assert re.search(r"prepared statement .* does not exist", direct.log + polling.log) is None


def test_the_tenant_rule_holds_on_shared_server_connections(
    bouncer: Bouncer, dsn: str, conn: Conn, name: str
) -> None:
    """Two tenants' API callers, 8 clients on a pool of 2 server connections: each transaction runs
    authenticate, then asks for every job of both tenants; then, outside it, asks again. A token that
    outlived its transaction on a shared server connection (a session-level set_config) would show
    the other tenant's jobs to the next caller there."""
    role = f"{name}_api"
    conn.execute(f'create role "{role}" login in role jobctl_api')
    tenants = [f"{name}-a", f"{name}-b"]
    jobs = {t: submit(conn, t, "q", [{"n": i} for i in range(3)]) for t in tenants}
    tokens = {
        t: str(conn.execute("select jobctl.create_api_token(%s, %s)", (t, ["jobs:read"])).fetchone()[0])  # type: ignore[index]
        for t in tenants
    }
    all_ids = jobs[tenants[0]] + jobs[tenants[1]]
    seen: list[tuple[str, int, set[str], int]] = []  # tenant, server pid, tenants seen, seen after commit
    errors: list[BaseException] = []
    shared = bouncer.dsn(SHARED, user=role)

    def caller(tenant: str) -> None:
        try:
            with psycopg.connect(shared, autocommit=True, prepare_threshold=None) as c:
                for _ in range(25):
                    with c.transaction():
                        c.execute("select * from jobctl.authenticate(%s, 'jobs:read')", (tokens[tenant],))
                        pid = int(c.execute("select pg_backend_pid()").fetchone()[0])  # type: ignore[index]
                        rows = c.execute(
                            "select j.tenant_id from unnest(%s::bigint[]) as i, jobctl.get_job(i) as j",
                            (all_ids,),
                        ).fetchall()
                    after = c.execute(
                        "select count(*) from unnest(%s::bigint[]) as i, jobctl.get_job(i) as j", (all_ids,)
                    ).fetchone()
                    seen.append((tenant, pid, {str(r[0]) for r in rows}, int(after[0])))  # type: ignore[index]
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(tenants[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(seen) == 200
    # the sharing is real: 2 server connections served all 8 clients, each served both tenants
    pids = {pid for _, pid, _, _ in seen}
    assert len(pids) <= 2, pids
    for pid in pids:
        assert {t for t, p, _, _ in seen if p == pid} == set(tenants), (
            "a server connection saw one tenant only"
        )
    # and neither tenant saw the other's jobs, in its transaction or after it
    for tenant, _, tenants_seen, after in seen:
        assert tenants_seen == {tenant}, (tenant, tenants_seen)
        assert after == 0


def test_the_api_through_the_pooler(pooled: str, conn: Conn, name: str) -> None:
    tenants = [f"{name}-a", f"{name}-b"]
    tokens = {
        t: str(
            conn.execute(  # type: ignore[index]
                "select jobctl.create_api_token(%s, %s)", (t, ["jobs:read", "jobs:submit"])
            ).fetchone()[0]
        )
        for t in tenants
    }
    server = Server(pooled)  # JOBCTL_POOLER=transaction (the fixture); no JOBCTL_LISTEN_DSN: long polls poll
    try:
        server.wait_up()
        with httpx.Client(base_url=server.url, timeout=10) as http:
            # more submits than psycopg's prepare threshold, on the API's pooled connections
            ids = {
                t: [job_id_of(api_submit(http, tokens[t], tenant_id=t)) for _ in range(8)] for t in tenants
            }
            a, b = tenants
            assert http.get(f"/api/v1/jobs/{ids[a][0]}", headers=auth(tokens[b])).status_code == 404
            mine = http.get(f"/api/v1/jobs/{ids[a][0]}", headers=auth(tokens[a]))
            assert mine.status_code == 200 and mine.json()["job"]["tenant_id"] == a
            started = time.monotonic()
            waited = http.get(f"/api/v1/jobs/{ids[a][1]}", params={"wait": 1}, headers=auth(tokens[a]))
            assert waited.status_code == 200 and waited.json()["job"]["state"] == "pending", waited.text
            assert 0.9 < time.monotonic() - started < 5
        logs = server.logs()
    finally:
        server.stop()
    assert "statement and lock timeouts are the database role's" in logs, logs[-3000:]
    assert "does not exist" not in logs and "unsupported startup parameter" not in logs, logs[-3000:]


def test_payload_keys_are_refused_behind_the_pooler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBCTL_POOLER", "transaction")
    monkeypatch.setenv("JOBCTL_PAYLOAD_KEYS", json.dumps({"acme": "k"}))
    with pytest.raises(db.ConfigError, match="connect_query"):
        db.session_options("")
    monkeypatch.setenv("JOBCTL_POOLER", "sometimes")
    with pytest.raises(db.ConfigError, match="JOBCTL_POOLER"):
        db.pooled()
