"""LISTEN/NOTIFY wake-ups on and off: enqueue throughput with 64 producers, hints sent, and a worker
whose listener is killed.

Enqueue: pgbench runs `submit_job` (one job a transaction, autocommit) from 64 connections for
--seconds in a fresh database on the benchmark cluster (fsync and synchronous_commit on), while one
session LISTENs and counts what arrives. Three modes, run in turn in every round:
- off: `jobctl.notify = off`, no hint (workers poll);
- hint: jobctl's hint (jobctl._notify): one transaction per queue sending at a time, and a session
  sending one per queue per half-second window;
- per-job: no jobctl hint, but every submit sends its own NOTIFY in the same transaction, as a
  queue without the limit does: each commit then takes the cluster-wide NOTIFY lock.
Producers share one queue, then producers/8 queues (8 producers a queue), then each has its own
(producer i on queue i % queues).
Ratios are taken within a round, then the median over rounds.

Recovery: a real worker (`jobctl worker`, poll interval 30 s, so only a wake-up can be quick) runs
while its listener's backend is terminated --kills times; each time one job is submitted while the
listener is down (its hint is lost) and one after it is back. Every job must start, each well
before the poll interval: the worker polls once when its listener reconnects.

    .venv/bin/python benchmarks/notify.py             # 64 producers, 3 rounds of 10 s runs, 10 kills
    .venv/bin/python benchmarks/notify.py --small     # 16 producers (1 and 16 queues), 3 s, 1 round, 3 kills
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from jobctl import db
from psycopg.conninfo import conninfo_to_dict

MODES = ("off", "hint", "per-job")
SUBMIT = "select jobctl.submit_job('bench', 'q' || :q, '{}');\n"
LISTENER = (
    "select pid from pg_stat_activity where application_name = 'jobctl-worker' and query = 'listen jobctl'"
)


def noop(job: Any) -> None:
    """The recovery worker's handler (`--handler notify:noop`)."""


class Listener(threading.Thread):
    """LISTEN jobctl and count the notifications until stopped."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("listen jobctl")
        self.count = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.count += sum(1 for _ in self.conn.notifies(timeout=0.2))

    def stop(self) -> int:
        self.done.set()
        self.join()
        self.conn.close()
        return self.count


def pgbench(dsn: str, mode: str, producers: int, queues: int, seconds: int) -> float:
    """Transactions a second of `producers` pgbench clients submitting for `seconds`."""
    with psycopg.connect(dsn) as c:
        row = c.execute("select current_setting('server_version_num')::integer / 10000").fetchone()
    assert row is not None
    script = SUBMIT.replace(";", ", pg_notify('jobctl', 'q' || :q);") if mode == "per-job" else SUBMIT
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as f:
        f.write(f"\\set q :client_id % {queues}\n" + script)
        f.flush()
        p = conninfo_to_dict(dsn)
        env = {**os.environ, "PGOPTIONS": f"-c jobctl.notify={'on' if mode == 'hint' else 'off'}"}
        run = subprocess.run(
            [
                f"/usr/lib/postgresql/{row[0]}/bin/pgbench", "-n", "-f", f.name, "-c", str(producers),
                "-j", "2", "-T", str(seconds), "-h", str(p["host"]), "-p", str(p["port"]),
                "-U", str(p["user"]), str(p["dbname"]),
            ],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", run.stdout)
    if m is None:
        raise RuntimeError(f"pgbench printed no tps: {run.stdout}{run.stderr}")
    return float(m.group(1))


def enqueue(base: str, mode: str, producers: int, queues: int, seconds: int) -> dict[str, Any]:
    dsn = fresh_database(base, "jobctl_notify")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select jobctl.put_tenant('bench')")
    listener = Listener(dsn)
    listener.start()
    try:
        tps = pgbench(dsn, mode, producers, queues, seconds)
        time.sleep(0.5)  # the last commits' notifications
    finally:
        hints = listener.stop()
    with psycopg.connect(dsn) as c:
        row = c.execute("select count(*) from jobctl._ready").fetchone()
    assert row is not None
    jobs = int(row[0])
    return {
        "mode": mode,
        "producers": producers,
        "queues": queues,
        "seconds": seconds,
        "submits_per_s": round(tps),
        "hints_per_s": round(hints / seconds, 1),
        "hints_per_job": round(hints / max(jobs, 1), 4),
    }


def recovery(base: str, kills: int) -> dict[str, Any]:
    """Terminate the worker's listener `kills` times; every job submitted around it must start."""
    dsn = fresh_database(base, "jobctl_notify")
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryFile("w+") as log, psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select jobctl.put_tenant('bench')")
        worker = subprocess.Popen(
            [str(db.ROOT / ".venv" / "bin" / "jobctl"), "worker", "--handler", "notify:noop", "--queue", "rq",
             "--poll-interval", "30", "--concurrency", "4"],
            env={**os.environ, "JOBCTL_DSN": dsn, "PYTHONPATH": str(here)}, stdout=log, stderr=log,
        )  # fmt: skip
        try:
            ids, reconnects = [], []
            pid = wait_for_listener(c, None)
            for _ in range(kills):
                c.execute("select pg_terminate_backend(%s)", (pid,))
                t0 = time.monotonic()
                ids.append(submit(c))  # its hint goes to no one
                pid = wait_for_listener(c, pid)
                reconnects.append(time.monotonic() - t0)
                ids.append(submit(c))
                time.sleep(0.2)
            waits = wait_started(c, ids, timeout=25)
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            log.seek(0)
            output = log.read()
    stranded = sum(1 for w in waits if w is None)
    if stranded:
        print(output[-2000:], file=sys.stderr)
    done = [w for w in waits if w is not None]
    return {
        "mode": "recovery",
        "kills": kills,
        "jobs": len(ids),
        "stranded": stranded,
        "reconnect_max_ms": round(max(reconnects) * 1000, 1),
        "pickup_max_ms": round(max(done) * 1000, 1) if done else None,
        "pickup_p50_ms": round(statistics.median(done) * 1000, 1) if done else None,
        "poll_interval_s": 30,
    }


