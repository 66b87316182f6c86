"""Transaction IDs and MultiXacts consumed per job, on the benchmark cluster, in a fresh database.

- single: per job, submit_job, claim_job(max_jobs 1) and complete_job, each its own transaction
  (autocommit): three writing transactions, so 3 XIDs a job unless something adds subtransactions;
- batched: submit_jobs of 100, claim_job(max_jobs 100), complete_jobs of 100: 3 XIDs per 100 jobs.
XIDs are read from the snapshot's xmax (txid_current_snapshot: reading it assigns none), MultiXacts
from pg_control_checkpoint() after a CHECKPOINT; both are cluster-wide, so run it on a quiet
cluster. pg_cron's jobs (jobctl.tick every minute, maintain_partitions every 15) fire in the first
seconds of a minute and take 6 to 18 XIDs of their own, so each mode is measured inside one minute,
between its 15th and 58th second. The rest of the cluster's background work (most likely
autovacuum's ANALYZE, which takes an XID per table whose statistics it writes) can only add XIDs,
never take them away, so each mode runs three rounds and reports the fewest: a subtransaction or an
extra write in the job's path shows in every round. Prints JSON lines and a table; a full run also
writes benchmarks/results/xids.jsonl.

    .venv/bin/python benchmarks/xids.py            # 2,000 single jobs, 20,000 batched
    .venv/bin/python benchmarks/xids.py --small    # 200 and 2,000
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from psycopg.types.json import Jsonb

ROUNDS = 3


def counters(c: psycopg.Connection[Any]) -> tuple[int, int]:
    c.execute("checkpoint")
    row = c.execute(
        "select txid_snapshot_xmax(txid_current_snapshot()), next_multixact_id::text::bigint "
        "from pg_control_checkpoint()"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def between_cron_runs(seconds: float) -> None:
    """Sleep until a window of `seconds` fits between second 15 and second 58 of one minute."""
    now = time.time() % 60
    if now < 15:
        time.sleep(15 - now)
    elif now + seconds > 58:
        time.sleep(75 - now)


def single(c: psycopg.Connection[Any], jobs: int) -> None:
    for _ in range(jobs):
        c.execute("select jobctl.submit_job('t', 'q', '{}')")
        row = c.execute("select job_id, lease_epoch from jobctl.claim_job('w', array['q'], 1)").fetchone()
        assert row is not None
        c.execute("select jobctl.complete_job(%s, %s)", row)


def batched(c: psycopg.Connection[Any], jobs: int) -> None:
    specs = Jsonb([{"tenant_id": "t", "queue": "q", "payload": {}} for _ in range(100)])
    for _ in range(jobs // 100):
        c.execute("select count(*) from jobctl.submit_jobs(%s)", (specs,))
        rows = c.execute("select job_id, lease_epoch from jobctl.claim_job('w', array['q'], 100)").fetchall()
        assert len(rows) == 100
        c.execute(
            "select count(*) from jobctl.complete_jobs(%s, %s)", ([r[0] for r in rows], [r[1] for r in rows])
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="200 single and 2,000 batched jobs")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    base = args.url or cluster_url("postgres")
    dsn = fresh_database(base, "jobctl_xids")
    results = []
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select jobctl.put_tenant('t')")
        # the windows: 200 single jobs take about 1 s here, 2,000 about 10 s; batched ones a tenth
        for name, run, jobs, expected, window in (
            ("single", single, 200 if args.small else 2_000, 3.0, 5 if args.small else 30),
            ("batched", batched, 2_000 if args.small else 20_000, 0.03, 5 if args.small else 30),
        ):
            per_round: list[float] = []
            multixacts, started = 0, time.monotonic()
            for _ in range(ROUNDS):
                between_cron_runs(window)
                xid0, mxid0 = counters(c)
                run(c, jobs)
                xid1, mxid1 = counters(c)
                # each counters() call runs one CHECKPOINT, which assigns no XID
                per_round.append(round((xid1 - xid0) / jobs, 4))
                multixacts += mxid1 - mxid0
            row = {
                "mode": name,
                "jobs": jobs,
                "xids_per_job": min(per_round),
                "rounds": per_round,
                "expected_xids_per_job": expected,
                "multixacts": multixacts,
                "seconds": round(time.monotonic() - started, 2),
            }
            print(json.dumps(row), flush=True)
            results.append(row)
    finish(base, "jobctl_xids", results, None if args.small else "xids.jsonl")
    print(f"\n  {'mode':8} {'jobs':>7} {'XIDs/job':>9} {'expected':>9} {'MultiXacts':>11}")
    for r in results:
        print(
            f"  {r['mode']:8} {r['jobs']:>7} {r['xids_per_job']:>9} {r['expected_xids_per_job']:>9} "
            f"{r['multixacts']:>11}"
        )


if __name__ == "__main__":
    main()
