"""The worker's per-job budget: where a no-op job's microseconds go, on both sides of the wire.

    .venv/bin/python benchmarks/worker_budget.py [--jobs 60000] [--concurrency 500] [--rounds 3]

Each round: a fresh database on the benchmark cluster (`.bench-pg/`, as compare.py), N no-op jobs,
then one real `jobctl.worker.Worker` process (async no-op handler, its defaults but the concurrency,
on the event loop `jobctl worker` runs on) drains them while
- py-spy samples the worker's Python stacks (1,000 a second, only while it holds the GIL: not while
  it waits in epoll); each sample is given to the first stage below that its stack names, and the
  stages share the process's CPU time a job (`time.process_time` over the drain) in proportion to
  their samples (uvloop's own loop is C: its samples end in `Runner.run`, in the last stage);
- the server counts its functions' time (`track_functions = all` for the worker's sessions:
  claim_job, complete_jobs, tick and the rest, pg_stat_user_functions) and a sampler reads the
  worker backends' wait events every millisecond (pg_stat_activity), so that a commit waiting for
  its WAL flush (`IO:WALSync`, `LWLock:WALWrite`) is told from CPU.
Prints a JSON line per round and the table of medians (benchmarks/results/worker_budget.jsonl).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import cluster_url  # noqa: E402

RESULTS = HERE / "results" / "worker_budget.jsonl"
PY_SPY = Path(sys.executable).parent / "py-spy"

# (stage, frame names that put a sample in it), first match wins: the job's way through the worker
STAGES = [
    ("claim rows: payload decode", ("decode_payload",)),
    ("claim rows: Job objects", ("Running.job",)),
    ("dispatch: slot and task per job", ("Running.start",)),
    ("outcome booking (slot freed, outbox)", ("Running._handler_ended", "Running._report")),
    ("handler call (task step)", ("Running._run_async",)),
    ("claim call (psycopg: send, wait, rows)", ("Claimer._claim", "Claimer.run")),
    ("completion batch (arrays, call, answers)", ("Outbox.",)),
    ("heartbeat, tick, registry", ("heartbeat_loop", "tick_loop", "progress_loop", "Registration")),
    ("metrics", ("WorkerMetrics", "prometheus")),
    ("event loop and pool", ("",)),
]

DRAIN = """
import asyncio, json, sys, time
from jobctl.worker import Worker
try:
    from jobctl.worker import run_loop  # the event loop jobctl worker runs on
except ImportError:  # a tree from before it (measured for the budget's "before")
    run_loop = asyncio.run
n, concurrency, dsn = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
done = 0
async def handle(job):
    global done
    done += 1
async def main():
    worker = Worker(handle, dsn=dsn, queues=["bench"], concurrency=concurrency, grace=5.0)
    task = asyncio.create_task(worker.run())
    while done == 0:
        await asyncio.sleep(0.001)
    cpu0, t0 = time.process_time(), time.perf_counter()
    while done < n:
        await asyncio.sleep(0.005)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    worker.request_stop()
    await task
    print(json.dumps({"jobs_per_s": n / seconds, "cpu_us_per_job": cpu / n * 1e6}))
run_loop(main())
"""


def fresh(admin: str, url: str, jobs: int) -> None:
    from jobctl import migrate, queries
    from psycopg.types.json import Jsonb

    with psycopg.connect(admin, autocommit=True) as c:
        c.execute("drop database if exists budget with (force)")
        c.execute("create database budget")
    with psycopg.connect(url) as conn:
        migrate.migrate(conn)
    with psycopg.connect(url, autocommit=True) as conn:
        for start in range(0, jobs, 1000):
            specs = [
                {"tenant_id": "bench", "queue": "bench", "payload": {"n": n}}
                for n in range(start, start + 1000)
            ]
            conn.execute(queries.SUBMIT_JOBS, {"jobs": Jsonb(specs)}).fetchall()
        conn.execute("alter database budget set track_functions = 'all'")
        conn.execute("select pg_stat_reset()")
        conn.execute("checkpoint")


def sample_waits(url: str, stop: threading.Event, waits: collections.Counter[str]) -> None:
    """The worker backends' wait events (None: on CPU), every millisecond, while a statement runs."""
    with psycopg.connect(url, autocommit=True) as c:
        while not stop.is_set():
            for (event,) in c.execute(
                "select coalesce(wait_event_type || ':' || wait_event, 'CPU') from pg_stat_activity"
                " where application_name = 'jobctl-worker' and state = 'active'"
            ):
                waits[event] += 1
            time.sleep(0.001)


