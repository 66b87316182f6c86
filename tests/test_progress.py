"""Progress from a running job with a real worker process, the real database, a real API
server and the CLI: a handler's `job.report_progress` is read back through get_job, the client, the
API, the CLI and the dashboard while the job runs, and kept when it ends; a fenced zombie's report is
not stored; writes are at most one a second a job, the latest winning; what the database would refuse
is refused. Handlers are in tests/worker_handlers.py (handle_progress, handle_progress_sync)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from click.testing import CliRunner
from jobctl.cli import main
from jobctl.client import Client
from jobctl.worker.job import progress_json
from test_api import Server
from test_dashboard_security import XSS, session
from test_worker import WorkerProcess, all_in, expire_lease, reap, states, submit, wait_for, worker_args

Conn = psycopg.Connection[tuple[object, ...]]


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


@pytest.fixture(scope="module")
def server(dsn: str) -> Iterator[Server]:
    srv = Server(dsn)
    try:
        srv.wait_up()
        yield srv
    finally:
        srv.stop()


def token_for(conn: Conn, tenant: str) -> str:
    row = conn.execute("select jobctl.create_api_token(%s, jobctl._api_scopes())", (tenant,)).fetchone()
    assert row is not None
    return str(row[0])


def progress(conn: Conn, job_id: int) -> Any:
    row = conn.execute("select progress from jobctl.get_job(%s)", (job_id,)).fetchone()
    assert row is not None
    return row[0]


def dashboard_page(server: Server, token: str, job_id: int) -> str:
    web = session(server, token)
    try:
        r = web.get(f"/jobs/{job_id}")
        assert r.status_code == 200, r.text
        return r.text
    finally:
        web.close()


def cli_json(dsn: str, *args: str) -> Any:
    result = CliRunner().invoke(main, list(args), env={"JOBCTL_DSN": dsn}, prog_name="jobctl")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("handler", ["handle_progress", "handle_progress_sync"])
def test_progress_is_read_back_while_the_job_runs_and_kept_when_it_ends(
    dsn: str, conn: Conn, name: str, spawn: Any, server: Server, tmp_path: Path, handler: str
) -> None:
    queue = name + "_q"
    gate = str(tmp_path / "gate")
    [job_id] = submit(conn, name, queue, [{"steps": 2, "gate": gate, "then": 1.5}])
    w = spawn(*worker_args(queue, handler, "--concurrency", "1"))
    first = {"done": 1, "total": 2, "attempt": 1}
    wait_for(lambda: progress(conn, job_id) == first, 10, "the first report to be stored")

    # while it runs (its handler waits at the gate): get_job, the client, the API, the CLI
    assert states(conn, [job_id]) == {"running": 1}
    with Client() as client:
        info = client.get_job(job_id)
        assert info is not None and info.progress == first
    token = token_for(conn, name)
    r = httpx.get(
        f"{server.url}/api/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert r.status_code == 200, r.text
    assert r.json()["job"]["state"] == "running" and r.json()["job"]["progress"] == first
    assert cli_json(dsn, "get", str(job_id), "--json")["progress"] == first
    shown = CliRunner().invoke(main, ["get", str(job_id)], env={"JOBCTL_DSN": dsn}, prog_name="jobctl")
    assert 'progress:         {"done":1,"total":2,"attempt":1}' in shown.output, shown.output
    page = dashboard_page(server, token, job_id)
    assert 'aria-label="50% done"' in page and "1 of 2" in page, page

    # the end: the job keeps the last progress its attempt wrote
    Path(gate + ".1").touch()
    wait_for(all_in(conn, [job_id], "completed"), 15, "the job to complete")
    assert progress(conn, job_id) == {"done": 2, "total": 2, "attempt": 1}
    assert w.stop() == 0


@pytest.mark.parametrize("handler", ["handle_progress", "handle_progress_sync"])
def test_a_zombies_progress_is_not_stored(
    conn: Conn, name: str, spawn: Any, tmp_path: Path, handler: str
) -> None:
    queue = name + "_q"
    gate = str(tmp_path / "gate")
    [job_id] = submit(conn, name, queue, [{"steps": 2, "gate": gate, "then": 1.5}])
    # a long lease: no regular heartbeat in this test's time, so the zombie does not learn it lost the job
    zombie = spawn(*worker_args(queue, handler, "--concurrency", "1", "--lease", "60"))
    attempt_1 = {"done": 1, "total": 2, "attempt": 1}
    wait_for(lambda: progress(conn, job_id) == attempt_1, 10, "attempt 1 to report")
    expire_lease(conn, job_id)
    wait_for(lambda: reap(conn) and states(conn, [job_id]) == {"failed": 1}, 5, "the reaper to take it back")
    assert progress(conn, job_id) == attempt_1, "the failed job keeps it"
    healthy = spawn(*worker_args(queue, handler, "--concurrency", "1", "--lease", "60"))
    attempt_2 = {"done": 1, "total": 2, "attempt": 2}
    wait_for(lambda: progress(conn, job_id) == attempt_2, 10, "attempt 2 to report")

    # the zombie goes on: its next report is sent (a progress heartbeat), answered lost, and not stored
    Path(gate + ".1").touch()
    wait_for(
        lambda: "job lease lost; handler stopped" in zombie.log, 10, "the zombie to hear it lost the lease"
    )
    assert progress(conn, job_id) == attempt_2
    Path(gate + ".2").touch()
    wait_for(all_in(conn, [job_id], "completed"), 15, "attempt 2 to complete")
    assert progress(conn, job_id) == {"done": 2, "total": 2, "attempt": 2}
    assert zombie.stop() == 0 and healthy.stop() == 0
    assert zombie.summary()["fenced"] == "1" and healthy.summary()["completed"] == "1"


WRITES_DDL = """
create table public.progress_writes (job_id bigint, progress jsonb, at timestamptz default clock_timestamp());
create function public.progress_written() returns trigger language plpgsql as $$
begin
    insert into public.progress_writes (job_id, progress) values (new.job_id, new.progress);
    return null;
