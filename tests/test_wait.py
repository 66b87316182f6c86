"""Waiting for a job's result: `Client.wait` / `AsyncClient.wait` while a real worker
process runs the job. The wait is woken by the completion hint (jobctl.watch_job, jobctl._notify_watchers)
well before its poll would have found the job, also when the job dies or is cancelled; with its
listener's backend terminated it still returns, by polling; it times out with the job as it is."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result
from jobctl import errors, waiting
from jobctl.cli import main
from jobctl.client import AsyncClient, Client, JobInfo
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from test_worker import LISTENERS, WorkerProcess, spawn, submit, wait_for, worker_args

__all__ = ["spawn"]  # the fixture, used by name

Conn = psycopg.Connection[tuple[object, ...]]
WAIT_BACKENDS = "select pid from pg_stat_activity where application_name = 'jobctl-wait'"


def lag(job: JobInfo, returned_at: float) -> float:
    """Seconds from the job's finish (database clock: the same machine's) to the wait's return."""
    assert job.finished_at is not None
    return returned_at - job.finished_at.timestamp()


def next_poll_after(started: float, at: float) -> float:
    """When a wait that started at `started` looks next after `at`, by its poll schedule alone."""
    t = started
    for pause in waiting.polls():
        t += pause
        if t >= at:
            return t
    raise AssertionError("unreachable")


def timed_wait(client: Client, job_id: int, **kw: Any) -> tuple[JobInfo, float, float]:
    """The job, the wall-clock time the wait started and when it returned."""
    started = time.time()
    job = client.wait(job_id, 30, **kw)
    return job, started, time.time()


def in_thread(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Run fn in a thread; the returned function joins it and gives fn's result (or raises its error)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:  # handed to the caller
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()

    def join() -> Any:
        t.join(60)
        assert not t.is_alive(), "the wait did not return"
        if "error" in out:
            raise out["error"]
        return out["value"]

    return join


def test_a_wait_is_woken_by_the_completion_of_a_real_worker_long_before_its_poll(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess]
) -> None:
    queue = f"{name}_q"
    worker = spawn(*worker_args(queue))
    wait_for(lambda: conn.execute(LISTENERS).fetchone() != (0,), 20, "the worker to listen")
    client = Client()
    # the handler sleeps 1.65 s: the job finishes about 0.1-0.2 s after the wait's look at 1.55 s,
    # so a wait that only polls finds it at its next look, 2.55 s, most of a second late
    payload = {"sleep": 1.65, "ledger": False, "result": {"answer": 42}}
    try:
        [hinted_id] = submit(conn, name, queue, [payload])
        hinted, started, returned = timed_wait(client, hinted_id)
        [polled_id] = submit(conn, name, queue, [payload])
        polled, _, polled_returned = timed_wait(client, polled_id, hint=False)
    finally:
        client.close()
        worker.stop()
    assert hinted.state == "completed" and hinted.result == {"answer": 42}
    assert polled.state == "completed"
    assert hinted.finished_at is not None
    woken = lag(hinted, returned)
    by_poll = next_poll_after(started, hinted.finished_at.timestamp()) - hinted.finished_at.timestamp()
    assert woken < 0.15, f"the hinted wait returned {woken:.3f} s after the finish"
    assert by_poll > woken + 0.2, f"the finish fell {by_poll:.3f} s before a look: a poll could find it"
    assert lag(polled, polled_returned) > woken + 0.2, (woken, lag(polled, polled_returned))
    # the hint removed the watcher; a wait with hint=False registers none
    left = "select count(*) from jobctl._watcher where job_id = any(%s)"
    assert conn.execute(left, ([hinted_id, polled_id],)).fetchone() == (0,)


def test_a_wait_whose_listener_is_killed_returns_by_polling(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess]
) -> None:
    queue = f"{name}_q"
    [job_id] = submit(conn, name, queue, [{"sleep": 2.5, "ledger": False}])
    client = Client()
    try:
        done = in_thread(lambda: timed_wait(client, job_id))
        wait_for(lambda: conn.execute(WAIT_BACKENDS).fetchone() is not None, 10, "the wait's listener")
        killed = conn.execute(f"select pg_terminate_backend(pid) from ({WAIT_BACKENDS}) as w").fetchall()
        assert killed == [(True,)]
        worker = spawn(*worker_args(queue))
        job, _, returned = done()
        worker.stop()
    finally:
        client.close()
    assert job.state == "completed"
    assert lag(job, returned) < 1.3, "polling (at most 1 s apart) found it"
    assert conn.execute(WAIT_BACKENDS).fetchone() is None, "the broken listener is closed"


