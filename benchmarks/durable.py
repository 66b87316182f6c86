"""Durable execution at scale, on a scratch database of the benchmark cluster:

- steps: 10,000 jobs of 5 steps each (`job.step`, one save_step a step) drained by the real worker
  (`jobctl worker` with its defaults, this module's `handle`), against the same 10,000 jobs without
  steps, alternating which goes first each round: jobs/s, steps/s and the ratio of the two drains.
- parked: single-job claims (claim_job, max_jobs 1, then complete_job, one at a time, with tick(false)
  every 0.25 s as a worker runs it) in a database with no parked job and in one alike with 100,000
  parked (half asleep for a day, half waiting for an event that never comes), round by round in turn:
  the claim's p50 and p99, and the ratio of the p99s (the bar: within 1.2x).

Prints JSON lines and a table; a full run writes benchmarks/results/durable.jsonl.

    .venv/bin/python benchmarks/durable.py             # 10,000 jobs, 100,000 parked, 3 rounds
    .venv/bin/python benchmarks/durable.py --small     # 500 jobs, 5,000 parked, 1 round
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url

HERE = Path(__file__).resolve().parent
STEPS = 5
CLAIM = "select job_id, lease_epoch from jobctl.claim_job('bench', array[%s], 1)"


async def handle(job: Any) -> None:
    """The benchmark's handler: payload {"steps": n} saves n steps, each a tiny result."""
    for i in range(int(job.payload.get("steps", 0))):
        await job.step(f"s{i}", lambda i=i: i)


def submit(c: psycopg.Connection[Any], queue: str, jobs: int, steps: int) -> None:
    for start in range(0, jobs, 1000):
        n = min(1000, jobs - start)
        c.execute(
            "select count(*) from jobctl.submit_jobs(%s::jsonb)",
            (json.dumps([{"tenant_id": "t", "queue": queue, "payload": {"steps": steps}}] * n),),
        )


