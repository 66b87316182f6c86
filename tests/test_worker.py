"""The generic worker as a real process against the real database: exactly-once completion through
job.transaction(), graceful shutdown, timeouts, cancellation, lost connections, a server restart,
a fenced zombie, a job claimed again by the same worker, errors a retry cannot cure, errors while
reporting, finished jobs waiting for their completion, and a stop during a claim. Handlers are in
tests/worker_handlers.py; each writes one ledger row per successful attempt inside job.transaction(),
so the ledger shows what committed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from jobctl.worker.calls import retryable
from psycopg_pool import PoolTimeout
from test_notify import another_hint_in_flight, window_start

Conn = psycopg.Connection[tuple[object, ...]]

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
LEDGER_DDL = """
create table if not exists public.worker_ledger (
    job_id bigint, lease_epoch bigint, at timestamptz default clock_timestamp()
)
"""
LISTENERS = (
    "select count(*) from pg_stat_activity"
    " where application_name = 'jobctl-worker' and query = 'listen jobctl'"
)
QUICK_RETRY = {"strategy": "fixed", "base": "0.2 seconds", "max": "1 second", "jitter": False}


class WorkerProcess:
    """`jobctl worker` in a subprocess; stderr (the logs) and stdout go to files."""

    def __init__(self, dsn: str, tmp: Path, args: list[str]) -> None:
        self.err_path = tmp / f"worker{time.monotonic_ns()}.err"
        self.out_path = self.err_path.with_suffix(".out")
        cmd = [sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()", *args]
        env = {**os.environ, "JOBCTL_DSN": dsn, "PYTHONUNBUFFERED": "1"}
        with open(self.err_path, "w") as err, open(self.out_path, "w") as out:
            self.proc = subprocess.Popen(cmd, cwd=TESTS, env=env, stdout=out, stderr=err)

    @property
    def log(self) -> str:
        return self.err_path.read_text()

    @property
    def stdout(self) -> str:
        return self.out_path.read_text()

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def stop(self, timeout: float = 15) -> int:
        """SIGTERM, then the exit code (killed and failed when it takes longer than timeout)."""
        if self.proc.poll() is None:
            self.signal()
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"worker did not exit within {timeout} s; log:\n{self.log[-3000:]}")

    def summary(self) -> dict[str, str]:
        lines = [line for line in self.log.splitlines() if "worker stopped" in line]
        assert lines, f"no summary line in the log:\n{self.log[-3000:]}"
        return dict(re.findall(r"(\w+)=(\S+)", lines[-1]))


@pytest.fixture
def spawn(dsn: str, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(*args: str, dsn_: str | None = None) -> WorkerProcess:
        w = WorkerProcess(dsn_ or dsn, tmp_path, list(args))
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


def wait_for(check: Callable[[], bool], timeout: float, what: str, every: float = 0.1) -> float:
    """Poll until check() is true; the seconds it took. Fails after timeout."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)
    return time.monotonic() - start


def submit(conn: Conn, tenant: str, queue: str, payloads: list[dict[str, Any]], **extra: Any) -> list[int]:
    jobs = [{"tenant_id": tenant, "queue": queue, "payload": p, **extra} for p in payloads]
    rows = conn.execute("select job_id from jobctl.submit_jobs(%s::jsonb)", (json.dumps(jobs),)).fetchall()
    return [int(r[0]) for r in rows]


def states(conn: Conn, ids: list[int]) -> dict[str, int]:
    rows = conn.execute(
        "select state, count(*) from jobctl.job where job_id = any(%s) group by state", (ids,)
    ).fetchall()
    return {str(s): int(str(n)) for s, n in rows}


def all_in(conn: Conn, ids: list[int], state: str) -> Callable[[], bool]:
    return lambda: states(conn, ids) == {state: len(ids)}


def handlers_started(w: WorkerProcess, ids: list[int]) -> Callable[[], bool]:
    """Every job's handler runs. A job shown `running` may not be yet: a stop that arrives between its
    claim's commit and the worker reading the answer gives it back unrun."""
    return lambda: all(f"handler started job={job_id} " in w.log for job_id in ids)