def submit(c: psycopg.Connection[Any]) -> int:
    row = c.execute("select job_id from jobctl.submit_job('bench', 'rq', '{}')").fetchone()
    assert row is not None
    return int(row[0])


def wait_for_listener(c: psycopg.Connection[Any], old: int | None, timeout: float = 20) -> int:
    """The pid of the worker's listening backend, once it is another than `old`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pids = [int(r[0]) for r in c.execute(LISTENER).fetchall() if r[0] != old]
        if pids:
            return pids[0]
        time.sleep(0.01)
    raise RuntimeError("the worker's listener did not come back")


def wait_started(c: psycopg.Connection[Any], ids: list[int], timeout: float) -> list[float | None]:
    """Seconds from submit to claim for each job (None: never claimed within the timeout)."""
    end = time.monotonic() + timeout
    sql = "select job_id, extract(epoch from started_at - created_at) from jobctl.job where job_id = any(%s)"
    while True:
        rows = {int(r[0]): r[1] for r in c.execute(sql, (ids,)).fetchall()}
        if all(rows.get(i) is not None for i in ids) or time.monotonic() > end:
            return [None if rows.get(i) is None else float(rows[i]) for i in ids]
        time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="16 producers, 3 s runs, one round, 3 kills")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    producers, seconds, rounds, kills = (16, 3, 1, 3) if args.small else (64, 10, 3, 10)
    spreads = (1, producers) if args.small else (1, producers // 8, producers)
    base = args.url or cluster_url("postgres")
    results = []
    for r in range(rounds):
        for q in spreads:
            for mode in MODES:
                row = {"round": r + 1, **enqueue(base, mode, producers, q, seconds)}
                print(json.dumps(row), flush=True)
                results.append(row)
    row = recovery(base, kills)
    print(json.dumps(row), flush=True)
    results.append(row)
    summary = []
    for q in spreads:
        runs = {m: [x for x in results if x.get("queues") == q and x["mode"] == m] for m in MODES}
        for mode in MODES:
            ratios = [
                x["submits_per_s"] / o["submits_per_s"] for x, o in zip(runs[mode], runs["off"], strict=True)
            ]
            s = {
                "mode": mode,
                "queues": q,
                "summary": True,
                "submits_per_s": statistics.median(x["submits_per_s"] for x in runs[mode]),
                "vs_off": round(statistics.median(ratios), 3),
                "hints_per_s": statistics.median(x["hints_per_s"] for x in runs[mode]),
                "hints_per_job": statistics.median(x["hints_per_job"] for x in runs[mode]),
            }
            print(json.dumps(s), flush=True)
            summary.append(s)
    finish(base, "jobctl_notify", results + summary, None if args.small else "notify.jsonl")
    print(f"\n  {producers} producers, {seconds} s a run, median of {rounds} round(s)")
    print(f"  {'mode':8} {'queues':>6} {'submits/s':>10} {'vs off':>7} {'hints/s':>8} {'hints/job':>10}")
    for s in summary:
        print(
            f"  {s['mode']:8} {s['queues']:>6} {s['submits_per_s']:>10} {s['vs_off']:>7} "
            f"{s['hints_per_s']:>8} {s['hints_per_job']:>10}"
        )
    print(
        f"\n  listener killed {row['kills']} times, {row['jobs']} jobs: stranded {row['stranded']}, "
        f"reconnect max {row['reconnect_max_ms']} ms, pickup p50 {row['pickup_p50_ms']} / max "
        f"{row['pickup_max_ms']} ms (poll interval {row['poll_interval_s']} s)"
    )


if __name__ == "__main__":
    main()
