"""High availability on Patroni. The drill scaled down (benchmarks/drills/ha_drill.py --small, a minute):
etcd and two PostgreSQL nodes under Patroni of their own (under .ha/, ports 25520-25526, not the test
cluster), synchronous mode; real workers, the API and a SQL producer on a multi-host DSN; a
switchover through Patroni's REST API, then SIGKILL of the leader's postmaster under load (after 64
claims it never streamed: their workers are zombies, fenced after the promotion). `make ha-drill`
runs the full drill (30 s leases, three rounds, and the killed leader's rejoin with pg_rewind). And
the on_role_change callback itself, on a scratch database: it moves the epoch once per timeline, and
only for the primary's role."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import psycopg
import pytest
from jobctl import db

CALLBACK = str(db.ROOT / "bin" / "patroni-on-role-change")
INVARIANTS = ("lost", "unfinished", "duplicates", "missing", "stray", "overlaps", "unacked_committed")


@pytest.mark.slow  # left out by make test-quick
def test_failover_and_switchover_lose_nothing_and_the_callback_moves_the_epoch() -> None:
    run = subprocess.run(
        [sys.executable, str(db.ROOT / "benchmarks" / "drills" / "ha_drill.py"), "--small"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    context = run.stdout + run.stderr[-5000:]
    assert run.returncode == 0, context
    events: list[dict[str, Any]] = [
        json.loads(line) for line in run.stdout.splitlines() if line.startswith('{"event"')
    ]
    assert [e["event"] for e in events] == ["switchover", "kill"], context
    timelines = []
    for e in events:
        assert e["jobs"] > 50 and e["submit_errors"] == 0, context
        assert {k: e[k] for k in INVARIANTS} == dict.fromkeys(INVARIANTS, 0), context
        # the other node took over, and every kind of client got through before and after it
        assert e["from"] != e["to"] and e["promote_s"] < 30, context
        assert set(e["downtime_s"]) == {"api", "sql", "workers"}, context
        assert all(v is not None and v < 30 for v in e["downtime_s"].values()), context
        # the epoch is past the new timeline's floor, moved once by the callback, or found there by it when
        # the new leader's first claim had raised it already (its unlogged epoch guard starts empty)
        callback = e["callback"]
        assert callback["failed"] == 0 and callback["moved"] + callback["unchanged"] == 1, context
        assert e["epoch"] >= e["timeline"] << 40, context
        timelines.append(e["timeline"])
        # the periodic functions did nothing, without an error, on the standby in recovery
        assert e["standby_maintenance"] == {
            "in_recovery": True,
            "tick": 0,
            "maintain_partitions": 0,
            "reap_expired_leases": 0,
            "expand_schedules": 0,
        }, context
    assert timelines[0] < timelines[1], context
    # 64 claims the killed leader never streamed (their epochs above the standby's
    # sequence); on the new primary, claimed again at once, every new epoch is above them, and each
    # zombie's heartbeat and complete with its old epoch is refused
    switchover, kill = events
    zombie = kill["zombie"]
    assert zombie["zombies"] == 64 and kill["zombie_problems"] == [], context
    assert zombie["old_epochs"][1] > zombie["streamed_seq"], context
    assert zombie["new_epochs"][0] > zombie["old_epochs"][1], context
    assert zombie["zombie_completes_refused"] == 64 and zombie["new_completes"] == 64, context
    assert switchover["zombie"] is None, context


def callback(dsn: str, role: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CALLBACK, dsn, "on_role_change", role, "jobctl-test"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_callback_moves_the_epoch_once_per_timeline_and_only_on_a_primary(scratch_dsn: str) -> None:
    # no jobctl yet (a node promoted before the first migration): nothing to do, exit 0
    first = callback(scratch_dsn, "master")
    assert first.returncode == 0 and "not migrated yet" in first.stderr, first.stderr
    with psycopg.connect(scratch_dsn, autocommit=True) as c:
        c.execute("create schema jobctl")
        c.execute("create sequence jobctl.lease_epoch_seq as bigint")
        c.execute("select setval('jobctl.lease_epoch_seq', 12345)")
        [(timeline,)] = c.execute(
            "select ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint"
        ).fetchall()

        def epoch() -> int:
            [(v,)] = c.execute("select last_value from jobctl.lease_epoch_seq").fetchall()
            return int(v)

        replica = callback(scratch_dsn, "replica")
        assert replica.returncode == 0 and "nothing to do" in replica.stderr and epoch() == 12345
        moved = callback(scratch_dsn, "master")
        assert moved.returncode == 0, moved.stderr
        assert f"moved 12345 -> {timeline << 40}" in moved.stderr and epoch() == timeline << 40
        c.execute("select nextval('jobctl.lease_epoch_seq')")  # claims go on meanwhile
        again = callback(scratch_dsn, "primary")  # a repeated call for the same promotion
        assert again.returncode == 0 and "unchanged" in again.stderr, again.stderr
        assert epoch() == (timeline << 40) + 1
    # a database that never takes writes: the callback gives up, says so, and fails
    standby_like = subprocess.run(
        [CALLBACK, "host=/nonexistent port=1 dbname=x", "on_role_change", "master", "jobctl-test"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"JOBCTL_CALLBACK_TIMEOUT": "1", "PATH": "/usr/bin:/bin"},
    )
    assert standby_like.returncode == 1 and "NOT moved" in standby_like.stderr, standby_like.stderr