end
$$;
create trigger progress_written after update on jobctl._running
for each row when (new.progress is distinct from old.progress) execute function public.progress_written();
"""
WRITES_DROP = """
drop trigger if exists progress_written on jobctl._running;
drop function if exists public.progress_written();
drop table if exists public.progress_writes;
"""


@pytest.fixture
def progress_writes(conn: Conn) -> Iterator[None]:
    """Every change of a lease row's progress, with the database clock, in public.progress_writes (a
    trigger on _running for this test only)."""
    conn.execute(WRITES_DROP)
    conn.execute(WRITES_DDL)
    try:
        yield
    finally:
        conn.execute(WRITES_DROP)


@pytest.mark.parametrize("handler", ["handle_progress", "handle_progress_sync"])
def test_progress_is_written_at_most_once_a_second_and_the_latest_wins(
    conn: Conn, name: str, spawn: Any, progress_writes: None, handler: str
) -> None:
    queue = name + "_q"
    # 60 reports in about 3 s, then 1.5 s more for the last to be written
    [job_id] = submit(conn, name, queue, [{"burst": 60, "burst_pause": 0.05, "then": 1.5}])
    w = spawn(*worker_args(queue, handler, "--concurrency", "1"))
    wait_for(all_in(conn, [job_id], "completed"), 20, "the job to complete")
    assert w.stop() == 0
    writes = conn.execute(
        "select progress, extract(epoch from at)::float8 from public.progress_writes"
        " where job_id = %s order by at",
        (job_id,),
    ).fetchall()
    assert writes, "no progress was written"
    assert writes[-1][0] == {"i": 60}, "the latest report wins"
    assert progress(conn, job_id) == {"i": 60}, "and the job keeps it"
    gaps = [float(str(b[1])) - float(str(a[1])) for a, b in zip(writes, writes[1:], strict=False)]
    # (the worker's loop clock and the database's: a few ms apart at most)
    assert all(g > 0.9 for g in gaps), gaps
    assert 2 <= len(writes) <= 5, writes


def test_progress_the_database_would_refuse_is_refused(conn: Conn, name: str, spawn: Any) -> None:
    queue = name + "_q"
    too_big = {"s": "x" * 2100}  # 2,117 bytes as jsonb: the worker sends nothing and logs it
    plan = {"after_extra": 1.2, "steps": 1, "then": 1.5}  # the extra is sent before the step replaces it
    big, deep = submit(
        conn,
        name,
        queue,
        [{"extra": too_big, **plan}, {"extra": "too_deep", **plan}],
    )
    w = spawn(*worker_args(queue, "handle_progress", "--concurrency", "2"))
    wait_for(all_in(conn, [big, deep], "completed"), 15, "both jobs to complete")
    assert w.stop() == 0
    assert "progress not stored: over 2000 bytes as jsonb" in w.log and "progress_bytes=2117" in w.log, w.log
    assert progress(conn, big) == {"done": 1, "total": 1, "attempt": 1}, "the next report is stored"
    results = dict(
        conn.execute("select job_id, result from jobctl.job where job_id = any(%s)", ([big, deep],))
    )
    assert results[big] == {"refused": None}
    assert results[deep] == {"refused": "progress must not nest arrays and objects over 100 levels deep"}
    assert progress(conn, deep) == {"done": 1, "total": 1, "attempt": 1}
    assert "heartbeat failed" not in w.log


def test_progress_json_refuses_what_the_heartbeat_would() -> None:
    nested: Any = []
    for _ in range(99):
        nested = [nested]
    assert progress_json(nested).count("[") == 100  # 100 levels: accepted
    assert progress_json({"done": 1, "total": 3}) == '{"done":1,"total":3}'
    assert progress_json("é") == '"é"' and progress_json(None) == "null"
    for bad, words in (
        ([nested], "more than 100 levels"),
        ({"x": float("nan")}, "not JSON-serialisable"),
        ({"x": object()}, "not JSON-serialisable"),
        ("\ud800", "not JSON-serialisable"),
        ("a\x00b", "NUL"),
        ("x" * 70_000, "bytes of JSON"),
    ):
        with pytest.raises(ValueError) as e:
            progress_json(bad)
        assert words.split()[-1] in str(e.value), (bad, str(e.value))


def test_the_job_page_shows_a_bar_or_the_escaped_json(conn: Conn, name: str, server: Server) -> None:
    queue = name + "_q"
    ids = submit(conn, name, queue, [{}, {}, {}])
    leases = conn.execute(
        "select job_id, lease_epoch from jobctl.claim_job('w', array[%s], 3)", (queue,)
    ).fetchall()
    reports = [{"done": 3, "total": 4, "note": XSS}, {"percent": 12.5}, {"stage": XSS}]
    by_job = dict(zip(sorted(ids), reports, strict=True))
    for job_id, epoch in leases:
        answer = conn.execute(
            "select jobctl.heartbeat(%s, %s, progress => %s::jsonb)",
            (job_id, epoch, json.dumps(by_job[job_id])),
        ).fetchone()
        assert answer == ("ok",)
    bar, percent, plain = sorted(ids)
    token = token_for(conn, name)
    pages = {job_id: dashboard_page(server, token, job_id) for job_id in ids}
    assert 'aria-label="75% done"' in pages[bar] and "3 of 4" in pages[bar]
    assert 'aria-label="12% done"' in pages[percent] or 'aria-label="13% done"' in pages[percent]
    assert "aria-label=" not in pages[plain].split("Progress")[1].split("</div>")[0], "no bar without numbers"
    for page in (pages[bar], pages[plain]):
        assert XSS not in page and html.escape(XSS, quote=False) in page.replace("&#34;", '"')
    for job_id, epoch in leases:
        conn.execute("select jobctl.complete_job(%s, %s)", (job_id, epoch))
    done = dashboard_page(server, token, bar)
    assert "(the last reported)" in done and 'aria-label="75% done"' in done
