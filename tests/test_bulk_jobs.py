"""jobctl.retry_jobs under concurrency, with real processes: two bulk retries over one filter while
a worker claims and completes what they retry."""

from __future__ import annotations

import collections
import json
import multiprocessing as mp
import os
import threading
import time

import psycopg

Conn = psycopg.Connection[tuple[object, ...]]


def _bulk_retrier(dsn: str, tenant: str, barrier: object, out: str) -> None:
    calls: list[list[object]] = []
    after = None
    with psycopg.connect(dsn, autocommit=True) as c:  # one short transaction a batch
        barrier.wait()  # type: ignore[attr-defined]
        while True:
            row = c.execute(
                "select acted, skipped, last_id, done from jobctl.retry_jobs(%s::jsonb, 100, %s)",
                (json.dumps({"tenant_id": tenant, "state": "dead"}), after),
            ).fetchone()
            assert row is not None
            calls.append(list(row))
            if row[3]:
                break
            after = row[2]
    with open(out, "w") as f:
        json.dump(calls, f)


def _claimer(dsn: str, queue: str, barrier: object, seconds: float) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rows = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job(%s, array[%s], 50)",
                (f"w{os.getpid()}", queue),
            ).fetchall()
            if rows:
                c.execute("select jobctl.complete_jobs(%s, %s)", ([r[0] for r in rows], [r[1] for r in rows]))
            else:
                time.sleep(0.01)


