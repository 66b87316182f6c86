"""Retention under load: a session holding a lock on a partition that is due to retire makes
maintain_partitions give up after its short lock waits, while claims go on; once the lock is gone
the partition retires. In a scratch database, so the shortened retention touches no other test."""

from __future__ import annotations

import contextlib
import threading
import time

import psycopg
from jobctl import migrate
from psycopg.types.json import Jsonb

CLAIMERS = 3


def claim_loop(
    dsn: str, queue: str, stop: threading.Event, worst: list[float], claimed: list[int], errors: list[str]
) -> None:
    """Submit one job, claim it, complete it, again and again; record the slowest round trip and
    any error (a claim that fails on a lock it should never have asked for)."""
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            while not stop.is_set():
                c.execute("select jobctl.submit_job('t', %s, %s)", (queue, Jsonb({})))
                started = time.perf_counter()
                rows = c.execute(
                    "select job_id, lease_epoch from jobctl.claim_job('w', array[%s], 5)", (queue,)
                )
                got = rows.fetchall()
                worst.append(time.perf_counter() - started)
                for job_id, epoch in got:
                    c.execute("select jobctl.complete_job(%s, %s)", (job_id, epoch))
                claimed.append(len(got))
    except psycopg.Error as e:
        errors.append(f"{e.sqlstate}: {e}")


def test_a_lock_on_a_retiring_partition_delays_retention_not_claims(scratch_dsn: str) -> None:
    with psycopg.connect(scratch_dsn) as c:
        migrate.migrate(c)
        c.commit()
    with psycopg.connect(scratch_dsn, autocommit=True) as admin, psycopg.connect(scratch_dsn) as holder:
        # a call without its lock_timeout would wait for the holder forever: fail instead of hanging
        admin.execute("set statement_timeout = '20s'")
        admin.execute("update jobctl.retention set hot = '1 day'")
        row = admin.execute(
            """select part::text from jobctl._partitions(array['jobctl.job']::regclass[])
               where upper_bound < now() - interval '1 day' order by lower_bound limit 1"""
        ).fetchone()
        assert row is not None, "a fresh install has partitions four days back"
        old = row[0]
        # a report reading the old day, its transaction left open: ACCESS SHARE until it ends
        holder.execute(f"select count(*) from {old}")

        stop = threading.Event()
        worst: list[list[float]] = [[] for _ in range(CLAIMERS)]
        claimed: list[list[int]] = [[] for _ in range(CLAIMERS)]
        errors: list[str] = []
        threads = [
            threading.Thread(
                target=claim_loop, args=(scratch_dsn, f"q{i}", stop, worst[i], claimed[i], errors)
            )
            for i in range(CLAIMERS)
        ]
        for t in threads:
            t.start()
        time.sleep(0.5)
        # every call tries one step on hot tables: the seals of the past days, then the retirement
        results, took = [], []
        for _ in range(12):
            started = time.perf_counter()
            results.append(admin.execute("select jobctl.maintain_partitions()").fetchone())
            took.append(time.perf_counter() - started)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=30)

        assert errors == [], "no claim fails while retention waits for its lock"
        assert (0,) in results, "a call whose step needs the held lock gives up"
        # three tries of at most two 50 ms lock waits each, 0.1 s and 0.2 s apart
        assert max(took) < 2, took
        slowest = max(max(w) for w in worst)
        assert slowest < 0.4, f"a claim waited {slowest:.3f} s behind the maintenance's lock requests"
        assert all(sum(n) > 0 for n in claimed), "every claimer kept claiming"
        assert admin.execute(f"select to_regclass('{old}')").fetchone() == (old,), "the partition stayed"

        holder.commit()
        # four past days of job and event partitions: 16 seal steps, then the retirement
        for _ in range(17):
            assert admin.execute("select jobctl.maintain_partitions()").fetchone() == (1,)
        parent = admin.execute(
            "select inhparent::regclass::text from pg_inherits where inhrelid = %s::regclass",
            ("jobctl_archive." + old.split(".")[1],),
        ).fetchone()
        assert parent == ("jobctl.job_archive",), "once the lock is gone the partition retires"


def test_a_lock_queued_on_a_job_partition_does_not_fail_the_rotation(dsn: str) -> None:
    """jobctl._rotate_periods (run by claims) reads the slot partitions' bounds without opening any
    relation: a bound read with its relation's OID took ACCESS SHARE on every partition in the
    database, and behind a retention's queued ACCESS EXCLUSIVE that ran into the 20 ms lock_timeout."""
    with (
        psycopg.connect(dsn, autocommit=True) as admin,
        psycopg.connect(dsn) as holder,
        psycopg.connect(dsn) as locker,
    ):
        row = admin.execute(
            "select part::text from jobctl._partitions(array['jobctl.job']::regclass[])"
            " order by lower_bound limit 1"
        ).fetchone()
        assert row is not None
        holder.execute(f"select count(*) from {row[0]}")  # a report's ACCESS SHARE, left open
        locker.execute("set lock_timeout = '3s'")
        queued = threading.Thread(target=_ask_exclusive, args=(locker, row[0]))
        queued.start()
        try:
            time.sleep(0.3)  # the ACCESS EXCLUSIVE request now waits behind the holder
            assert admin.execute("select jobctl._rotate_periods() >= 0").fetchone() == (True,)
        finally:
            holder.rollback()
            queued.join(timeout=10)
            locker.rollback()


def _ask_exclusive(conn: psycopg.Connection[tuple[object, ...]], table: str) -> None:
    """Queue an ACCESS EXCLUSIVE request, as a partition drop does; it times out behind the holder."""
    with contextlib.suppress(psycopg.errors.LockNotAvailable):
        conn.execute(f"lock table {table} in access exclusive mode")
