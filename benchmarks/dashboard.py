"""The dashboard at scale: how long `jobctl serve` takes to answer GET / (the overview: the tenant x
queue grid from job_overview, the last hour's charts from job_rates, the fairness strip) and the other
pages, with N jobs across T tenants and Q queues in a fresh database on the benchmark cluster.

Loading: tenants with weights 1..5 (every tenth with max_running), then N jobs through
jobctl.submit_jobs in batches of 10,000 (generate_series, round-robin over tenants and queues; one
in twenty due in an hour), then some history for the rates: C jobs claimed and completed and C/10
failed for good (dead), in batches of 1,000, then jobctl.tick() folds the counters' deltas as the
workers and pg_cron do, and every lane is probed for its oldest due job as the ticks do. The API
server runs as its own process (`jobctl serve`) on loopback; each page is fetched with the session
cookie of an admin token (every tenant: the largest page), first a few warm-up rounds, then R timed
rounds, one request at a time. Prints JSON lines and a table; a full
run writes benchmarks/results/dashboard.jsonl.

    .venv/bin/python benchmarks/dashboard.py                       # 1,000,000 jobs, 1,000 tenants
    .venv/bin/python benchmarks/dashboard.py --jobs 50000 --tenants 100 --rounds 5   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from claim_depth import bench_dsn, finish, fresh_database
from compare import cluster_url

DB = "jobctl_bench_dashboard"
TARGET_MS = 200.0  # the overview's bound at 1,000,000 jobs and 1,000 tenants


def fresh(base: str) -> str:
    return fresh_database(base, DB, naive=False)


def load(dsn: str, jobs: int, tenants: int, queues: int) -> float:
    """Tenants, then `jobs` jobs round-robin over tenants and queues; returns jobs/s."""
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            """select count(jobctl.put_tenant('tenant' || i, 1 + i %% 5,
                   max_running => case when i %% 10 = 0 then 50 end))
               from generate_series(0, %s - 1) as i""",
            (tenants,),
        )
        for start in range(0, jobs, 10000):
            n = min(10000, jobs - start)
            c.execute(
                """select count(*) from jobctl.submit_jobs((
                     select jsonb_agg(jsonb_build_object(
                         'tenant_id', 'tenant' || (i %% %(t)s), 'queue', 'q' || (i / %(t)s %% %(q)s),
                         'payload', jsonb_build_object('i', i))
                         || case when i %% 20 = 0 then jsonb_build_object('run_at', now() + interval '1 hour')
                                 else '{}' end)
                     from generate_series(%(a)s::bigint, %(b)s::bigint) as i))""",
                {"t": tenants, "q": queues, "a": start, "b": start + n - 1},
            )
    return jobs / (time.perf_counter() - started)


def churn(dsn: str, completed: int) -> float:
    """Claim and complete `completed` jobs, then claim and fail for good a tenth as many; jobs/s."""
    done = 0
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as c:
        while done < completed:
            rows = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job('bench', null, %s)",
                (min(1000, completed - done),),
            ).fetchall()
            if not rows:
                break
            c.execute("select jobctl.complete_jobs(%s, %s)", ([r[0] for r in rows], [r[1] for r in rows]))
            done += len(rows)
        failed = 0
        while failed < completed // 10:
            rows = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job('bench', null, %s)",
                (min(1000, completed // 10 - failed),),
            ).fetchall()
            if not rows:
                break
            c.execute(
                """select count(jobctl.fail_job(a.id, a.epoch, 'bench: permanent failure', false))
                   from unnest(%s::bigint[], %s::bigint[]) as a (id, epoch)""",
                ([r[0] for r in rows], [r[1] for r in rows]),
            )
            failed += len(rows)
        while c.execute("select count(*) from jobctl._stat_delta").fetchone() != (0,):
            c.execute("select jobctl.tick()")
        # every lane's oldest due job, as the ticks' probes keep it (jobctl._stat_probe: 1,000 lanes a
        # second while workers tick; this load has no workers)
        c.execute("update jobctl._stat_probed set at = '-infinity'")
        c.execute("select jobctl._stat_probe(1000000)")
        c.execute("vacuum analyze")
    return (done + failed) / (time.perf_counter() - started)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, dsn: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(prefix="jobctl-bench-dashboard-", suffix=".log")[1])
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jobctl.cli", "serve", "--port", str(self.port)],
                env={**os.environ, "JOBCTL_DSN": dsn}, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/api/v1/health", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise SystemExit(f"the server did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)
        self.log.unlink(missing_ok=True)


def timed(client: httpx.Client, path: str, warmup: int, rounds: int) -> dict[str, Any]:
    for _ in range(warmup):
        assert client.get(path).status_code == 200, path
    ms = []
    size = 0
    for _ in range(rounds):
        started = time.perf_counter()
        r = client.get(path)
        ms.append((time.perf_counter() - started) * 1000)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        size = len(r.content)
    ms.sort()
    return {
        "path": path,
        "rounds": rounds,
        "median_ms": round(statistics.median(ms), 1),
        "p95_ms": round(ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))], 1),
        "max_ms": round(ms[-1], 1),
        "bytes": size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--queues", type=int, default=2)
    ap.add_argument("--churn", type=int, default=50_000, help="jobs claimed and completed before timing")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    ap.add_argument("--keep", action="store_true", help=f"keep the database ({DB}) for a look afterwards")
    args = ap.parse_args()
    base = args.url or cluster_url("postgres")
    full = args.jobs >= 1_000_000 and args.tenants >= 1000
    dsn = fresh(base)
    rows: list[dict[str, Any]] = []
    server: Server | None = None
    try:
        submit_per_s = load(dsn, args.jobs, args.tenants, args.queues)
        churn_per_s = churn(dsn, args.churn)
        with psycopg.connect(dsn, autocommit=True) as c:
            token = c.execute(
                "select jobctl.create_api_token(null, jobctl._api_scopes(), 'bench')"
            ).fetchone()
            grid = c.execute("select count(*) from jobctl.job_overview()").fetchone()
            some_job = c.execute("select max(job_id) from jobctl.job where state = 'dead'").fetchone()
        assert token is not None and grid is not None and some_job is not None
        server = Server(dsn)
        setup = {
            "jobs": args.jobs, "tenants": args.tenants, "queues": args.queues, "grid_rows": grid[0],
            "churned": args.churn, "submit_per_s": round(submit_per_s), "churn_per_s": round(churn_per_s),
        }  # fmt: skip
        with httpx.Client(
            base_url=server.url, cookies={"jobctl_session": str(token[0])}, timeout=30
        ) as client:
            for path in ("/", "/queues", "/jobs?tenant=tenant7", f"/jobs/{some_job[0]}", "/tenants"):
                row = setup | timed(client, path, args.warmup, args.rounds)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if server is not None:
            server.stop()
        if args.keep:
            print(f"kept {bench_dsn(base, DB)}")
        else:
            finish(base, DB, rows, "dashboard.jsonl" if full else None)
    grid_rows = rows[0]["grid_rows"]
    print(f"\n{args.jobs:,} jobs, {args.tenants:,} tenants x {args.queues} queues ({grid_rows:,} grid rows)")
    print(f"{'page':<28} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'KiB':>6}")
    for r in rows:
        kib = r["bytes"] / 1024
        print(f"{r['path']:<28} {r['median_ms']:>10} {r['p95_ms']:>8} {r['max_ms']:>8} {kib:>6.0f}")
    overview = rows[0]
    verdict = "within" if overview["p95_ms"] < TARGET_MS else "OVER"
    print(f"overview p95 {overview['p95_ms']} ms: {verdict} the {TARGET_MS:.0f} ms bound")


if __name__ == "__main__":
    main()
