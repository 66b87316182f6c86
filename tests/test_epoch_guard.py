"""Fencing across a crash (docs/design.md, Fencing across a crash): a claim that
committed without waiting for its WAL flush (claim_job's flush => false, as the worker claims) and
was acknowledged is lost in a crash, and so is the epoch sequence's advance. The epochs handed out
after the crash must still be above every acknowledged one, so that the lost claim's worker is fenced.

The crash is real: the test cluster's WAL writer is stopped with SIGSTOP, so that the claim's WAL stays
in shared memory, then killed with SIGKILL, so that the postmaster ends every process and recovers
from the WAL on disk (restart_after_crash), as after a power loss."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[tuple[Any, ...]]
JOBS = 100  # over 32: the claim moves the sequence past a value it WAL-logs ahead (SEQ_LOG_VALS)


def wait_up(dsn: str, seconds: float = 120) -> Conn:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return psycopg.connect(dsn, autocommit=True, connect_timeout=2)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def crash_after_claim(dsn: str, tenant: str) -> tuple[list[tuple[int, int]], Conn]:
    """Submit JOBS jobs (flushed), claim them with flush => false with the WAL writer stopped, then
    kill the WAL writer. Returns the acknowledged (job_id, lease_epoch) and a connection after recovery."""
    with psycopg.connect(dsn, autocommit=True) as c:
        specs = [{"tenant_id": tenant, "queue": tenant, "payload": {"n": n}} for n in range(JOBS)]
        c.execute("select * from jobctl.submit_jobs(%s)", (Jsonb(specs),)).fetchall()
        c.execute("checkpoint")  # the sequence logs anew after a checkpoint: its durable state is now
        row = c.execute("select pid from pg_stat_activity where backend_type = 'walwriter'").fetchone()
        assert row is not None
        walwriter = int(row[0])
        os.kill(walwriter, signal.SIGSTOP)
        try:
            claimed = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job(%s, array[%s], %s, flush => false)",
                ("epoch-guard-zombie", tenant, JOBS),
            ).fetchall()
        finally:
            os.kill(walwriter, signal.SIGKILL)  # a crash: the postmaster ends the rest and recovers
    time.sleep(1.0)
    return [(int(j), int(e)) for j, e in claimed], wait_up(dsn)


def test_a_claim_lost_in_a_crash_never_has_its_epoch_handed_out_again(dsn: str, name: str) -> None:
    # the loss depends on nothing else flushing WAL between the claim and the kill (a pg_cron tick,
    # autovacuum): tried a few times until a claim is really lost
    for attempt in range(3):
        tenant = f"{name}_{attempt}"
        claimed, c = crash_after_claim(dsn, tenant)
        with c:
            assert len(claimed) == JOBS
            ids = [j for j, _ in claimed]
            acknowledged = max(e for _, e in claimed)
            states = c.execute(
                "select state, count(*) from jobctl.job where job_id = any(%s) group by 1", (ids,)
            ).fetchall()
            if dict(states).get("running"):
                continue  # the claim's WAL was flushed by something else before the kill: not lost
            assert dict(states) == {"pending": JOBS}, states
            (last,) = c.execute("select last_value from jobctl.lease_epoch_seq").fetchone()  # type: ignore[misc]
            # the hazard is real: without the guard, the next epochs would be ones already handed out
            assert last < acknowledged, (last, acknowledged)
            assert c.execute("select count(*) from jobctl._epoch_guard").fetchone() == (0,)

            again = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job(%s, array[%s], %s, flush => false)",
                ("epoch-guard-new", tenant, JOBS),
            ).fetchall()
            assert sorted(j for j, _ in again) == sorted(ids)
            assert min(e for _, e in again) > acknowledged, "an epoch of the lost claim was handed out again"

            # the lost claim's worker is fenced: its heartbeats and completions are refused
            job_id, old_epoch = claimed[0]
            (beat,) = c.execute("select jobctl.heartbeat(%s, %s)", (job_id, old_epoch)).fetchone()  # type: ignore[misc]
            assert beat == "lost"
            fenced = c.execute(
                "select count(*) from jobctl.complete_jobs(%s, %s) where not completed",
                ([j for j, _ in claimed], [e for _, e in claimed]),
            ).fetchone()
            assert fenced == (JOBS,)
            completed = c.execute(
                "select count(*) from jobctl.complete_jobs(%s, %s) where completed",
                ([j for j, _ in again], [e for _, e in again]),
            ).fetchone()
            assert completed == (JOBS,)
            return
    raise AssertionError("no claim was lost in 3 crashes: the test did not exercise the window")
