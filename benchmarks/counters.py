"""What a change costs on the hot path: submit and claim + complete throughput of jobctl at HEAD
against jobctl at a base commit, side by side in one run. Made for the counters (base
033a8f4, benchmarks/results/counters.json); also run for the dependencies, batches and
scoped keys, which jobs without them must not pay for (make bench-overhead: base dae4780,
benchmarks/results/workflow_overhead.json).

Two scratch databases on the given cluster: one installed from the base commit's schema (`jobctl
migrate --print` of a git worktree at BASE), one from this checkout. Each round runs the same
workloads on both, in alternating order: single submits, batches of 100, single claim + complete,
and claims of 50 completed in one complete_jobs, each by two client processes at once. Prints, over
ROUNDS rounds, the median throughput of each side and the median ratio HEAD / base (1.00: no cost;
the target is >= 0.95), and the same for the CPU time the server's backends spent a job (read from
/proc: the cluster runs on this machine), which the shared machine's noise moves far less than
wall time; writes benchmarks/results/counters.json.

    .venv/bin/python benchmarks/counters.py [--dsn DSN] [--base 033a8f4] [--rounds 5] [--out counters.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from compare import cluster_url
from psycopg import conninfo

ROOT = Path(__file__).resolve().parent.parent
N = 2000  # jobs per client per workload
CLIENTS = 2


def schema_script(base: str | None) -> str:
    """The whole schema as one psql script, from this checkout or from a worktree at base."""
    if base is None:
        src = ROOT / "python"
        return subprocess.run(
            [sys.executable, "-c", "from jobctl.cli import main; main()", "migrate", "--print"],
            env={**os.environ, "PYTHONPATH": str(src)},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), base],
            check=True,
            capture_output=True,
        )
        # the package's schema subpackages as the worktree has them (an editable install of this
        # checkout would otherwise map jobctl.sql and jobctl.migrations to this checkout's files)
        (tree / "python" / "jobctl" / "sql").symlink_to(tree / "sql")
        (tree / "python" / "jobctl" / "migrations").symlink_to(tree / "migrations")
        try:
            return subprocess.run(
                [sys.executable, "-c", "from jobctl.cli import main; main()", "migrate", "--print"],
                env={**os.environ, "PYTHONPATH": str(tree / "python")},
                check=True,
                capture_output=True,
                text=True,
                cwd=tree,
            ).stdout
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)


def make_db(dsn: str, name: str, script: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    target = conninfo.make_conninfo(dsn, dbname=name)
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as f:
        f.write(script)
        f.flush()
        done = subprocess.run(
            ["psql", target, "-qX", "-v", "ON_ERROR_STOP=1", "-f", f.name], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"installing the schema into {name} failed: {done.stderr.strip()}")
    return target


def client(dsn: str, workload: str, tenant: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set jobctl.payload_keys = '{}'")
        pid = conn.info.backend_pid
        t0, cpu0 = time.perf_counter(), backend_cpu(pid)
        if workload == "submit":
            for _ in range(N):
                conn.execute("select jobctl.submit_job(%s, 'bench', '{}')", [tenant])
        elif workload == "submit_batch":
            batch = json.dumps([{"tenant_id": tenant, "queue": "bench", "payload": {}}] * 100)
            for _ in range(N // 100):
                conn.execute("select count(*) from jobctl.submit_jobs(%s::jsonb)", [batch])
        elif workload == "claim":
            for _ in range(N):
                row = conn.execute(
                    "select job_id, lease_epoch from jobctl.claim_job('bench-w', array['bench'], 1)"
                ).fetchone()
                if row is None:
                    break
                conn.execute("select jobctl.complete_job(%s, %s, null)", row)
        elif workload == "claim_batch":
            for _ in range(N // 50):
                rows = conn.execute(
                    "select job_id, lease_epoch from jobctl.claim_job('bench-w', array['bench'], 50)"
                ).fetchall()
                if not rows:
                    break
                conn.execute(
                    "select count(*) from jobctl.complete_jobs(%s, %s, %s::jsonb[])",
                    [[r[0] for r in rows], [r[1] for r in rows], [None] * len(rows)],
                )
        out.put((time.perf_counter() - t0, backend_cpu(pid) - cpu0))


def backend_cpu(pid: int) -> float:
    """The CPU seconds (user + system) a server backend of this machine's cluster has used: what the
    statements cost the database, without the clients' and the machine's noise in wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(dsn: str, workload: str) -> tuple[float, float]:
    """Jobs a second of CLIENTS concurrent clients (each its own tenant), and the backends' CPU
    milliseconds a job."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=client, args=(dsn, workload, f"bench{i}", out)) for i in range(CLIENTS)]
    for p in procs:
        p.start()
    got = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    return CLIENTS * N / max(t for t, _ in got), 1000 * sum(c for _, c in got) / (CLIENTS * N)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dsn", help="a superuser DSN of a cluster to use (default: the benchmark cluster, .bench-pg/)"
    )
    ap.add_argument("--base", default="033a8f4", help="the commit without the counters")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="counters.json", help="its file under benchmarks/results/")
    args = ap.parse_args()
    if args.dsn is None:
        args.dsn = cluster_url("postgres")

    tag = uuid.uuid4().hex[:6]
    sides = {
        "base": make_db(args.dsn, f"bench_counters_base_{tag}", schema_script(args.base)),
        "head": make_db(args.dsn, f"bench_counters_head_{tag}", schema_script(None)),
    }
    workloads = ["submit", "submit_batch", "claim", "claim_batch"]
    rates: dict[str, dict[str, list[float]]] = {w: {"base": [], "head": []} for w in workloads}
    cpu: dict[str, dict[str, list[float]]] = {w: {"base": [], "head": []} for w in workloads}
    try:
        for r in range(args.rounds):
            order = ["base", "head"] if r % 2 == 0 else ["head", "base"]
            for side in order:
                # submit and submit_batch fill the queue that claim and claim_batch drain
                for w in workloads:
                    rate, ms = run(sides[side], w)
                    rates[w][side].append(rate)
                    cpu[w][side].append(ms)
                with psycopg.connect(sides[side], autocommit=True) as conn:
                    conn.execute("select jobctl.tick(false)")
                    conn.execute("vacuum analyze")
            print(
                f"round {r + 1}: "
                + ", ".join(
                    f"{w} {rates[w]['head'][-1] / rates[w]['base'][-1]:.3f}"
                    f" (cpu {cpu[w]['head'][-1] / cpu[w]['base'][-1]:.3f})"
                    for w in workloads
                )
            )
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            for target in sides.values():
                conn.execute(
                    f'drop database if exists "{conninfo.conninfo_to_dict(target)["dbname"]}" with (force)'
                )

    result = {
        "base": args.base,
        "rounds": args.rounds,
        "clients": CLIENTS,
        "jobs_per_client": N,
        "workloads": {},
    }
    print(
        f"\n{'workload':<14}{'base jobs/s':>12}{'head jobs/s':>12}{'head/base':>10}"
        f"{'base cpu ms':>13}{'head cpu ms':>13}{'head/base':>10}"
    )
    for w in workloads:
        base, head = statistics.median(rates[w]["base"]), statistics.median(rates[w]["head"])
        ratio = statistics.median([h / b for h, b in zip(rates[w]["head"], rates[w]["base"], strict=True)])
        base_cpu, head_cpu = statistics.median(cpu[w]["base"]), statistics.median(cpu[w]["head"])
        cpu_ratio = statistics.median([h / b for h, b in zip(cpu[w]["head"], cpu[w]["base"], strict=True)])
        result["workloads"][w] = {  # type: ignore[index]
            "base_median": round(base, 1),
            "head_median": round(head, 1),
            "ratio_median": round(ratio, 3),
            "base_cpu_ms_per_job": round(base_cpu, 4),
            "head_cpu_ms_per_job": round(head_cpu, 4),
            "cpu_ratio_median": round(cpu_ratio, 3),
        }
        print(
            f"{w:<14}{base:>12.0f}{head:>12.0f}{ratio:>10.3f}{base_cpu:>13.4f}{head_cpu:>13.4f}{cpu_ratio:>10.3f}"
        )
    (ROOT / "benchmarks" / "results" / args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
