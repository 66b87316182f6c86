"""The chaos suite scaled down (benchmarks/drills/chaos.py --small, about a minute each) against the test
cluster: real worker processes, the API and the server under kill -9, SIGSTOP, terminated
connections, a server restart and a network partition, then the ledger's invariants. `make chaos`
runs the full scenarios (30 s leases, 40 s stops, 300 zombie trials)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from jobctl import db

pytestmark = pytest.mark.slow  # left out by make test-quick

INVARIANTS = ("lost", "unfinished", "duplicates", "missing", "stray", "overlaps")


def chaos(dsn: str, scenario: str) -> dict[str, Any]:
    run = subprocess.run(
        [
            sys.executable,
            str(db.ROOT / "benchmarks" / "drills" / "chaos.py"),
            "--scenario",
            scenario,
            "--small",
            "--dsn",
            dsn,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    [line] = [line for line in run.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(line)
    assert result["jobs"] > 100 and result["submit_errors"] == 0, run.stdout + run.stderr[-3000:]
    assert {k: result[k] for k in INVARIANTS} == dict.fromkeys(INVARIANTS, 0), run.stdout + run.stderr[-3000:]
    return result


def test_faults_keep_every_job_and_run_each_once(dsn: str) -> None:
    r = chaos(dsn, "faults")
    assert set(r["faults"]) == {"kill", "zombie", "terminate", "restart", "partition"}, r
    assert min(r["faults"].values()) >= 1, r
    # orphans of kill -9 are claimable again within two leases, as 60 s is for the default 30 s lease
    assert r["orphans_requeued"] > 0 and r["requeue_max_s"] <= 2 * r["lease_s"] + 1, r
    # the zombies and the partitioned workers woke up to find their leases gone
    assert r["worker_counts"].get("fenced", 0) > 0, r


def test_zombies_at_random_points_are_fenced(dsn: str) -> None:
    r = chaos(dsn, "zombies")
    assert r["trials"] >= 20 and r["skewed_trials"] > 0, r
    assert set(r["phases"]) == {"working", "in_transaction", "heartbeat"}, r
    assert r["worker_counts"].get("fenced", 0) > 0, r