def drain(dsn: str, queue: str, jobs: int, steps: int) -> dict[str, Any]:
    """Start the real worker (its defaults) on an empty queue; once it listens, commit the jobs in one
    transaction and time them from that commit until every one has completed."""
    env = {**os.environ, "JOBCTL_DSN": dsn, "PYTHONPATH": str(HERE)}
    cmd = [
        str(Path(sys.executable).parent / "jobctl"),
        "worker",
        "--handler",
        "durable:handle",
        "--queue",
        queue,
    ]
    with psycopg.connect(dsn, autocommit=True) as c:
        since = c.execute("select clock_timestamp()").fetchone()[0]  # type: ignore[index]
    worker = subprocess.Popen(cmd, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            while not listening(c, since):
                if worker.poll() is not None:
                    raise RuntimeError(f"the worker exited: {worker.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.05)
            with c.transaction():
                submit(c, queue, jobs, steps)
            started = time.monotonic()
            while True:
                row = c.execute(
                    "select count(*) from jobctl.job where queue = %s and state = 'completed'", (queue,)
                ).fetchone()
                if row is not None and row[0] >= jobs:
                    break
                time.sleep(0.02)
            seconds = time.monotonic() - started
            saved = c.execute(
                "select count(*) from jobctl._step as s"
                " join jobctl.job as j on j.job_id = s.job_id where j.queue = %s",
                (queue,),
            ).fetchone()
    finally:
        worker.terminate()
        worker.wait(30)
    return {"jobs_per_s": round(jobs / seconds, 1), "steps_per_s": round(jobs * steps / seconds, 1),
            "seconds": round(seconds, 2), "steps_saved": saved[0] if saved else 0}  # fmt: skip


def listening(c: psycopg.Connection[Any], since: datetime) -> bool:
    """Whether a worker connected since `since` LISTENs for hints in this database."""
    row = c.execute(
        "select count(*) from pg_stat_activity where datname = current_database()"
        " and backend_start > %s and query = 'listen jobctl'",
        (since,),
    ).fetchone()
    return row is not None and row[0] > 0


def park(c: psycopg.Connection[Any], jobs: int) -> None:
    """`jobs` parked jobs: half asleep for a day, half waiting for an event nobody emits."""
    submit(c, "parked", jobs, 0)
    claimed = "select count(*) from jobctl.claim_job('parker', array['parked'], 1000) as c"
    for i in range(0, jobs, 1000):
        if i < jobs // 2:
            c.execute(f"{claimed} where jobctl.sleep_job(c.job_id, c.lease_epoch, now() + '1 day')")
        else:
            c.execute(f"{claimed} cross join jobctl.await_event(c.job_id, c.lease_epoch, 'never')")


def claims(c: psycopg.Connection[Any], queue: str, n: int) -> dict[str, float]:
    """n single-job claims, each completed before the next, with jobctl.tick(false) every 0.25 s between
    them as every worker runs it: the claim's round trip, p50 and p99 in ms."""
    submit(c, queue, n, 0)
    took = []
    ticked = 0.0
    for _ in range(n):
        if time.monotonic() - ticked > 0.25:
            c.execute("select jobctl.tick(false)")
            ticked = time.monotonic()
        t0 = time.perf_counter()
        row = c.execute(CLAIM, (queue,)).fetchone()
        took.append((time.perf_counter() - t0) * 1000)
        assert row is not None
        c.execute("select jobctl.complete_job(%s, %s)", row)
    took.sort()
    return {"claim_p50_ms": round(statistics.median(took), 3), "claim_p99_ms": round(took[int(n * 0.99)], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="500 jobs, 5,000 parked, 1 round")
    ap.add_argument(
        "--rounds", type=int, help="rounds of each drain and claim measure (default 3; --small 1)"
    )
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    jobs, parked = (500, 5_000) if args.small else (10_000, 100_000)
    rounds = args.rounds or (1 if args.small else 3)
    base = args.url or cluster_url("postgres")
    dsn = fresh_database(base, "jobctl_durable", naive=False)
    rows: list[dict[str, Any]] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select jobctl.put_tenant('t')")
    for r in range(rounds):
        order = [("steps", STEPS), ("plain", 0)] if r % 2 == 0 else [("plain", 0), ("steps", STEPS)]
        for mode, steps in order:
            row = {
                "mode": mode,
                "round": r + 1,
                "jobs": jobs,
                "steps": steps,
                **drain(dsn, f"{mode}{r}", jobs, steps),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    # the claims: in two databases alike but for the parked jobs of the second, round by round in turn,
    # so that what the rounds themselves leave behind (finished jobs, history) weighs on both alike
    parked_dsn = fresh_database(base, "jobctl_durable_parked", naive=False)
    n = 1000 if args.small else 5000
    with psycopg.connect(dsn, autocommit=True) as c, psycopg.connect(parked_dsn, autocommit=True) as p:
        p.execute("select jobctl.put_tenant('t')")
        started = time.monotonic()
        park(p, parked)
        print(json.dumps({"mode": "park", "parked": parked, "seconds": round(time.monotonic() - started, 1)}))
        for db in (c, p):
            db.execute("vacuum analyze")
        for r in range(rounds):
            for db, count in ((c, 0), (p, parked)) if r % 2 == 0 else ((p, parked), (c, 0)):
                row = {"mode": "claims", "round": r + 1, "parked": count, **claims(db, f"claims{r}", n)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    summary = summarize(rows, parked)
    print(json.dumps(summary), flush=True)
    rows.append(summary)
    finish(base, "jobctl_durable_parked", [], None)
    finish(base, "jobctl_durable", rows, None if args.small else "durable.jsonl")
    print(
        f"\n  steps: {summary['steps_jobs_per_s']} jobs/s, {summary['steps_per_s']} steps/s; "
        f"plain: {summary['plain_jobs_per_s']} jobs/s ({summary['steps_vs_plain']}x)"
    )
    print(
        f"  claim p99: {summary['claim_p99_ms_unparked']} ms with no parked job, "
        f"{summary['claim_p99_ms_parked']} ms with {parked:,} parked ({summary['claim_p99_ratio']}x)"
    )


def summarize(rows: list[dict[str, Any]], parked: int) -> dict[str, Any]:
    """Medians over the rounds."""

    def median(mode: str, key: str, **where: Any) -> float:
        values = [r[key] for r in rows if r["mode"] == mode and all(r.get(k) == v for k, v in where.items())]
        return round(statistics.median(values), 3)

    steps, plain = median("steps", "jobs_per_s"), median("plain", "jobs_per_s")
    before, after = (
        median("claims", "claim_p99_ms", parked=0),
        median("claims", "claim_p99_ms", parked=parked),
    )
    return {
        "summary": True,
        "steps_jobs_per_s": steps,
        "steps_per_s": median("steps", "steps_per_s"),
        "plain_jobs_per_s": plain,
        "steps_vs_plain": round(steps / plain, 3),
        "claim_p50_ms_unparked": median("claims", "claim_p50_ms", parked=0),
        "claim_p50_ms_parked": median("claims", "claim_p50_ms", parked=parked),
        "claim_p99_ms_unparked": before,
        "claim_p99_ms_parked": after,
        "claim_p99_ratio": round(after / before, 3),
    }


if __name__ == "__main__":
    main()
