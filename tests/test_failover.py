"""The failover drill scaled down (benchmarks/failover.py --small, about two minutes): a primary and a
synchronous streaming standby of its own (under .failover/, not the test cluster), real workers, the
API, SQL and CLI producers on a multi-host DSN; the primary is killed with SIGKILL under load and the
standby promoted. `make failover` runs the full drill (30 s leases, three drills)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from jobctl import db

pytestmark = pytest.mark.slow  # left out by make test-quick

INVARIANTS = ("lost", "unfinished", "duplicates", "missing", "stray", "overlaps")


def test_failover_loses_no_acknowledged_job_and_clients_carry_on() -> None:
    run = subprocess.run(
        [sys.executable, str(db.ROOT / "benchmarks" / "failover.py"), "--small"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    [line] = [line for line in run.stdout.splitlines() if line.startswith("{")]
    r: dict[str, Any] = json.loads(line)
    context = run.stdout + run.stderr[-3000:]
    assert r["jobs"] > 100 and r["submit_errors"] == 0, context
    assert {k: r[k] for k in INVARIANTS} == dict.fromkeys(INVARIANTS, 0), context
    assert r["unacked_committed"] == 0, context
    # every kind of client got through before the kill and again after the promotion, soon
    assert set(r["downtime_s"]) == {"api", "cli", "sql", "workers"}, context
    assert all(v is not None and v < 30 for v in r["downtime_s"].values()), context
    assert r["promote_s"] < 15, context
    # jobs running at the kill finished: by their worker, or requeued within two leases
    assert r["requeue_max_s"] is None or r["requeue_max_s"] <= 2 * r["lease_s"] + 5, context
    # pg_cron: nothing on the standby while it was one, the tick on the new primary after the promotion
    cron = r["cron"]
    assert cron["standby_scheduler_started"] == 0 and cron["standby_runs"] == 0, context
    assert cron["new_primary_runs"] >= 1 and cron["ticks_after_promotion"] >= 1, context
    # the periodic functions did nothing, without an error, on the standby in recovery
    assert r["standby_maintenance"] == {
        "in_recovery": True,
        "tick": 0,
        "maintain_partitions": 0,
        "reap_expired_leases": 0,
        "expand_schedules": 0,
    }, context
