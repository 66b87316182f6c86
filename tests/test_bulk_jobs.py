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


def test_bulk_cancel_gives_way_to_a_completion_waiting_for_its_key(dsn: str, name: str) -> None:
    """A batch that took a concurrency key for one job, then waits for the rows of another job whose
    completion waits for that key, would deadlock with it: the batch gives way (lock_timeout) and
    skips that job; the completion then goes through."""
    tenant, queue = f"{name}_t", f"{name}_q"
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute("select jobctl.put_tenant(%s)", [tenant])
        setup.execute("select jobctl.put_concurrency_limit(%s, 'k', 5)", [tenant])
        first = setup.execute(
            "select job_id from jobctl.submit_job(%s, %s, '{}', concurrency_key => 'k')", [tenant, queue]
        ).fetchone()
        running = setup.execute(
            "select job_id from jobctl.submit_job(%s, %s, '{}', concurrency_key => 'k')", [tenant, queue]
        ).fetchone()
        assert first is not None and running is not None
        claimed = setup.execute(
            "select job_id, lease_epoch from jobctl.claim_job('w', array[%s], 2)", [queue]
        ).fetchall()
        epoch = {job_id: e for job_id, e in claimed}[running[0]]
        setup.execute(
            "select jobctl.release_job(%s, %s)", [first[0], {job_id: e for job_id, e in claimed}[first[0]]]
        )
    with psycopg.connect(dsn) as batch, psycopg.connect(dsn) as worker:
        batch.execute("select jobctl.cancel_job(%s)", [first[0]])  # holds key k until commit
        worker.execute("set statement_timeout = '20s'")
        done: list[object] = []

        def complete() -> None:
            row = worker.execute("select jobctl.complete_job(%s, %s, null)", [running[0], epoch]).fetchone()
            worker.commit()
            done.append(row)

        t = threading.Thread(target=complete)
        t.start()
        time.sleep(0.5)  # the completion has deleted its lease row and waits for key k
        t0 = time.monotonic()
        row = batch.execute(
            "select acted, skipped from jobctl.cancel_jobs(%s::jsonb)",
            [json.dumps({"job_ids": [running[0]]})],
        ).fetchone()
        waited = time.monotonic() - t0
        batch.commit()
        t.join(20)
        assert row == (0, 1)  # skipped, not a deadlock error
        assert waited < 1.0  # gave way before deadlock_timeout would have found the cycle
        assert done == [(True,)]
