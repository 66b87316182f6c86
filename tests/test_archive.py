"""The archive in object storage (jobctl.archive): days of finished jobs leave the
database as Parquet files in a directory and in an S3 bucket (moto's server on loopback, ports
25550-25559), get_job and job_history still find them from every surface (client, CLI, HTTP API) for
their own tenant only, forget_subject reaches the files, and an exporter killed with -9 mid-run leaves
nothing lost or doubled once run again. Each test in a scratch database of its own (shortened
retention, days three days back)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from jobctl import Client, archive, migrate
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb
from test_api import Server, auth

pytestmark = pytest.mark.slow
MOTO_PORTS = range(25550, 55560)


def cli(dsn: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobctl.cli", *args],
        env={**os.environ, "JOBCTL_DSN": dsn, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def fresh(dsn: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(dsn, autocommit=True)
    with conn.transaction():
        migrate.migrate(conn)
    return conn


def finished_jobs(conn: psycopg.Connection[Any], tenant: str, n: int, **extra: Any) -> list[int]:
    """n jobs of the tenant, each claimed and completed; the first fails once first (an event row)."""
    queue = f"{tenant}-q"
    ids = [
        r[0]
        for r in conn.execute(
            "select job_id from jobctl.submit_jobs(%s)",
            (Jsonb([{"tenant_id": tenant, "queue": queue, "payload": {"i": i}, **extra} for i in range(n)]),),
        )
    ]
    done = 0
    while done < n:
        for job_id, epoch in conn.execute(
            "select job_id, lease_epoch from jobctl.claim_job('w', %s, 100)", ([queue],)
        ).fetchall():
            if (
                job_id == ids[0]
                and not conn.execute("select 1 from jobctl._event where job_id = %s", (job_id,)).fetchone()
            ):
                conn.execute("select jobctl.fail_job(%s, %s, 'once', true)", (job_id, epoch))
                conn.execute("update jobctl._delayed set run_at = now() where job_id = %s", (job_id,))
                conn.execute("update jobctl.job set run_at = now() where job_id = %s", (job_id,))
                continue
            conn.execute("select jobctl.complete_job(%s, %s, %s)", (job_id, epoch, Jsonb({"ok": job_id})))
            done += 1
        conn.execute("select jobctl.tick()")
    return ids


def to_archive(conn: psycopg.Connection[Any], ids: list[int], days_back: int, url: str) -> None:
    """Move the jobs (and their events) days_back days into the past, then retire with hot and
    archive retention of one day and the object archive at url, until they are in jobctl.job_archive."""
    back = f"{days_back} days"
    conn.execute(
        "update jobctl.job set created_at = created_at - %s::interval where job_id = any(%s)", (back, ids)
    )
    conn.execute(
        "update jobctl._event set job_created_at = job_created_at - %s::interval where job_id = any(%s)",
        (back, ids),
    )
    conn.execute("update jobctl.retention set hot = '1 day', archive = '1 day', archive_url = %s", (url,))
    for _ in range(40):
        if conn.execute("select count(*) from jobctl.job where job_id = any(%s)", (ids,)).fetchone() == (0,):
            return
        conn.execute("select jobctl.maintain_partitions()")
    raise AssertionError("the jobs did not reach the archive")


def archived_rows(conn: psycopg.Connection[Any]) -> dict[int, int]:
    """job id -> how many times it is in the files the manifest lists."""
    seen: dict[int, int] = {}
    for f in archive.manifest(conn):
        fs, path = archive.filesystem(f["url"])
        import pyarrow.parquet as pq

        for job_id in pq.read_table(path, filesystem=fs, columns=["job_id"]).column("job_id").to_pylist():
            seen[job_id] = seen.get(job_id, 0) + 1
    return seen


def in_database(conn: psycopg.Connection[Any], ids: list[int]) -> int:
    row = conn.execute(
        "select (select count(*) from jobctl.job_archive where job_id = any(%s))"
        " + (select count(*) from jobctl.job where job_id = any(%s))",
        (ids, ids),
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[dict[str, str]]:
    """moto's S3 server on a free loopback port of 25550-25559, a bucket, and the environment that
    points the archive at it."""
    port = next(p for p in MOTO_PORTS if socket.socket().connect_ex(("127.0.0.1", p)) != 0)
    log = (tmp_path / "moto.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )
    env = {
        "JOBCTL_ARCHIVE_OPTIONS": json.dumps({"endpoint_url": f"http://127.0.0.1:{port}"}),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.put(f"http://127.0.0.1:{port}/jobctl-archive", timeout=1).raise_for_status()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "moto did not start"
                time.sleep(0.1)
        with pytest.MonkeyPatch.context() as mp:
            for k, v in env.items():
                mp.setenv(k, v)
            yield env
    finally:
        proc.terminate()
        proc.wait(10)


def check_surfaces(
    dsn: str, conn: psycopg.Connection[Any], job_id: int, before: Any, history: Any, with_cli: bool = True
) -> None:
    """The archived job, from the client, the CLI and the HTTP API, as get_job showed it in the database."""
    with Client(dsn) as client:
        got = client.get_job(job_id)
        assert got is not None, "the client's get_job finds the archived job"
        for field in ("job_id", "tenant_id", "queue", "state", "payload", "result", "attempt", "created_at"):
            assert getattr(got, field) == getattr(before, field), field
        assert got.finished_at == before.finished_at and got.started_at == before.started_at
        assert [(h.at, h.event, h.attempt, h.worker_id) for h in client.job_history(job_id)] == [
            (h.at, h.event, h.attempt, h.worker_id) for h in history
        ]
    if not with_cli:
        return
    shown = cli(dsn, "get", str(job_id), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["result"] == before.result
    events = cli(dsn, "history", str(job_id), "--json")
    assert events.returncode == 0, events.stderr
    assert [e["event"] for e in json.loads(events.stdout)] == [h.event for h in history]


def test_days_leave_for_a_directory_and_stay_readable_by_their_tenant_only(
    scratch_dsn: str, tmp_path: Path
) -> None:
    url = str(tmp_path / "archive")
    with fresh(scratch_dsn) as conn:
        a = finished_jobs(conn, "acme", 30, subject_key="user-1")
        b = finished_jobs(conn, "bolt", 20)
        assert in_database(conn, a + b) == 50
        to_archive(conn, a + b, 3, url)
        for _ in range(3):  # past the archive retention, but not exported yet: retention keeps the day
            conn.execute("select jobctl.maintain_partitions()")
        assert conn.execute("select count(*) from jobctl.job_archive").fetchone() == (50,)
        with Client(scratch_dsn) as client:
            before = {j: client.get_job(j) for j in (a[0], a[5], b[0])}
            history = {j: client.job_history(j) for j in before}
        events = [h.event for h in history[a[0]]]
        assert events[0] == "submitted" and "failed" in events and events[-1] == "completed", events

        ran = cli(scratch_dsn, "archive", "run", "--json")
        assert ran.returncode == 0, ran.stderr
        report = json.loads(ran.stdout)
        assert sum(u["rows"] for u in report["units"]) == 50 and report["url"] == url
        assert in_database(conn, a + b) == 0, "the day left the database"
        assert archived_rows(conn) == dict.fromkeys(a + b, 1)
        assert sorted(Path(url).rglob("*.parquet"))  # tenant=<id>/day=<date>/jobs.parquet
        for j in before:
            check_surfaces(scratch_dsn, conn, j, before[j], history[j], with_cli=j == a[0])
        assert cli(scratch_dsn, "archive", "verify").returncode == 0
        assert archive.run(scratch_dsn).units == [], "a second run finds nothing due"

        # the tenant rule: a login granted bolt only, and an API token of bolt, see none of acme's
        conn.execute("create role archive_reader login")
        conn.execute("grant jobctl_reader to archive_reader")
        conn.execute("select jobctl.grant_tenant('archive_reader', 'bolt')")
        reader = make_conninfo(scratch_dsn, user="archive_reader")
        with Client(reader) as client:
            assert client.get_job(a[0]) is None and client.job_history(a[0]) == []
            assert client.get_job(b[0]) is not None and client.job_history(b[0])
        token = conn.execute("select jobctl.create_api_token('bolt', array['jobs:read'])").fetchone()
        assert token is not None
        server = Server(scratch_dsn)
        try:
            server.wait_up()
            own = httpx.get(f"{server.url}/api/v1/jobs/{b[0]}", headers=auth(token[0]), timeout=10)
            assert own.status_code == 200 and own.json()["job"]["state"] == "completed", own.text
            other = httpx.get(f"{server.url}/api/v1/jobs/{a[0]}", headers=auth(token[0]), timeout=10)
            assert other.status_code == 404, other.text
        finally:
            server.stop()
            conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where usename = 'archive_reader'"
            )

        # forget_subject: hidden at once, gone from the file at the next run
        assert conn.execute("select * from jobctl.forget_subject('acme', 'user-1')").fetchone() == (0, 0)
        with Client(scratch_dsn) as client:
            assert client.get_job(a[0]) is None, "a subject being forgotten is not shown"
        assert archived_rows(conn).get(a[0]) == 1, "still in the file until the next run"
        assert archive.run(scratch_dsn).erased_rows == 30
        seen = archived_rows(conn)
        assert not set(a) & set(seen) and set(seen) == set(b)
        assert conn.execute("select count(*) from jobctl.archive_erasure").fetchone() == (0,)
        assert [problem for _, problem in archive.verify(conn)] == [None] * len(archive.manifest(conn))
        conn.execute("drop owned by archive_reader")
        conn.execute("drop role archive_reader")


def test_an_s3_bucket_on_moto_holds_the_archive(
    scratch_dsn: str, moto: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = json.dumps({"vault": "k" * 40})
    with fresh(scratch_dsn) as conn:
        ids = finished_jobs(conn, "acme", 40, subject_key="user-2")
        keep = finished_jobs(conn, "acme", 10)
        # a tenant that encrypts: its payloads stay sealed in the files, and open with its key only
        conn.execute("select set_config('jobctl.payload_keys', %s, false)", (keys,))
        conn.execute("select jobctl.put_tenant('vault', encrypt_payloads => true)")
        [secret] = finished_jobs(conn, "vault", 1)
        keep.append(secret)
        to_archive(conn, ids + keep, 3, "s3://jobctl-archive/jobs")
        with Client(scratch_dsn) as client:
            before, history = client.get_job(ids[0]), client.job_history(ids[0])
        ran = cli(scratch_dsn, "archive", "run", "--json")
        assert ran.returncode == 0, ran.stderr
        assert in_database(conn, ids + keep) == 0
        files = archive.manifest(conn)
        assert files and all(f["url"].startswith("s3://jobctl-archive/jobs/tenant=") for f in files)
        assert archived_rows(conn) == dict.fromkeys(ids + keep, 1)
        check_surfaces(scratch_dsn, conn, ids[0], before, history)
        [vault] = archive.manifest(conn, "vault")
        fs, path = archive.filesystem(vault["url"])
        import pyarrow.parquet as pq

        assert (
            pq.read_table(path, filesystem=fs).column("payload")[0].as_py().startswith('{"$jobctl_sealed":')
        )
        with Client(scratch_dsn) as client:
            job = client.get_job(secret)
            assert job is not None and "$jobctl_sealed" in job.payload, "no key: the envelope"
        monkeypatch.setenv("JOBCTL_PAYLOAD_KEYS", keys)
        with Client(scratch_dsn) as client:
            job = client.get_job(secret)
            assert job is not None and job.payload == {"i": 0}, "its key opens it"
        conn.execute("select * from jobctl.forget_subject('acme', 'user-2')")
        assert archive.run(scratch_dsn).erased_rows == 40
        assert set(archived_rows(conn)) == set(keep)
        assert [problem for _, problem in archive.verify(conn)] == [None] * len(archive.manifest(conn))


def test_an_exporter_killed_mid_run_loses_and_doubles_nothing(scratch_dsn: str, tmp_path: Path) -> None:
    url = tmp_path / "archive"
    with fresh(scratch_dsn) as conn:
        ids: list[int] = []
        for days_back, tenant in ((3, "t1"), (3, "t2"), (3, "t3"), (2, "t1"), (2, "t4")):
            batch = finished_jobs(conn, tenant, 1)
            # many rows a tenant, so that writing a day takes a while: bulk copies of the finished job
            conn.execute(
                "insert into jobctl.job (tenant_id, queue, state, run_at, attempt, max_attempts, payload,"
                " started_at, finished_at, result, created_at)"
                " select tenant_id, queue, state, run_at, attempt, max_attempts,"
                " payload || jsonb_build_object('n', n),"
                " started_at, finished_at, result, created_at from jobctl.job, generate_series(1, 3000) as n"
                " where job_id = %s",
                (batch[0],),
            )
            batch = [
                r[0]
                for r in conn.execute(
                    "select job_id from jobctl.job where tenant_id = %s and job_id >= %s", (tenant, batch[0])
                )
            ]
            conn.execute(
                "update jobctl.job set created_at = created_at - %s::interval where job_id = any(%s)",
                (f"{days_back} days", batch),
            )
            ids += batch
        to_archive(conn, ids, 0, str(url))
        total = len(ids)

        proc = subprocess.Popen(
            [sys.executable, "-m", "jobctl.cli", "archive", "run"],
            env={**os.environ, "JOBCTL_DSN": scratch_dsn},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not list(url.rglob("*.parquet")):  # a file written, its day not yet committed
            assert proc.poll() is None and time.monotonic() < deadline, "the exporter ended before writing"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert conn.execute("select count(*) from jobctl.archive_manifest").fetchone() == (0,)
        assert in_database(conn, ids) == total, "nothing left the database before its commit"
        writing = {r[0] for r in conn.execute("select url from jobctl.archive_writing")}
        assert {str(p) for p in url.rglob("*.parquet")} <= writing, "every file on disk was recorded first"

        for _ in range(20):  # the killed session's backend may still hold the lock for a moment
            again = cli(scratch_dsn, "archive", "run", "--json", "--lock-wait", "2")
            if again.returncode == 0:
                break
        assert again.returncode == 0, again.stderr
        assert in_database(conn, ids) == 0
        seen = archived_rows(conn)
        assert len(seen) == total and set(seen) == set(ids) and set(seen.values()) == {1}
        assert {str(p) for p in url.rglob("*.parquet")} == {f["url"] for f in archive.manifest(conn)}, (
            "no file outside the manifest"
        )
        assert conn.execute("select count(*) from jobctl.archive_writing").fetchone() == (0,)

        # a job carried over past its day that reached the archive after its day had left: a late file
        row = conn.execute(
            "insert into jobctl.job_archive (job_id, created_at, tenant_id, queue, state, priority, run_at,"
            " attempt, max_attempts, payload, started_at, finished_at)"
            " values (nextval('jobctl.job_id_seq'), now() - interval '3 days', 't1', 'q', 'completed', 0,"
            " now() - interval '3 days', 1, 3, '{\"late\": true}', now() - interval '1 hour', now())"
            " returning job_id"
        ).fetchone()
        assert row is not None
        late = archive.run(scratch_dsn)
        assert [u.rows for u in late.units] == [1] and in_database(conn, [row[0]]) == 0
        with Client(scratch_dsn) as client:
            job = client.get_job(row[0])
            assert job is not None and job.payload == {"late": True}
        assert any("/late-" in f["url"] for f in archive.manifest(conn))


def test_no_other_login_can_stop_the_exporter(scratch_dsn: str, tmp_path: Path) -> None:
    """`select pg_advisory_lock(hashtext('jobctl archive'))`, run by any login, made
    every `jobctl archive run` exit 1. One run at a time is now a lease that only the
    schema owner can see or take: with that key held, a run exports its day; a login granted CONNECT
    by name and a tenant's writer can neither read nor take the lease; a run in progress makes a second
    exit 1 with one line, and once the first run's backend is gone, the next run takes the lease."""
    url = tmp_path / "archive"
    with fresh(scratch_dsn) as conn:
        ids = finished_jobs(conn, "t1", 3)
        to_archive(conn, ids, 3, str(url))
        old_key = psycopg.connect(scratch_dsn, autocommit=True)  # a superuser: nobody else may now
        old_key.execute("select pg_advisory_lock(hashtext('jobctl archive'))")
        roles = {"nobody": "archive_nobody", "writer": "archive_writer"}
        conn.execute("create role archive_nobody login")
        conn.execute(f'grant connect on database "{conn.info.dbname}" to archive_nobody')
        conn.execute("create role archive_writer login in role jobctl_writer")
        conn.execute("select jobctl.grant_tenant('archive_writer', 't1')")
        try:
            for role in roles.values():
                with psycopg.connect(make_conninfo(scratch_dsn, user=role), autocommit=True) as other:
                    for attempt in (
                        "select * from jobctl._archive_lease",
                        "update jobctl._archive_lease set holder = gen_random_uuid()",
                        "select jobctl._archive_lease(gen_random_uuid(), 3600)",
                        "select pg_try_advisory_lock(hashtext('jobctl archive'))",
                    ):
                        with pytest.raises(psycopg.errors.InsufficientPrivilege):
                            other.execute(attempt)
            done = cli(scratch_dsn, "archive", "run", "--json", "--lock-wait", "2")
            assert done.returncode == 0, done.stderr
            assert in_database(conn, ids) == 0 and len(archived_rows(conn)) == len(ids)

            with psycopg.connect(scratch_dsn, autocommit=True) as running:  # a run in progress
                row = running.execute("select jobctl._archive_lease(gen_random_uuid(), 600)").fetchone()
                assert row == (True,)
                busy = cli(scratch_dsn, "archive", "run", "--lock-wait", "1")
                assert busy.returncode == 1, busy
                held = "jobctl: another `jobctl archive run` holds the archive's lease"
                assert busy.stderr.strip() == held, busy.stderr
            for _ in range(20):  # its backend gone (a run killed with its connection), the lease is free
                again = cli(scratch_dsn, "archive", "run", "--lock-wait", "1")
                if again.returncode == 0:
                    break
            assert again.returncode == 0, again.stderr
            assert conn.execute("select holder from jobctl._archive_lease").fetchone() == (None,)
        finally:
            old_key.close()
            for role in roles.values():
                kill = "select pg_terminate_backend(pid) from pg_stat_activity where usename = %s"
                conn.execute(kill, (role,))
                conn.execute("delete from jobctl._role_tenant where role_oid = %s::regrole", (role,))
                conn.execute(f'revoke all on database "{conn.info.dbname}" from {role}')
                conn.execute(f"drop role {role}")