def test_a_job_that_dies_or_is_cancelled_wakes_its_watchers(
    conn: Conn, name: str, spawn: Callable[..., WorkerProcess]
) -> None:
    queue = f"{name}_q"
    [dies, cancelled] = submit(
        conn,
        name,
        queue,
        [{"sleep": 1.6, "fail_times": 1, "permanent": True, "ledger": False}, {"sleep": 60, "ledger": False}],
    )
    worker = spawn(*worker_args(queue, "handle", "--concurrency", "2"))
    client = Client()

    async def wait_async() -> tuple[JobInfo, float]:
        async with AsyncClient() as aclient:
            job = await aclient.wait(cancelled, 30)
            return job, time.time()

    try:
        died = in_thread(lambda: timed_wait(client, dies))
        was_cancelled = in_thread(lambda: asyncio.run(wait_async()))
        wait_for(lambda: len(conn.execute(WAIT_BACKENDS).fetchall()) == 2, 10, "both waits' listeners")
        wait_for(
            lambda: (
                conn.execute("select state from jobctl.job where job_id = %s", (cancelled,)).fetchone()
                == ("running",)
            ),
            10,
            "the second job to run",
        )
        time.sleep(1.6)  # the waits now poll about a second apart
        assert conn.execute("select jobctl.cancel_job(%s)", (cancelled,)).fetchone() == ("cancelled",)
        dead, _, dead_returned = died()
        gone, gone_returned = was_cancelled()
    finally:
        client.close()
        worker.stop()
    assert dead.state == "dead" and "permanent failure" in str(dead.last_error)
    assert gone.state == "cancelled"
    assert lag(dead, dead_returned) < 0.15
    assert lag(gone, gone_returned) < 0.15


def test_a_wait_times_out_with_the_job_as_it_is(conn: Conn, name: str) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    [job_id] = submit(conn, name, f"{name}_q", [{}], run_at=later)
    with Client() as client:
        start = time.monotonic()
        with pytest.raises(errors.WaitTimeout) as caught:
            client.wait(job_id, 0.4)
        took = time.monotonic() - start
        assert isinstance(caught.value, TimeoutError)
        assert caught.value.job.state == "pending" and caught.value.job.job_id == job_id
        assert 0.4 <= took < 1.0
        with pytest.raises(errors.NotFound):
            client.wait(2**62, 5)  # unknown: at once
        with pytest.raises(errors.InvalidInput) as bad:
            client.wait(job_id, 0)
        assert bad.value.field == "timeout"
    row = conn.execute("select count(*) from jobctl._watcher where job_id = %s", (job_id,)).fetchone()
    assert row == (1,), "the watcher stays until it expires (the tick prunes it)"


def test_poll_schedule_backs_off_from_50_ms_to_1_s() -> None:
    assert list(itertools.islice(waiting.polls(), 7)) == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_cli_wait_exit_statuses(conn: Conn, name: str) -> None:
    """`jobctl wait ID --timeout S`: 4 still unfinished (shown as it is), 3 cancelled, 0 completed, 1
    unknown (docs/cli.md)."""
    runner = CliRunner()

    def cli(*args: str) -> Result:
        return runner.invoke(main, ["wait", *args], env={"JOBCTL_DSN": conn.info.dsn}, prog_name="jobctl")

    [pending, cancelled] = submit(conn, name, f"{name}_q", [{}, {}])
    r = cli(str(pending), "--timeout", "0.2")
    assert r.exit_code == 4 and "pending" in r.stdout, r.output
    conn.execute("select jobctl.cancel_job(%s)", (cancelled,))
    r = cli(str(cancelled), "--json")
    assert r.exit_code == 3 and '"state": "cancelled"' in r.stdout, r.output
    row = conn.execute(
        "select job_id, lease_epoch from jobctl.claim_job('w', array[%s])", (f"{name}_q",)
    ).fetchone()
    assert row is not None and row[0] == pending
    conn.execute("select jobctl.complete_job(%s, %s)", row)
    r = cli(str(pending))
    assert r.exit_code == 0 and "completed" in r.stdout, r.output
    r = cli("999999999999")
    assert r.exit_code == 1 and "not found" in r.output