def stage_of(stack: str) -> str:
    for stage, names in STAGES:
        if any(name in stack for name in names):
            return stage
    return STAGES[-1][0]


def one_round(admin: str, url: str, jobs: int, concurrency: int) -> dict[str, Any]:
    fresh(admin, url, jobs)
    waits: collections.Counter[str] = collections.Counter()
    stop = threading.Event()
    sampler = threading.Thread(target=sample_waits, args=(url, stop, waits))
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.txt"
        script = Path(tmp) / "drain.py"
        script.write_text(DRAIN)
        sampler.start()
        try:
            out = subprocess.run(
                [str(PY_SPY), "record", "--gil", "-r", "1000", "-f", "raw", "-o", str(raw), "--",
                 sys.executable, str(script), str(jobs), str(concurrency), url],
                capture_output=True, text=True, check=True, env={**os.environ, "JOBCTL_LOG_LEVEL": "warning"},
            )  # fmt: skip
        finally:
            stop.set()
            sampler.join()
        drain = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
        samples: collections.Counter[str] = collections.Counter()
        for line in raw.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not any(name in stack for name in ("run_loop", "run_until_complete", "Worker.run")):
                continue  # imports, setup
            samples[stage_of(stack)] += int(count)
    total = sum(samples.values()) or 1
    python = {s: round(drain["cpu_us_per_job"] * samples[s] / total, 2) for s, _ in STAGES}
    with psycopg.connect(url, autocommit=True) as c:
        server = {
            name: round(float(ms) * 1000 / jobs, 2)
            for name, ms in c.execute(
                "select funcname, total_time from pg_stat_user_functions"
                " where funcname in ('claim_job', 'complete_jobs', 'tick', 'heartbeat', 'worker_beat')"
            )
        }
    seen = sum(waits.values()) or 1
    return {
        "jobs": jobs,
        "concurrency": concurrency,
        "jobs_per_s": round(drain["jobs_per_s"]),
        "python_us_per_job": round(drain["cpu_us_per_job"], 2),
        "python": python,
        "server_us_per_job": server,
        "worker_backends_waits": {k: round(v / seen, 3) for k, v in waits.most_common(8)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=60_000)
    ap.add_argument("--concurrency", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--label", default="", help="recorded with each line (e.g. the commit measured)")
    a = ap.parse_args()
    admin = cluster_url("postgres")
    url = admin.rsplit("/", 1)[0] + "/budget"
    rows = []
    for rnd in range(1, a.rounds + 1):
        row = {"round": rnd, "label": a.label, **one_round(admin, url, a.jobs, a.concurrency)}
        print(json.dumps(row), flush=True)
        rows.append(row)
        with open(RESULTS, "a") as f:
            f.write(json.dumps(row) + "\n")

    def med(get: Any) -> float:
        return statistics.median(get(r) for r in rows)

    print(f"\nper-job budget, medians of {len(rows)} rounds ({a.jobs:,} jobs, concurrency {a.concurrency}):")
    rate, python = med(lambda r: r["jobs_per_s"]), med(lambda r: r["python_us_per_job"])
    print(f"  drain {rate:,.0f} jobs/s, worker Python {python:.1f} us a job")
    for stage, _ in STAGES:
        print(f"  python  {stage:<44} {med(lambda r, s=stage: r['python'][s]):6.2f} us")
    for name in ("claim_job", "complete_jobs", "tick", "heartbeat", "worker_beat"):
        print(f"  server  {name:<44} {med(lambda r, n=name: r['server_us_per_job'].get(n, 0.0)):6.2f} us")
    events = sorted({e for r in rows for e in r["worker_backends_waits"]})
    for e in events:
        share = med(lambda r, e=e: r["worker_backends_waits"].get(e, 0.0))
        print(f"  worker backends' time in {e:<30} {share:.3f}")


if __name__ == "__main__":
    main()