def test_forget_subject_during_an_export_neither_deadlocks_nor_leaves_the_subject(
    scratch_dsn: str, tmp_path: Path
) -> None:
    url = tmp_path / "archive"
    with fresh(scratch_dsn) as conn:
        [first] = finished_jobs(conn, "acme", 1)
        conn.execute(
            "insert into jobctl.job (tenant_id, queue, state, priority, run_at, attempt, max_attempts,"
            " payload, started_at, finished_at, created_at, subject_key)"
            " select tenant_id, queue, state, priority, run_at, attempt, max_attempts, payload, started_at,"
            " finished_at, created_at, 'user-' || (n %% 20) from jobctl.job, generate_series(1, 12000) as n"
            " where job_id = %s",
            (first,),
        )
        ids = [r[0] for r in conn.execute("select job_id from jobctl.job where tenant_id = 'acme'")]
        conn.execute("update jobctl.job set created_at = created_at - interval '3 days'")
        to_archive(conn, ids, 0, str(url))
        subjects = {f"user-{k}" for k in range(0, 20, 2)}
        gone = {
            r[0]
            for r in conn.execute(
                "select job_id from jobctl.job_archive where subject_key = any(%s)", (list(subjects),)
            )
        }
        failures: list[str] = []

        def forget() -> None:
            try:
                with psycopg.connect(scratch_dsn, autocommit=True) as c:
                    for s in sorted(subjects):
                        c.execute("select * from jobctl.forget_subject('acme', %s)", (s,))
                        time.sleep(0.05)
            except psycopg.Error as e:
                failures.append(f"forget_subject: {e.sqlstate} {e}")

        forgetter = threading.Thread(target=forget)
        forgetter.start()
        runs = [archive.run(scratch_dsn)]
        forgetter.join(60)
        assert not failures, failures
        while runs[-1].left or conn.execute("select count(*) from jobctl.archive_erasure").fetchone() != (0,):
            assert len(runs) < 5, [r.left for r in runs]
            runs.append(archive.run(scratch_dsn))
        assert in_database(conn, ids) == 0
        seen = archived_rows(conn)
        assert set(seen) == set(ids) - gone and set(seen.values()) == {1}
        assert {str(p) for p in url.rglob("*.parquet")} == {f["url"] for f in archive.manifest(conn)}
        # without the archive extra: one clear line, exit 1
        blocked = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; sys.modules['pyarrow'] = None; from jobctl.cli import main; main()",
            ]
            + ["archive", "run"],
            env={**os.environ, "JOBCTL_DSN": scratch_dsn},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert blocked.returncode == 1 and "pip install 'jobctl[archive]'" in blocked.stderr, blocked.stderr
        assert len(blocked.stderr.strip().splitlines()) == 1