def ledger_rows(conn: Conn, ids: list[int]) -> list[tuple[int, int]]:
    rows = conn.execute(
        "select job_id, lease_epoch from public.worker_ledger where job_id = any(%s) order by job_id", (ids,)
    ).fetchall()
    return [(int(str(j)), int(str(e))) for j, e in rows]


def assert_exactly_once(conn: Conn, ids: list[int]) -> None:
    """Every job completed, and its ledger row is the one its completing attempt wrote."""
    assert states(conn, ids) == {"completed": len(ids)}
    rows = ledger_rows(conn, ids)
    assert [j for j, _ in rows] == sorted(ids), "a job has no ledger row, or more than one"
    epochs = dict(
        conn.execute("select job_id, lease_epoch from jobctl.job where job_id = any(%s)", (ids,)).fetchall()
    )
    assert all(epochs[j] == e for j, e in rows), "a ledger row comes from an attempt that did not complete"


def worker_args(queue: str, handler: str = "handle", *more: str) -> list[str]:
    return ["--handler", f"worker_handlers:{handler}", "--queue", queue, "--poll-interval", "0.2", *more]


def history(conn: Conn, job_id: int) -> list[tuple[Any, ...]]:
    return conn.execute("select event, attempt, detail from jobctl.job_history(%s)", (job_id,)).fetchall()


def attempt_of(conn: Conn, job_id: int) -> int:
    row = conn.execute("select attempt from jobctl.job where job_id = %s", (job_id,)).fetchone()
    assert row is not None
    return int(str(row[0]))


def expire_lease(conn: Conn, job_id: int) -> None:
    """Revoke a running job's lease behind its worker's back: expired, then reaped."""
    conn.execute(
        "update jobctl._running set lease_expires_at = clock_timestamp() - interval '1 second'"
        " where job_id = %s",
        (job_id,),
    )
    reap(conn)


def reap(conn: Conn) -> bool:
    """What pg_cron (and any worker's claim) does: revoke expired leases. True, for use in wait_for."""
    conn.execute("select jobctl.reap_expired_leases()")
    return True


def lock_job_row(dsn: str, job_id: int) -> psycopg.Connection[tuple[object, ...]]:
    """A connection in a transaction holding the job's row lock: claim_job and complete_jobs wait for it
    (heartbeats and the reaper do not touch that row). Leave its `with` block to release it."""
    locker: psycopg.Connection[tuple[object, ...]] = psycopg.connect(dsn)
    locker.execute("select from jobctl.job where job_id = %s for update", (job_id,))
    return locker


