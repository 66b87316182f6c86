"""The cost of a /metrics scrape with the job series, at TENANTS tenants x QUEUES queues (default
1,000 x 10: 10,000 series sets, about 540,000 sample lines).

A fresh database gets one due job per tenant and queue (real submits, so that `pending` is real and
the oldest due job a real probe, made as the ticks make it), then its counter rows (jobctl._stat)
are given random event counts and histogram buckets. A real API server (`jobctl serve`, a
subprocess) is then scraped:
- cold, admin token: every tenant, the body rendered afresh (each round waits out JOB_SERIES_TTL);
- warm, admin token: a second scrape within the TTL (the kept body);
- cold, tenant token: one tenant's QUEUES series sets;
- no token: the process series only;
and, in this process, the two halves of a cold scrape: the SQL (job_counts through
METRICS_JOB_COUNTS, fetched as the API fetches it) and the rendering (render_job_series).
Prints one JSON line per measurement (median, p95, min in ms over ROUNDS) and writes them to
benchmarks/results/metrics.jsonl (not with --small).

    .venv/bin/python benchmarks/metrics.py                    # the benchmark cluster, 1,000 x 10, 15 rounds
    .venv/bin/python benchmarks/metrics.py --url "$(cat .test-pg/dsn)"   # a cluster of your own
    .venv/bin/python benchmarks/metrics.py --small            # 50 x 4, 3 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from claim_depth import fresh_database
from compare import cluster_url
from jobctl import queries
from jobctl.api.metrics import JOB_SERIES_TTL, render_job_series
from prometheus_client.parser import text_string_to_metric_families

RESULTS = Path(__file__).resolve().parent / "results"
DB = "jobctl_metrics_bench"

# the counters as the workers would have left them: random events, histograms per bucket
FILL_COUNTERS = """
with b as (select cardinality(jobctl.histogram_bounds()) as n)
update jobctl._stat as s set
    submitted = s.submitted + 1000 + (random() * 100000)::bigint,
    claimed = (random() * 100000)::bigint,
    succeeded = (random() * 90000)::bigint,
    failed = (random() * 5000)::bigint,
    died = (random() * 500)::bigint,
    withdrawn = (random() * 100)::bigint,
    retried = (random() * 10)::bigint,
    fenced = (random() * 10)::bigint,
    running = (random() * 20)::bigint,
    dead = (random() * 500)::bigint,
    completed = (random() * 90000)::bigint,
    wait_buckets = array(select (random() * 10000)::bigint from generate_series(0, b.n)),
    wait_seconds = random() * 1e6,
    run_buckets = array(select (random() * 10000)::bigint from generate_series(0, b.n)),
    run_seconds = random() * 1e7
from b
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(base: str, tenants: int, queues: int) -> str:
    dsn = fresh_database(base, DB, naive=False)
    with psycopg.connect(dsn, autocommit=True) as c:
        pairs = [(t, q) for t in range(tenants) for q in range(queues)]
        for start in range(0, len(pairs), 5000):
            jobs = [
                {"tenant_id": f"tenant-{t:04d}", "queue": f"queue-{q:02d}", "payload": {}}
                for t, q in pairs[start : start + 5000]
            ]
            c.execute(queries.SUBMIT_JOBS, {"jobs": json.dumps(jobs)})
        c.execute("select jobctl._stat_fold(1000000)")  # the deltas into _stat, as a tick does
        # the oldest due job of every lane, as the ticks' probes (jobctl._stat_probe) keep it
        c.execute("update jobctl._stat_probed set at = '-infinity'")
        c.execute("select jobctl._stat_probe(1000000)")
        c.execute(FILL_COUNTERS)
        c.execute("vacuum analyze jobctl._stat")
        row = c.execute("select count(*) from jobctl._stat").fetchone()
        assert row is not None and row[0] == len(pairs), row
    return dsn