def test_two_bulk_retries_and_a_worker_retry_every_dead_job_exactly_once(
    conn: Conn, name: str, tmp_path
) -> None:
    tenant, queue = name + "_t", name + "_q"
    jobs = [
        {"tenant_id": tenant, "queue": queue, "payload": {"i": i}, "max_attempts": 1} for i in range(1500)
    ]
    ids = [
        int(r[0])
        for r in conn.execute("select job_id from jobctl.submit_jobs(%s::jsonb)", (json.dumps(jobs),))
    ]
    while True:  # every job dies on its only attempt
        rows = conn.execute(
            "select job_id, lease_epoch from jobctl.claim_job('killer', array[%s], 500)", (queue,)
        )
        got = rows.fetchall()
        if not got:
            break
        for job_id, epoch in got:
            conn.execute("select jobctl.fail_job(%s, %s, 'boom')", (job_id, epoch))
    dead = conn.execute(
        "select count(*) from jobctl.job where tenant_id = %s and state = 'dead'", (tenant,)
    ).fetchone()
    assert dead == (1500,)

    barrier = mp.Barrier(3)
    outs = [str(tmp_path / f"bulk{i}.json") for i in range(2)]
    procs = [mp.Process(target=_bulk_retrier, args=(conn.info.dsn, tenant, barrier, o)) for o in outs]
    procs.append(mp.Process(target=_claimer, args=(conn.info.dsn, queue, barrier, 4.0)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0, f"a process exited with {p.exitcode}"

    calls = []
    for o in outs:
        with open(o) as f:
            calls.append(json.load(f))
    acted = sum(c[0] for run in calls for c in run)
    assert acted == 1500  # between them, each dead job retried once: the loser skips it
    assert all(run[-1][3] for run in calls)  # both loops ran to done, without an error
    retried = conn.execute(
        "select job_id from jobctl._event where event = 'retried' and job_id = any(%s)", (ids,)
    ).fetchall()
    per_job = collections.Counter(int(r[0]) for r in retried)
    assert set(per_job) == set(ids)
    assert set(per_job.values()) == {1}
    states = conn.execute(
        "select state, count(*) from jobctl.job where tenant_id = %s group by state", (tenant,)
    ).fetchall()
    assert dict(states).keys() <= {"pending", "running", "completed"}
    audits = conn.execute(
        "select sum((detail ->> 'retried')::int), count(*) from jobctl.audit_log"
        " where action = 'retry_jobs' and tenant_id = %s",
        (tenant,),
    ).fetchone()
    assert audits == (1500, sum(len(run) for run in calls))


def _keyed_jobs(setup: Conn, tenant: str, queue: str, keys: list[str | None]) -> list[int]:
    """A tenant whose key k runs 5 at a time, and a job of each given key (None: no key), in order."""
    setup.execute("select jobctl.put_tenant(%s)", [tenant])
    setup.execute("select jobctl.put_concurrency_limit(%s, 'k', 5)", [tenant])
    sql = "select job_id from jobctl.submit_job(%s, %s, '{}', concurrency_key => %s)"
    rows = [setup.execute(sql, [tenant, queue, k]).fetchone() for k in keys]
    return [int(r[0]) for r in rows if r is not None]


def _wait_until_waiting_for_a_lock(dsn: str, pid: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        deadline = time.monotonic() + 10
        while c.execute("select wait_event_type from pg_stat_activity where pid = %s", [pid]).fetchone() != (
            "Lock",
        ):
            assert time.monotonic() < deadline, "the completion never waited for the key"
            time.sleep(0.01)


def test_bulk_cancel_gives_way_to_a_completion_waiting_for_its_key(dsn: str, name: str) -> None:
    """A batch that took a concurrency key for one job, then waits for the rows of another job whose
    completion waits for that key, would deadlock with it: the batch gives way (lock_timeout) and
    skips that job; the completion then goes through."""
    tenant, queue = f"{name}_t", f"{name}_q"
    with psycopg.connect(dsn, autocommit=True) as setup:
        first, running = _keyed_jobs(setup, tenant, queue, ["k", "k"])
        claimed = setup.execute(
            "select job_id, lease_epoch from jobctl.claim_job('w', array[%s], 2)", [queue]
        ).fetchall()
        epochs = dict(claimed)
        epoch = epochs[running]
        setup.execute("select jobctl.release_job(%s, %s)", [first, epochs[first]])
    with psycopg.connect(dsn) as batch, psycopg.connect(dsn) as worker:
        batch.execute("select jobctl.cancel_job(%s)", [first])  # holds key k until commit
        worker.execute("set statement_timeout = '20s'")
        done: list[object] = []

        def complete() -> None:
            row = worker.execute("select jobctl.complete_job(%s, %s, null)", [running, epoch]).fetchone()
            worker.commit()
            done.append(row)

        t = threading.Thread(target=complete)
        t.start()
        # the completion has deleted its lease row and waits for key k: the batch starts at once, so
        # that its lock_timeout (0.5 s) ends well before the completion's deadlock_timeout (1 s)
        _wait_until_waiting_for_a_lock(dsn, worker.info.backend_pid)
        t0 = time.monotonic()
        row = batch.execute(
            "select acted, skipped from jobctl.cancel_jobs(%s::jsonb)",
            [json.dumps({"job_ids": [running]})],
        ).fetchone()
        waited = time.monotonic() - t0
        batch.commit()
        t.join(20)
        assert row == (0, 1)  # skipped, not a deadlock error
        assert waited < 1.0  # gave way before deadlock_timeout would have found the cycle
        assert done == [(True,)]


def test_a_bulk_cancel_holds_no_key_while_it_waits_so_no_third_party_is_a_deadlock_victim(
    dsn: str, name: str
) -> None:
    """A batch cancels a keyed job, then waits (up to its lock_timeout each) for three jobs' rows that
    a transaction H holds; a submit P queues for the key meanwhile, and then H asks for the key too.
    Had the batch taken the key at its first job, the waits would close a cycle P -> batch -> H -> P
    that P's deadlock check finds first, killing P (CI at 1155913 and d528027). The batch admits its
    keys at its end instead: P goes through at once, and the batch finishes once H commits."""
    tenant, queue = f"{name}_t", f"{name}_q"
    with psycopg.connect(dsn, autocommit=True) as setup:
        keyed, *busy_ids = _keyed_jobs(setup, tenant, queue, ["k", None, None, None])
    pids: dict[str, int] = {}
    results: dict[str, object] = {}

    def run(label: str, sql: str, params: list[object]) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("set statement_timeout = '20s'")
                pids[label] = c.info.backend_pid
                results[label] = c.execute(sql, params).fetchone()
        except psycopg.Error as e:
            results[label] = e

    def started(label: str) -> int:
        deadline = time.monotonic() + 10
        while label not in pids and label not in results:
            assert time.monotonic() < deadline, f"{label} did not start"
            time.sleep(0.01)
        return pids[label]

    with psycopg.connect(dsn) as holder:  # H: the three jobs' rows, until it commits
        holder.execute("set statement_timeout = '20s'")
        holder.execute("select 1 from jobctl.job where job_id = any(%s) for update", [busy_ids])
        batch = threading.Thread(
            target=run,
            args=("batch", "select acted, skipped from jobctl.cancel_jobs(%s::jsonb)",
                  [json.dumps({"job_ids": [keyed, *busy_ids]})]),
        )  # fmt: skip
        submit = threading.Thread(
            target=run,
            args=("submit", "select job_id from jobctl.submit_job(%s, %s, '{}', concurrency_key => 'k')",
                  [tenant, queue]),
        )  # fmt: skip
        batch.start()
        # the batch has cancelled the keyed job and waits for the first busy row (0.5 s at most)
        _wait_until_waiting_for_a_lock(dsn, started("batch"))
        submit.start()
        submit_pid = started("submit")
        time.sleep(0.05)  # P waits for the key, if the batch holds it, before H asks for it
        holder.execute(
            "select job_id from jobctl.submit_job(%s, %s, '{}', concurrency_key => 'k')", [tenant, queue]
        )
        submit.join(5)
        assert not submit.is_alive() and submit_pid
        time.sleep(1.0)  # the batch's waits go on past P's deadlock_timeout (1 s), holding H's rows
        holder.commit()
    batch.join(20)
    assert not isinstance(results.get("submit"), psycopg.Error), results.get("submit")
    assert results.get("submit") is not None
    batch_result = results.get("batch")
    assert isinstance(batch_result, tuple), batch_result
    acted, skipped = batch_result
    assert acted >= 1 and acted + skipped == 4  # the keyed job, and the busy rows skipped while H held them
    with psycopg.connect(dsn, autocommit=True) as c:
        states = c.execute(
            "select state, count(*) from jobctl.job where tenant_id = %s group by state", [tenant]
        ).fetchall()
    assert dict(states) == {"cancelled": acted, "pending": 6 - acted}