def blocked_by(conn: Conn, locker: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(
        "select count(*) from pg_stat_activity where %s = any(pg_blocking_pids(pid))",
        (locker.info.backend_pid,),
    ).fetchone()
    return row is not None and int(str(row[0])) > 0


# --- 1. plain run


@pytest.mark.parametrize("handler", ["handle", "handle_sync"])
def test_plain_run_completes_every_job_exactly_once(
    conn: Conn, name: str, spawn: Any, ledger: None, handler: str
) -> None:
    queue = name + "_q"
    ids = submit(conn, name, queue, [{"sleep": 0.01, "i": i} for i in range(200)])
    w = spawn(*worker_args(queue, handler, "--concurrency", "8"))
    wait_for(all_in(conn, ids, "completed"), 60, "200 jobs to complete")
    assert w.stop() == 0
    assert_exactly_once(conn, ids)
    summary = w.summary()
    assert (summary["claimed"], summary["completed"], summary["fenced"]) == ("200", "200", "0")
    assert w.stdout == "", "the worker prints nothing on stdout"
    results = conn.execute("select distinct result from jobctl.job where job_id = %s", (ids[0],)).fetchall()
    assert results == [({"job": ids[0]},)]


def test_results_failures_and_permanent_errors(conn: Conn, name: str, spawn: Any, ledger: None) -> None:
    queue = name + "_q"
    ok, flaky, doomed = submit(
        conn,
        name,
        queue,
        [
            {"ledger": False, "result": {"answer": 42}},
            {"fail_times": 1},
            {"fail_times": 9, "permanent": True},
        ],
        backoff=QUICK_RETRY,
    )
    w = spawn(*worker_args(queue, "handle", "--log-format", "json"))
    wait_for(
        lambda: states(conn, [ok, flaky]) == {"completed": 2} and states(conn, [doomed]) == {"dead": 1},
        20,
        "outcomes",
    )
    assert w.stop() == 0
    assert conn.execute("select result from jobctl.job where job_id = %s", (ok,)).fetchone() == (
        {"answer": 42},
    )
    assert conn.execute("select attempt from jobctl.job where job_id = %s", (flaky,)).fetchone() == (2,)
    assert ("failed", 1, "RuntimeError: failure on attempt 1") in history(conn, flaky)
    assert conn.execute(
        "select attempt, last_error from jobctl.job where job_id = %s", (doomed,)
    ).fetchone() == (
        1,
        "PermanentError: permanent failure on attempt 1",
    )
    lines = [json.loads(line) for line in w.log.splitlines()]
    final = [r for r in lines if r["msg"] == "worker stopped"][-1]
    assert (final["completed"], final["failed"], final["dead"]) == (2, 1, 1)


def test_a_job_whose_hint_was_skipped_starts_within_the_hint_window(
    conn: Conn, dsn: str, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    # a 30 s poll: only a wake-up, or the looks a hint is followed by, can start a job quickly
    w = spawn(*worker_args(queue, "handle", "--poll-interval", "30"))
    wait_for(lambda: conn.execute(LISTENERS).fetchone() == (1,), 10, "the worker to listen")
    with psycopg.connect(dsn, autocommit=True) as listener, another_hint_in_flight(dsn, name):
        listener.execute("listen jobctl")
        window_start()
        [first] = submit(conn, name, queue, [{}])
        wait_for(all_in(conn, [first], "completed"), 0.3, "the hinted job", every=0.01)
        time.sleep(0.1)  # past the worker's second look (10 ms after the claim that found work)
        [second] = submit(conn, name, queue, [{}])  # the same session and window: no hint of its own
        took = wait_for(all_in(conn, [second], "completed"), 5, "the second job", every=0.01)
        row = conn.execute("select (jobctl.hint_tags(array[%s]))[1]", (queue,)).fetchone()
        assert row is not None
        assert sum(1 for n in listener.notifies(timeout=0.5) if n.payload == row[0]) == 1
    assert took < 0.5, "found by the looks that follow a hint, not by the 30 s poll"
    assert w.stop() == 0
    assert_exactly_once(conn, [first, second])


def test_the_worker_looks_again_for_the_hint_window_the_database_gives(
    conn: Conn, dsn: str, name: str, spawn: Any, ledger: None
) -> None:
    """The window after a hint is the database's (jobctl.hint_window, asked as the listener connects),
    not a constant of the worker's: with jobctl._hint_window at 2 s, a job submitted 1 s after the
    hint in the same window (its hint skipped) still starts at once; a worker looking for its own
    0.5 s would leave it to the 30 s poll."""
    row = conn.execute("select pg_get_functiondef('jobctl._hint_window()'::regprocedure)").fetchone()
    assert row is not None
    conn.execute(
        "create or replace function jobctl._hint_window() returns float8 language sql immutable parallel safe"
        " as $$ select 2.0::float8 $$"
    )
    try:
        queue = name + "_q"
        w = spawn(*worker_args(queue, "handle", "--poll-interval", "30"))
        wait_for(lambda: conn.execute(LISTENERS).fetchone() == (1,), 10, "the worker to listen")
        with another_hint_in_flight(dsn, name):
            time.sleep(2 - time.time() % 2 + 0.01)  # just after the start of a 2-second window
            [first] = submit(conn, name, queue, [{}])
            wait_for(all_in(conn, [first], "completed"), 0.3, "the hinted job", every=0.01)
            time.sleep(1.0)  # past the half-second a worker of its own window would look for
            [second] = submit(conn, name, queue, [{}])  # the same session and window: no hint of its own
            took = wait_for(all_in(conn, [second], "completed"), 5, "the second job", every=0.01)
        assert took < 0.5, "found by the looks that follow a hint, for the database's window"
        assert w.stop() == 0
    finally:
        conn.execute(row[0])


# --- 2. graceful shutdown


def test_sigterm_with_short_grace_gives_running_jobs_back(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    ids = submit(conn, name, queue, [{"sleep": 3, "sleep_attempt": 1} for _ in range(4)])
    w = spawn(*worker_args(queue, "handle", "--concurrency", "4", "--grace", "0.5"))
    wait_for(handlers_started(w, ids), 10, "4 running jobs")
    t0 = time.monotonic()
    assert w.stop() == 0
    assert time.monotonic() - t0 < 2.5, "exits promptly after the grace period"
    assert w.summary()["released"] == "4"
    assert states(conn, ids) == {"pending": 4}
    assert ledger_rows(conn, ids) == []
    for job_id in ids:
        assert conn.execute("select attempt from jobctl.job where job_id = %s", (job_id,)).fetchone() == (0,)
        assert "released" in [e for e, _, _ in history(conn, job_id)]
    second = spawn(*worker_args(queue, "handle", "--concurrency", "4"))
    wait_for(all_in(conn, ids, "completed"), 20, "the second worker to complete them")
    assert second.stop() == 0
    assert_exactly_once(conn, ids)
    attempts = conn.execute(
        "select distinct attempt from jobctl.job where job_id = any(%s)", (ids,)
    ).fetchall()
    assert attempts == [(1,)], "the released attempt did not count"


def test_sigterm_with_long_grace_lets_running_jobs_finish(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    ids = submit(conn, name, queue, [{"sleep": 1.5} for _ in range(3)])
    w = spawn(*worker_args(queue, "handle_sync", "--concurrency", "3", "--grace", "30"))
    wait_for(handlers_started(w, ids), 10, "3 running jobs")
    w.signal()
    assert w.wait(15) == 0
    assert_exactly_once(conn, ids)
    summary = w.summary()
    assert (summary["completed"], summary["released"]) == ("3", "0")


def test_second_signal_skips_the_grace_period(conn: Conn, name: str, spawn: Any, ledger: None) -> None:
    queue = name + "_q"
    ids = submit(conn, name, queue, [{"sleep": 20} for _ in range(2)])
    w = spawn(*worker_args(queue, "handle_sync", "--concurrency", "2", "--grace", "60"))
    wait_for(handlers_started(w, ids), 10, "2 running jobs")
    w.signal()
    time.sleep(0.5)
    assert w.proc.poll() is None, "the first signal waits for the running jobs"
    w.signal()
    assert w.wait(5) == 0
    assert states(conn, ids) == {"pending": 2}
    assert w.summary()["released"] == "2"
    assert ledger_rows(conn, ids) == [], "the cancelled sync handlers wrote nothing"


def test_a_sync_handler_that_ignores_the_stop_does_not_hold_up_the_exit(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    ids = submit(conn, name, queue, [{"sleep": 20}])
    w = spawn(*worker_args(queue, "handle_sync_stubborn", "--grace", "0.3"))
    wait_for(handlers_started(w, ids), 10, "the job to run")
    assert w.stop(5) == 0
    assert states(conn, ids) == {"pending": 1}
    assert "sync handlers still running after shutdown" in w.log
    assert w.summary()["released"] == "1"


# --- 3. timeout


@pytest.mark.parametrize("handler", ["handle", "handle_sync"])
def test_a_job_past_its_timeout_fails_and_runs_again(
    conn: Conn, name: str, spawn: Any, ledger: None, handler: str
) -> None:
    queue = name + "_q"
    [job_id] = submit(conn, name, queue, [{"sleep": 30, "sleep_attempt": 1}], timeout=1, backoff=QUICK_RETRY)
    w = spawn(*worker_args(queue, handler))
    wait_for(all_in(conn, [job_id], "completed"), 15, "the job to complete on its second attempt")
    assert w.stop() == 0
    assert_exactly_once(conn, [job_id])
    assert conn.execute("select attempt from jobctl.job where job_id = %s", (job_id,)).fetchone() == (2,)
    failures = [d for e, a, d in history(conn, job_id) if e == "failed"]
    # one message, fail_job's and the reaper's alike (jobctl._failure), whichever stopped it first
    assert failures == ["timed out: ran past its timeout"], history(conn, job_id)


# --- 4. cancel while running


@pytest.mark.parametrize("handler", ["handle", "handle_sync"])
def test_cancel_while_running_stops_the_handler(
    conn: Conn, name: str, spawn: Any, ledger: None, handler: str
) -> None:
    queue = name + "_q"
    [doomed] = submit(conn, name, queue, [{"sleep": 30}])
    # one slot: the next job runs only once the cancelled handler has let go of it
    w = spawn(*worker_args(queue, handler, "--concurrency", "1", "--lease", "3"))
    wait_for(all_in(conn, [doomed], "running"), 10, "the job to run")
    assert conn.execute("select jobctl.cancel_job(%s)", (doomed,)).fetchone() == ("cancelled",)
    wait_for(lambda: "job cancelled while running" in w.log, 5, "the heartbeat to see the cancel")
    [nxt] = submit(conn, name, queue, [{}])
    wait_for(all_in(conn, [nxt], "completed"), 10, "the worker to go on with the next job")
    assert w.stop() == 0
    assert states(conn, [doomed]) == {"cancelled": 1}
    assert ledger_rows(conn, [doomed]) == []
    assert_exactly_once(conn, [nxt])
    summary = w.summary()
    assert (summary["cancelled"], summary["completed"], summary["failed"]) == ("1", "1", "0")


# --- 5. terminated connections


def terminate_worker_backends(conn: Conn) -> int:
    row = conn.execute(
        "select count(pg_terminate_backend(pid)) from pg_stat_activity"
        " where application_name = 'jobctl-worker'"
    ).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_terminated_connections_are_survived(conn: Conn, name: str, spawn: Any, ledger: None) -> None:
    queue = name + "_q"
    # the handlers hold their transactions open for a while: terminations hit some of them mid-way
    ids = submit(
        conn,
        name,
        queue,
        [{"sleep": 0.02, "tx_sleep": 0.05} for _ in range(300)],
        backoff=QUICK_RETRY,
        max_attempts=20,
    )
    w = spawn(*worker_args(queue, "handle", "--concurrency", "8", "--lease", "5"))
    for round_ in (1, 2):
        wait_for(lambda r=round_: states(conn, ids).get("completed", 0) >= 60 * r, 30, "progress")
        assert terminate_worker_backends(conn) >= 2
    wait_for(all_in(conn, ids, "completed"), 60, "all jobs to complete")
    assert w.proc.poll() is None, "the worker is still running"
    assert w.stop() == 0
    assert_exactly_once(conn, ids)
    assert "database call failed; retrying" in w.log or "listener lost its connection" in w.log


# --- 6. server restart


def test_a_server_restart_is_survived(dsn: str, name: str, spawn: Any) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(LEDGER_DDL)
        ids = submit(
            c, name, name + "_q", [{"sleep": 0.05} for _ in range(300)], backoff=QUICK_RETRY, max_attempts=20
        )
        w = spawn(*worker_args(name + "_q", "handle", "--concurrency", "8", "--lease", "10"))
        wait_for(lambda: states(c, ids).get("completed", 0) >= 50, 30, "progress")
    subprocess.run([str(ROOT / "bin" / "db"), "stop"], cwd=ROOT, check=True, timeout=60, capture_output=True)
    time.sleep(1)
    start = subprocess.run(
        [str(ROOT / "bin" / "db"), "start"], cwd=ROOT, timeout=120, capture_output=True, text=True
    )
    status = subprocess.run([str(ROOT / "bin" / "db"), "status"], cwd=ROOT, timeout=30, capture_output=True)
    assert status.returncode == 0, f"the cluster did not come back: {start.stderr}"
    with psycopg.connect(dsn, autocommit=True) as c:
        wait_for(all_in(c, ids, "completed"), 60, "all jobs to complete after the restart")
        # on a quiet machine the jobs may all be done before the listener's reconnect (its backoff)
        wait_for(lambda: "listener reconnected" in w.log, 30, "the listener to reconnect")
        assert w.proc.poll() is None, "the worker is still running"
        assert w.stop() == 0
        assert_exactly_once(c, ids)


# --- 7. a fenced zombie


@pytest.mark.parametrize("handler", ["handle", "handle_sync_stubborn"])
def test_a_zombies_writes_are_rolled_back(
    conn: Conn, name: str, spawn: Any, ledger: None, handler: str
) -> None:
    queue = name + "_q"
    [job_id] = submit(conn, name, queue, [{"sleep": 4, "sleep_attempt": 1}])
    # a long lease: no heartbeat in this test's time, so the zombie does not learn it lost the job
    zombie = spawn(*worker_args(queue, handler, "--concurrency", "1", "--lease", "60"))
    wait_for(all_in(conn, [job_id], "running"), 10, "the zombie to claim the job")
    expire_lease(conn, job_id)
    wait_for(
        lambda: reap(conn) and states(conn, [job_id]) == {"failed": 1}, 5, "the reaper to take the lease back"
    )
    healthy = spawn(*worker_args(queue, handler, "--concurrency", "1", "--lease", "60"))
    wait_for(all_in(conn, [job_id], "completed"), 10, "the healthy worker to complete it")
    wait_for(lambda: "job fenced" in zombie.log, 10, "the zombie to wake up and be fenced")
    assert zombie.stop() == 0 and healthy.stop() == 0
    assert_exactly_once(conn, [job_id])
    assert conn.execute("select attempt from jobctl.job where job_id = %s", (job_id,)).fetchone() == (2,)
    assert zombie.summary()["fenced"] == "1" and zombie.summary()["completed"] == "0"


# --- 8. the same worker claims a job again


def test_a_job_claimed_again_by_the_same_worker_keeps_its_new_slot(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    # attempt 1 sleeps 1 s (ignoring any stop), attempt 2 sleeps 3 s: longer than the 2 s lease
    [job_id] = submit(conn, name, queue, [{"sleeps": [1, 3]}])
    w = spawn(*worker_args(queue, "handle_sync_stubborn", "--concurrency", "2", "--lease", "2"))
    wait_for(all_in(conn, [job_id], "running"), 10, "the first attempt to run", every=0.02)
    # revoked before the worker's first heartbeat (lease/3 after it started), so it does not hear; the
    # reaper's NOTIFY has it claim the job again at once, into its spare slot
    expire_lease(conn, job_id)
    wait_for(lambda: attempt_of(conn, job_id) == 2, 5, "the same worker to claim the job again", every=0.02)
    # the reaper keeps running (pg_cron, other workers' claims): a lease nobody extends is revoked
    wait_for(lambda: reap(conn) and states(conn, [job_id]) == {"completed": 1}, 15, "the job to complete")
    assert w.stop() == 0
    assert_exactly_once(conn, [job_id])
    assert attempt_of(conn, job_id) == 2, history(conn, job_id)
    summary = w.summary()
    assert (summary["claimed"], summary["completed"], summary["fenced"]) == ("2", "1", "1"), summary


# --- 9. errors a retry cannot cure


def test_only_errors_a_retry_can_cure_are_retried() -> None:
    lookup = psycopg.errors.lookup
    assert retryable(psycopg.OperationalError("server closed the connection unexpectedly"))
    assert retryable(PoolTimeout("couldn't get a connection after 10.00 sec"))
    for code in ["08000", "08006", "57P01", "57P02", "57P03", "40001", "40P01"]:
        assert retryable(lookup(code)("x")), code
    for code in ["57014", "53100", "53200", "54000", "40002", "55P03", "22P02", "42883", "JC001"]:
        cls = lookup(code) if code != "JC001" else psycopg.errors.RaiseException
        assert not retryable(cls("x")), code
    assert not retryable(psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"))
    assert not retryable(ValueError("x"))


def test_a_claim_error_a_retry_cannot_cure_is_not_retried_in_a_loop(
    dsn: str, conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    [job_id] = submit(conn, name, queue, [{}])
    with lock_job_row(dsn, job_id):
        # claim_job waits for the locked row until the worker's statement_timeout cancels it (57014)
        w = spawn(*worker_args(queue), dsn_=dsn + " options='-c statement_timeout=300'")
        wait_for(lambda: "claim failed" in w.log, 10, "the claim to fail")
    wait_for(all_in(conn, [job_id], "completed"), 15, "the job to complete once the lock is gone")
    assert w.stop() == 0
    assert_exactly_once(conn, [job_id])
    assert "canceling statement due to statement timeout" in w.log
    assert "database call failed; retrying" not in w.log


# --- 10. errors while reporting; a crashed worker


def test_an_error_while_reporting_fails_the_job_for_good(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    nested, broken, fine = submit(
        conn, name, queue, [{"ledger": False, "nest": 100_000}, {"ledger": False, "broken_mapping": True}, {}]
    )
    bad_str, nul = submit(conn, name, queue, [{"bad_str": True}, {"nul_error": True}], max_attempts=1)
    w = spawn(*worker_args(queue))
    wait_for(
        lambda: (
            states(conn, [nested, broken, bad_str, nul]) == {"dead": 4}
            and states(conn, [fine]) == {"completed": 1}
        ),
        10,
        "the outcomes",
    )
    assert w.proc.poll() is None, "the worker is still running"
    assert w.stop() == 0
    rows = conn.execute(
        "select job_id, attempt, last_error from jobctl.job where job_id = any(%s)",
        ([nested, broken, bad_str, nul],),
    ).fetchall()
    errors = {job_id: (attempt, error) for job_id, attempt, error in rows}
    assert errors[nested] == (1, "result is not JSON-serialisable: it is nested too deeply")
    # an error nobody foresaw in the worker's report: logged with its traceback, the job failed for good
    assert errors[broken] == (1, "worker error: RuntimeError: broken items")
    assert "job supervisor failed; failing the job for good" in w.log and "Traceback" in w.log
    # a handler's exception whose str() fails is still reported as the handler's failure
    assert errors[bad_str] == (1, "BadStr: <str() failed: AttributeError>")
    assert errors[nul] == (1, "RuntimeError: a NUL \\0 here"), "text cannot hold NUL: it is spelled out"
    assert_exactly_once(conn, [fine])


def test_a_handler_s_traceback_is_kept_with_its_failure_and_bounded(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    """A handler's exception leaves its traceback on the job (fail_job's traceback,
    get_job's last_traceback), innermost frame last; a long one keeps its last 8,192 characters."""
    queue = name + "_q"
    long_message = "m" * 20_000 + " the message's end"
    payloads = [{"raise_deep": "<b>short</b>"}, {"raise_deep": long_message}, {"nul_error": True}]
    short, long, nul = submit(conn, name, queue, payloads, max_attempts=1)
    [sync] = submit(conn, name, queue + "_sync", [{"raise_deep": "from a thread"}], max_attempts=1)
    w = spawn(*worker_args(queue))
    ws = spawn(*worker_args(queue + "_sync", "handle_sync"))
    wait_for(all_in(conn, [short, long, nul, sync], "dead"), 15, "the jobs to die")
    assert w.stop() == 0 and ws.stop() == 0

    def trace_of(job_id: int) -> str:
        row = conn.execute("select last_traceback from jobctl.get_job(%s)", (job_id,)).fetchone()
        assert row is not None and row[0] is not None
        return str(row[0])

    text = trace_of(short)
    assert text.startswith("Traceback (most recent call last):\n")
    assert "KeyError: 'missing'\n\nDuring handling of the above exception" in text
    assert text.index("in _middle_frame") < text.index("in _innermost_frame_of_the_test")
    assert text.endswith(
        "in _innermost_frame_of_the_test\n    raise ValueError(message)\nValueError: <b>short</b>\n"
    )
    assert "in _innermost_frame_of_the_test" in trace_of(sync)  # a sync handler's (a thread's) too
    cut = trace_of(long)
    assert len(cut) == 8192 and cut.startswith("...m") and cut.endswith("m the message's end\n")
    assert trace_of(nul).endswith("RuntimeError: a NUL \\0 here\n"), "text cannot hold NUL: it is spelled out"


def test_a_crashed_worker_with_a_stuck_thread_exits_at_once(
    conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    [job_id] = submit(conn, name, queue, [{"sleep": 30}])
    w = spawn(*worker_args(queue, "handle_sync_crash", "--grace", "0.3"))
    assert w.wait(8) == 1, "exit status 1, without waiting for the stuck thread"
    assert "worker task died" in w.log
    assert "sync handlers still running after shutdown" in w.log
    assert states(conn, [job_id]) == {"pending": 1}, "the job was given back"


# --- 11. completions waiting to be sent


def test_finished_jobs_waiting_to_be_completed_keep_their_leases(
    dsn: str, conn: Conn, name: str, spawn: Any
) -> None:
    queue = name + "_q"
    first, second = submit(
        conn,
        name,
        queue,
        [{"ledger": False, "sleep": 0.5, "result": 1}, {"ledger": False, "sleep": 1, "result": 2}],
    )
    w = spawn(*worker_args(queue, "handle", "--concurrency", "2", "--lease", "1.5"))
    wait_for(all_in(conn, [first, second], "running"), 10, "both jobs to run", every=0.02)
    with lock_job_row(dsn, first):
        # the first job's complete_jobs waits for the lock; the second job finishes and waits for the
        # flusher past its lease, while the reaper runs
        assert states(conn, [first]) == {"running": 1}, "locked before the first job finished"
        end = time.monotonic() + 3
        while time.monotonic() < end:
            reap(conn)
            time.sleep(0.1)
        assert states(conn, [second]) == {"running": 1}
    wait_for(all_in(conn, [first, second], "completed"), 10, "both jobs to complete")
    assert w.stop() == 0
    assert (attempt_of(conn, first), attempt_of(conn, second)) == (1, 1)
    summary = w.summary()
    assert (summary["claimed"], summary["completed"], summary["fenced"]) == ("2", "2", "0"), summary


# --- 12. a stop during a claim


def test_a_stop_while_the_claim_waits_for_the_database_exits_promptly(tmp_path: Path, spawn: Any) -> None:
    # nothing listens there: every connection attempt fails, and the claim waits for a connection
    w = spawn(*worker_args("q"), dsn_=f"host={tmp_path} port=1 dbname=jobctl user=postgres")
    wait_for(lambda: "listener lost its connection" in w.log, 10, "the worker to try the database")
    t0 = time.monotonic()
    assert w.stop() == 0
    assert time.monotonic() - t0 < 3, "the claim's wait for a connection was dropped"


def test_jobs_claimed_as_the_stop_arrives_are_given_back(
    dsn: str, conn: Conn, name: str, spawn: Any, ledger: None
) -> None:
    queue = name + "_q"
    [job_id] = submit(conn, name, queue, [{}])
    with lock_job_row(dsn, job_id) as locker:
        w = spawn(*worker_args(queue))
        wait_for(lambda: blocked_by(conn, locker), 10, "the claim to wait for the lock")
        w.signal()
        time.sleep(0.3)
    assert w.wait(5) == 0
    summary = w.summary()
    assert (summary["claimed"], summary["released"], summary["completed"]) == ("1", "1", "0"), summary
    assert states(conn, [job_id]) == {"pending": 1}
    assert attempt_of(conn, job_id) == 0
    assert ledger_rows(conn, [job_id]) == []


def test_a_bad_handler_is_one_line_error(dsn: str) -> None:
    cmd = [sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()"]
    env = {**os.environ, "JOBCTL_DSN": dsn}
    for spec, message in [
        ("no_such_module:f", "cannot import no_such_module"),
        ("worker_handlers", "module:function"),
    ]:
        r = subprocess.run(
            [*cmd, "--handler", spec], cwd=TESTS, env=env, capture_output=True, text=True, timeout=30
        )
        assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_worker_opens_sealed_payloads_with_its_keys(
    conn: Conn, name: str, spawn: Any, ledger: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant that encrypts its payloads: the submitter's key seals them, the worker's (from
    JOBCTL_PAYLOAD_KEYS) opens them for the handler; the stored payload is ciphertext."""
    queue = name + "_q"
    key = "k-" + name
    with conn.transaction():
        conn.execute("select set_config('jobctl.payload_keys', %s, true)", (json.dumps({name: key}),))
        conn.execute("select jobctl.put_tenant(%s, encrypt_payloads => true)", (name,))
        ids = submit(conn, name, queue, [{"result": {"secret": f"s{i}"}} for i in range(20)])
    stored = conn.execute("select payload::text from jobctl.job where job_id = any(%s)", (ids,)).fetchall()
    assert all('"$jobctl_sealed"' in p and "secret" not in p for (p,) in stored)
    monkeypatch.setenv("JOBCTL_PAYLOAD_KEYS", json.dumps({name: key}))
    w = spawn(*worker_args(queue))
    wait_for(all_in(conn, ids, "completed"), 60, "20 sealed jobs to complete")
    assert w.stop() == 0
    results = conn.execute(
        "select result from jobctl.job where job_id = any(%s) order by job_id", (ids,)
    ).fetchall()
    assert [r for (r,) in results] == [{"secret": f"s{i}"} for i in range(20)]