def token(dsn: str, tenant: str | None) -> str:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute("select jobctl.create_api_token(%s, array['jobs:read'])", (tenant,)).fetchone()
        assert row is not None
        return str(row[0])


def figures(name: str, ms: list[float], **extra: Any) -> dict[str, Any]:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    row = {
        "measure": name,
        "rounds": len(ms),
        "median_ms": round(statistics.median(ms), 1),
        "p95_ms": round(p95, 1),
        "min_ms": round(ordered[0], 1),
        **extra,
    }
    print(json.dumps(row), flush=True)
    return row


def scrape(client: httpx.Client, bearer: str | None) -> tuple[float, bytes]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    t0 = time.perf_counter()
    r = client.get("/metrics", headers=headers)
    elapsed = (time.perf_counter() - t0) * 1000
    r.raise_for_status()
    return elapsed, r.content


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="50 tenants x 4 queues, 3 rounds; nothing written")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--queues", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    tenants, queues, rounds = (50, 4, 3) if args.small else (args.tenants, args.queues, args.rounds)
    base = args.url or cluster_url("postgres")
    t0 = time.perf_counter()
    dsn = prepare(base, tenants, queues)
    print(f"loaded {tenants} x {queues} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    admin, one = token(dsn, None), token(dsn, "tenant-0000")
    results: list[dict[str, Any]] = []
    setup = {"tenants": tenants, "queues": queues, "series_sets": tenants * queues}

    # the two halves of a cold scrape, in this process
    sql_ms, render_ms = [], []
    with psycopg.connect(dsn, autocommit=True) as c:
        bounds_row = c.execute(queries.HISTOGRAM_BOUNDS).fetchone()
        assert bounds_row is not None
        for _ in range(rounds):
            t = time.perf_counter()
            rows = c.execute(queries.METRICS_JOB_COUNTS).fetchall()
            sql_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            body = render_job_series(rows, bounds_row[0])
            render_ms.append((time.perf_counter() - t) * 1000)
    lines = body.count(b"\n")
    results.append(figures("sql: job_counts fetched", sql_ms, **setup))
    results.append(figures("render: exposition text", render_ms, **setup, lines=lines, bytes=len(body)))

    port = free_port()
    env = {**os.environ, "JOBCTL_DSN": dsn}
    cmd = [sys.executable, "-c", "from jobctl.api import serve_command; serve_command()", "--port", str(port)]
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.get("/api/v1/health")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("the API server did not start") from None
                    time.sleep(0.1)
            _, first = scrape(client, admin)  # a first scrape warms the pool and the plans
            families = {f.name for f in text_string_to_metric_families(first.decode())}
            assert "jobctl_job_wait_seconds" in families, sorted(families)
            cold, warm, tenant_cold, bare = [], [], [], []
            for _ in range(rounds):
                time.sleep(JOB_SERIES_TTL + 0.05)
                ms, got = scrape(client, admin)
                cold.append(ms)
                warm.append(scrape(client, admin)[0])
                time.sleep(JOB_SERIES_TTL + 0.05)
                tenant_cold.append(scrape(client, one)[0])
                bare.append(scrape(client, None)[0])
            results.append(figures("scrape: admin token, cold", cold, **setup, bytes=len(got)))
            results.append(figures("scrape: admin token, within the TTL", warm, **setup))
            results.append(
                figures("scrape: tenant token, cold", tenant_cold, **setup, tenant_series_sets=queues)
            )
            results.append(figures("scrape: no token", bare, **setup))
    finally:
        server.terminate()
        server.wait(10)
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(f'drop database if exists "{DB}" with (force)')
    if not args.small:
        RESULTS.mkdir(exist_ok=True)
        meta = {"python": platform.python_version(), "cpus": os.cpu_count(), "ttl_s": JOB_SERIES_TTL}
        with open(RESULTS / "metrics.jsonl", "w") as f:
            f.writelines(json.dumps({**r, **meta}) + "\n" for r in results)


if __name__ == "__main__":
    main()