def test_concurrent_watch_job_calls_never_exceed_a_jobs_100_watchers(conn: Conn, dsn: str, name: str) -> None:
    """watch_job's bound of 100 watchers a job holds when many sessions call it at once (a probe raced it
    to 113): the count and the insert are serialised per job by a row lock only the owner can take. Each
    round fills a job to 95 watchers, then 12 sessions (threads, each on its own connection) call
    watch_job at the same instant, 3 times each; before the lock the counts raced past 100."""
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    sessions, calls, rounds = 12, 3, 8
    jobs = submit(conn, name, f"{name}_q", [{} for _ in range(rounds)], run_at=later)
    conns = [psycopg.connect(dsn, autocommit=True) for _ in range(sessions)]
    watch = "select job_id from jobctl.watch_job(%s, %s, '1 minute')"
    try:
        peak = 0
        for job_id in jobs:
            for _ in range(95):
                conn.execute(watch, (job_id, waiting.new_channel()))
            barrier = threading.Barrier(sessions)
            refused: list[int] = []

            def race(
                c: Conn,
                job_id: int = job_id,
                barrier: threading.Barrier = barrier,
                refused: list[int] = refused,
            ) -> None:
                barrier.wait()
                for _ in range(calls):
                    try:
                        c.execute(watch, (job_id, waiting.new_channel()))
                    except psycopg.Error as e:
                        assert e.sqlstate == "JC004", e
                        refused.append(1)

            threads = [threading.Thread(target=race, args=(c,)) for c in conns]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            row = conn.execute("select count(*) from jobctl._watcher where job_id = %s", (job_id,)).fetchone()
            assert row is not None
            count = int(str(row[0]))
            peak = max(peak, count)
            assert count + len(refused) == 95 + sessions * calls, "every call either registered or got JC004"
        print(f"\nwatch_job race: {rounds} rounds, {sessions} x {calls} calls at 95 watchers: peak {peak}")
        assert peak == 100, f"a job has {peak} watchers: the bound of 100 was raced past"
    finally:
        for c in conns:
            c.close()
        conn.execute("delete from jobctl._watcher where job_id = any(%s)", (jobs,))


def _connections_of(conn: Conn, role: str) -> int:
    row = conn.execute("select count(*) from pg_stat_activity where usename = %s", (role,)).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_a_clients_waits_share_one_listener(conn: Conn, dsn: str, name: str) -> None:
    """1,000 concurrent AsyncClient.wait calls of one client, and 40 Client.wait calls from threads of
    another, on jobs that then finish: every watcher gets its result, and neither client ever has more
    than 3 server connections (its own, the shared listener; before, a listener a wait
    opened 174 connections for 1,000 waits, and other logins' connections failed)."""
    role = f"{name}_c"
    conn.execute(f'create role "{role}" login in role jobctl_writer')
    conn.execute("select jobctl.grant_tenant(%s, %s)", (role, name))
    params = conninfo_to_dict(dsn)
    params["user"] = role
    role_dsn = make_conninfo(**params)
    async_jobs = submit(conn, name, f"{name}_q", [{"n": n} for n in range(1000)])
    sync_jobs = submit(conn, name, f"{name}_q", [{"n": n} for n in range(40)])
    peak = 0
    sampling = threading.Event()

    def sample() -> None:
        nonlocal peak
        with psycopg.connect(dsn, autocommit=True) as watcher:
            while not sampling.is_set():
                peak = max(peak, _connections_of(watcher, role))
                time.sleep(0.02)

    def finish_all() -> None:
        """Claim and complete every job of the test, once their waits are registered (or after 20 s)."""
        with psycopg.connect(dsn, autocommit=True) as c:
            wanted = len(async_jobs) + len(sync_jobs)
            left = "select count(*) from jobctl._watcher where job_id = any(%s)"
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                row = c.execute(left, (async_jobs + sync_jobs,)).fetchone()
                if row is not None and int(str(row[0])) >= wanted:
                    break
                time.sleep(0.05)
            print(f"\nregistered: {row} after {20 - (deadline - time.monotonic()):.1f} s")
            while True:
                claimed = c.execute(
                    "select job_id, lease_epoch from jobctl.claim_job('w', array[%s], 500)", (f"{name}_q",)
                ).fetchall()
                if not claimed:
                    return
                for job_id, epoch in claimed:
                    c.execute(
                        "select jobctl.complete_job(%s, %s, %s::jsonb)",
                        (job_id, epoch, f'{{"id": {job_id}}}'),
                    )

    async def wait_async() -> list[JobInfo]:
        async with AsyncClient(role_dsn) as aclient:
            return await asyncio.gather(*(aclient.wait(j, 60) for j in async_jobs))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with Client(role_dsn) as client:
            joins = [in_thread(lambda j=j: client.wait(j, 60)) for j in sync_jobs]
            async_done = in_thread(lambda: asyncio.run(wait_async()))
            finish = in_thread(finish_all)
            finish()
            got = async_done() + [join() for join in joins]
    finally:
        sampling.set()
        sampler.join()
        conn.execute("delete from jobctl._role_tenant where role_oid = %s::regrole", (role,))
        conn.execute(f'drop role "{role}"')
    print(f"\nwaits: {len(got)} returned; peak connections of the watchers' login: {peak}")
    assert [j.job_id for j in got] == async_jobs + sync_jobs
    assert all(j.state == "completed" and j.result == {"id": j.job_id} for j in got)
    assert peak <= 6, f"two clients held {peak} connections at once (at most 3 each)"
