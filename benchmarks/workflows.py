"""Dependencies at scale, on a scratch database of the benchmark cluster:

- dag: a 1,000-node DAG, 10 levels x 100 (--levels), each node of a level depending on 3 nodes of the level
  before (seeded), drained by 4 worker processes; per child, the time from its last parent's
  completion to its release (claimable: its run_at, set when it is released) and to its claim.
- fanin: 10,000 parents into one child, beside a plain drain of 10,000 jobs, in alternating order
  each round, by the same 4 workers: the parents' drain rate against the plain one, and the child's
  release and claim after the last parent.

Workers claim 5 jobs at a time, complete them in one complete_jobs and tick every 0.25 s, as
`jobctl worker` does. Prints medians over ROUNDS rounds and writes benchmarks/results/workflows.json.

    .venv/bin/python benchmarks/workflows.py [--dsn DSN] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from compare import cluster_url
from counters import make_db, schema_script
from psycopg import conninfo

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 4


def worker(dsn: str, queue: str, stop_after: float, out: Any) -> None:
    """Claim and complete until nothing came for stop_after seconds."""
    done = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        last = time.monotonic()
        ticked = 0.0
        while time.monotonic() - last < stop_after:
            if time.monotonic() - ticked > 0.25:
                conn.execute("select jobctl.tick(false)")
                ticked = time.monotonic()
            rows = conn.execute(
                "select job_id, lease_epoch from jobctl.claim_job('bench-w', array[%s], 5)", [queue]
            ).fetchall()
            if not rows:
                time.sleep(0.002)
                continue
            last = time.monotonic()
            conn.execute(
                "select count(*) from jobctl.complete_jobs(%s, %s, %s::jsonb[])",
                [[r[0] for r in rows], [r[1] for r in rows], ['{"ok": true}'] * len(rows)],
            )
            done += len(rows)
    out.put(done)


def drain(dsn: str, queue: str, stop_after: float = 1.0) -> None:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(dsn, queue, stop_after, out)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    for _ in procs:
        out.get(timeout=900)
    for p in procs:
        p.join()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def dag_round(dsn: str, tenant: str, seed: int, levels: int) -> dict[str, float]:
    rnd = random.Random(seed)
    jobs: list[dict[str, Any]] = []
    for level in range(levels):
        for i in range(100):
            job: dict[str, Any] = {
                "name": f"n{level}_{i}",
                "tenant_id": tenant,
                "queue": tenant,
                "payload": {},
            }
            if level:
                job["depends_on"] = [f"n{level - 1}_{k}" for k in rnd.sample(range(100), 3)]
            jobs.append(job)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select count(*) from jobctl.submit_workflow(%s::jsonb)", [json.dumps(jobs)])
    drain(dsn, tenant)
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            """select extract(epoch from c.run_at - max(p.finished_at)) * 1000,
                      extract(epoch from c.started_at - max(p.finished_at)) * 1000
               from jobctl.job as c
               cross join lateral unnest(c.depends_on) as d (parent_id)
               join jobctl.job as p on p.job_id = d.parent_id
               where c.tenant_id = %s and c.depends_on is not null
               group by c.job_id, c.run_at, c.started_at""",
            [tenant],
        ).fetchall()
        left = conn.execute(
            "select count(*) from jobctl.job where tenant_id = %s and state <> 'completed'", [tenant]
        ).fetchone()
    assert left == (0,), f"{left} jobs of the DAG did not complete"
    release = [float(r[0]) for r in rows]
    claim = [float(r[1]) for r in rows]
    return {
        "children": len(rows),
        "release_p50_ms": pct(release, 50),
        "release_p99_ms": pct(release, 99),
        "claim_p50_ms": pct(claim, 50),
        "claim_p99_ms": pct(claim, 99),
    }


def timed_drain(dsn: str, tenant: str, n: int, fan_in: bool) -> dict[str, float]:
    plain = [{"tenant_id": tenant, "queue": tenant, "payload": {"i": i}} for i in range(n)]
    # in one transaction: the parents (submit_jobs), then the child on all of them (depends_on: a
    # workflow holds at most 10,000 jobs, parents and child together)
    with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
        ids = [
            int(r[0])
            for r in conn.execute("select job_id from jobctl.submit_jobs(%s::jsonb)", [json.dumps(plain)])
        ]
        if fan_in:
            conn.execute("select jobctl.submit_job(%s, %s, '{}', depends_on => %s)", [tenant, tenant, ids])
    drain(dsn, tenant)
    with psycopg.connect(dsn, autocommit=True) as conn:
        first, last = conn.execute(
            "select min(started_at), max(finished_at) from jobctl.job"
            " where tenant_id = %s and depends_on is null",
            [tenant],
        ).fetchone()  # type: ignore[misc]
        result = {"jobs_per_s": n / (last - first).total_seconds()}
        if fan_in:
            ready, started, state = conn.execute(
                "select run_at, started_at, state from jobctl.job"
                " where tenant_id = %s and depends_on is not null",
                [tenant],
            ).fetchone()  # type: ignore[misc]
            assert state == "completed", f"the fan-in's child is {state}"
            result["child_release_ms"] = (ready - last).total_seconds() * 1000
            result["child_claim_ms"] = (started - last).total_seconds() * 1000
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dsn", help="a superuser DSN of a cluster to use (default: the benchmark cluster, .bench-pg/)"
    )
    ap.add_argument("--url", dest="dsn", help=argparse.SUPPRESS)  # the smoke tests' spelling
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--levels", type=int, default=10, help="levels of the DAG (100 nodes each)")
    ap.add_argument(
        "--small", action="store_true", help="the smoke test: 1 round, 3 levels, a 500-parent fan-in"
    )
    ap.add_argument(
        "--fan-in", type=int, default=10000, help="parents of the fan-in (and jobs of the plain drain)"
    )
    args = ap.parse_args()
    if args.small:
        args.rounds, args.levels, args.fan_in = 1, 3, 500
    if args.dsn is None:
        args.dsn = cluster_url("postgres")
    name = f"bench_workflows_{uuid.uuid4().hex[:6]}"
    dsn = make_db(args.dsn, name, schema_script(None))
    dags: list[dict[str, float]] = []
    plain: list[dict[str, float]] = []
    fanin: list[dict[str, float]] = []
    try:
        for r in range(args.rounds):
            dags.append(dag_round(dsn, f"dag{r}", seed=r, levels=args.levels))
            order = [False, True] if r % 2 == 0 else [True, False]
            for fan in order:
                got = timed_drain(dsn, f"{'fan' if fan else 'plain'}{r}", args.fan_in, fan)
                (fanin if fan else plain).append(got)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("vacuum analyze")
            print(
                f"round {r + 1}: dag release p99 {dags[-1]['release_p99_ms']:.2f} ms, claim p99"
                f" {dags[-1]['claim_p99_ms']:.2f} ms; fan-in {fanin[-1]['jobs_per_s']:.0f} jobs/s vs plain"
                f" {plain[-1]['jobs_per_s']:.0f} ({fanin[-1]['jobs_per_s'] / plain[-1]['jobs_per_s']:.3f}x),"
                f" child released {fanin[-1]['child_release_ms']:.1f} ms,"
                f" claimed {fanin[-1]['child_claim_ms']:.1f} ms"
                " after the last parent",
                flush=True,
            )
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{conninfo.conninfo_to_dict(dsn)["dbname"]}" with (force)')

    def med(rows: list[dict[str, float]], key: str) -> float:
        return round(statistics.median(x[key] for x in rows), 3)

    result = {
        "rounds": args.rounds,
        "workers": WORKERS,
        "dag_levels": args.levels,
        "dag": {k: med(dags, k) for k in dags[0]},
        "plain_drain_jobs_per_s": med(plain, "jobs_per_s"),
        "fan_in": {
            "parents": args.fan_in,
            "jobs_per_s": med(fanin, "jobs_per_s"),
            "ratio_to_plain": round(
                statistics.median(
                    f["jobs_per_s"] / p["jobs_per_s"] for f, p in zip(fanin, plain, strict=True)
                ),
                3,
            ),
            "child_release_ms": med(fanin, "child_release_ms"),
            "child_claim_ms": med(fanin, "child_claim_ms"),
        },
    }
    print(json.dumps(result))
    if not args.small:
        (ROOT / "benchmarks" / "results" / "workflows.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
