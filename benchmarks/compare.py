"""jobctl and its peers side by side: enqueue, drain, pickup latency, on one private cluster.

    .venv/bin/python benchmarks/compare.py              # full: 3 rounds, 100,000-job drains (make bench)
    .venv/bin/python benchmarks/compare.py --quick      # about 5 minutes (make bench-quick)

One PostgreSQL cluster (`.bench-pg/`: shared_buffers 1GB, TCP on 127.0.0.1, everything else
default: fsync and synchronous_commit on), a fresh database for every measurement, each system's
own schema install, CHECKPOINT before each timed phase. Systems run interleaved within a round,
so that noise on this shared 2-core machine falls on all of them alike. Each system is driven by an
adapter (benchmarks/adapters/README.md): jobctl with its real worker, the peers with theirs at
their documented fastest settings (SYSTEMS below; measured in peers-bench.md).

Workloads: E-bulk (batch API, 1,000 per call), E-single (one job per call and transaction, 8
clients), D-drain (N pending jobs, the worker's best setting, until none is unfinished; every job
must have run exactly once), L-pickup (idle workers, then 500/s and 50/s offered; enqueue to
handler start). Per measurement also: transaction IDs and WAL bytes per job, the size of the
system's relations and their dead tuples afterwards. Prints JSON lines and a table of medians,
ranges and jobctl/peer ratios, and keeps both in benchmarks/results/runs/<run>-<mode>.{jsonl,txt}
(not committed; docs/benchmarks.md cites copies of the runs it quotes).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ADAPTERS = HERE / "adapters"
RESULTS = HERE / "results"
PEERS_PY = HERE / ".venv-peers" / "bin" / "python"
DB = "bench"


@dataclass
class System:
    name: str
    cmd: list[str]
    unfinished_sql: str
    schemas: list[str]
    setting: dict[str, Any]  # the worker's best setting, for drains and pickup; "procs": processes to start
    needs: Path | None = None  # what must exist for the system to run (installed by make bench-setup)
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] | None = None  # the adapter's environment (None: this one)
    workloads: tuple[str, ...] | None = None  # the workloads it runs (None: all)


JOBCTL_UNFINISHED = (
    "select (select count(*) from jobctl._ready) + (select count(*) from jobctl._delayed)"
    " + (select count(*) from jobctl._running)"
)
SYSTEMS = {
    s.name: s
    for s in [
        System(
            "jobctl",
            [sys.executable, str(ADAPTERS / "jobctl_adapter.py")],
            JOBCTL_UNFINISHED,
            ["jobctl"],
            # one `jobctl worker` a core, as the peers run two processes; concurrency 500 where its
            # default is 10: the handler is a no-op, so a claim fills 500 slots (docs/benchmarks.md)
            {"procs": 2, "concurrency": 500},
            notes="the real worker, 2 processes x concurrency 500: leases, heartbeats, fencing, history,"
            " fairness all on",
        ),
        System(
            "jobctl-sql",
            [sys.executable, str(ADAPTERS / "jobctl_sql_adapter.py")],
            JOBCTL_UNFINISHED,
            ["jobctl"],
            {"procs": 2, "max_jobs": 500},
            workloads=("d-drain", "l-pickup"),  # its enqueues are jobctl's own
            notes="the engine's ceiling: a thin loop over the SQL contract (claim_job 500, no-op,"
            " complete_jobs, LISTEN + 10 ms poll), no worker",
        ),
        System(
            "graphile-worker",
            ["node", str(ADAPTERS / "graphile.mjs")],
            "select count(*) from graphile_worker._private_jobs",
            ["graphile_worker"],
            {"procs": 2, "concurrency": 10, "localQueueSize": 100, "completeJobBatchDelay": 250},
            needs=ADAPTERS / "node_modules" / "graphile-worker",
            notes="0.17.3 (0.18 needs Node 22); local queue 100 and batched completion 250 ms",
        ),
        System(
            "pg-boss",
            ["node", str(ADAPTERS / "pgboss.mjs")],
            "select count(*) from pgboss.job where name = 'noop' and state < 'completed'",
            ["pgboss"],
            {"procs": 1, "works": 4, "batchSize": 5000, "pollingIntervalSeconds": 0.5},
            needs=ADAPTERS / "node_modules" / "pg-boss",
            notes="10.4.2 (11+ needs Node 22); polls (0.5 s is its minimum), no cross-process NOTIFY",
        ),
        System(
            "pgqueuer",
            [str(PEERS_PY), str(ADAPTERS / "pgqueuer_adapter.py")],
            "select count(*) from pgqueuer",
            ["public"],
            {"procs": 2, "batch_size": 100},
            needs=PEERS_PY,
            notes="1.6.0, asyncpg",
        ),
        System(
            "procrastinate",
            [str(PEERS_PY), str(ADAPTERS / "procrastinate_adapter.py")],
            "select count(*) from procrastinate_jobs where status in ('todo', 'doing')",
            ["public"],
            {"procs": 2, "concurrency": 10},
            needs=PEERS_PY,
            notes="3.10.0; drains use --drain-slow jobs (it runs ~700 jobs/s)",
            extra={"slow": True},
        ),
    ]
}
WORKLOADS = ("e-bulk", "e-single", "d-drain", "l-pickup")


SIZES = {
    "full": {"bulk": 100_000, "single": 20_000, "drain": 100_000, "drain_slow": 10_000, "pickup_s": 20},
    "quick": {"bulk": 30_000, "single": 4_000, "drain": 30_000, "drain_slow": 3_000, "pickup_s": 5},
    "smoke": {"bulk": 2_000, "single": 200, "drain": 2_000, "drain_slow": 300, "pickup_s": 1},
}


def jobctl_at(spec: str, trees: Path) -> System:
    """jobctl as it was at a git ref (`NAME=REF`), its adapter, package and SQL from a worktree of that
    ref, so that a change is measured beside what it replaces in one run."""
    name, _, ref = spec.partition("=")
    tree = trees / name
    if not tree.exists():
        add = ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref or name]
        subprocess.run(add, check=True)
    base = SYSTEMS["jobctl"]
    return System(
        f"jobctl@{name}",
        [sys.executable, str(tree / "benchmarks" / "adapters" / "jobctl_adapter.py")],
        base.unfinished_sql,
        base.schemas,
        base.setting,
        notes=f"jobctl at {ref or name}, from a worktree",
        env={**os.environ, "PYTHONPATH": str(tree / "python")},
    )


# --- the cluster -----------------------------------------------------------------------------


def cluster_url(db: str) -> str:
    """Start (idempotently) the benchmark cluster and return a URL for database db."""
    env = {
        **os.environ,
        "JOBCTL_PGNAME": ".bench-pg",
        "JOBCTL_PG_PORT": os.environ.get("JOBCTL_BENCH_PORT", "55440"),
        "JOBCTL_PG_DB": "postgres",
        # later lines win in postgresql.conf: the benchmark settings over bin/db's
        "JOBCTL_PG_EXTRA_CONF": "shared_buffers = '1GB'\nlisten_addresses = '127.0.0.1'\n"
        "cron.database_name = 'postgres'\nmax_connections = 300",
    }
    subprocess.run([str(ROOT / "bin" / "db")], env=env, check=True, stdout=subprocess.DEVNULL)
    port = (ROOT / ".bench-pg" / "port").read_text().strip()
    return f"postgresql://postgres@127.0.0.1:{port}/{db}"


def fresh_database(admin_url: str, url: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f"drop database if exists {DB} with (force)")
        c.execute(f"create database {DB}")


def counters(url: str) -> tuple[int, int]:
    """The next transaction ID (not consuming one) and the WAL insert position."""
    with psycopg.connect(url, autocommit=True) as c:
        row = c.execute(
            "select txid_snapshot_xmax(txid_current_snapshot()), pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


def footprint(url: str, schemas: list[str]) -> dict[str, Any]:
    """Size and dead tuples of the system's relations (call once its workers have exited: a backend's
    statistics reach pg_stat_user_tables when it ends or idles)."""
    time.sleep(1.0)
    with psycopg.connect(url, autocommit=True) as c:
        row = c.execute(
            """
            select coalesce(sum(pg_total_relation_size(c.oid)), 0),
                   coalesce(sum(s.n_dead_tup), 0)
            from pg_class as c
            join pg_namespace as n on n.oid = c.relnamespace
            left join pg_stat_user_tables as s on s.relid = c.oid
            where n.nspname = any(%s) and c.relkind in ('r', 'm')
            """,
            (schemas,),
        ).fetchone()
        assert row is not None
        return {"relations_mib": round(int(row[0]) / 2**20, 1), "dead_tuples": int(row[1])}


def checkpoint(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("checkpoint")


def unfinished(url: str, sql: str) -> int:
    with psycopg.connect(url, autocommit=True) as c:
        return int(c.execute(sql).fetchone()[0])  # type: ignore[index]


# --- running adapters -------------------------------------------------------------------------


def adapter(system: System, *args: str, timeout: float = 1800) -> dict[str, Any]:
    out = subprocess.run(
        [*system.cmd, *args], capture_output=True, text=True, timeout=timeout, check=False, env=system.env
    )
    if out.returncode != 0:
        raise RuntimeError(f"{system.name} {args[0]} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else {}


class Workers:
    """Worker processes of one system, started, released with `go`, stopped with SIGTERM."""

    def __init__(self, system: System, url: str, setting: dict[str, Any], tmp: Path) -> None:
        procs = int(setting.get("procs", 1))
        own = {k: v for k, v in setting.items() if k != "procs"}
        self.outs = [tmp / f"{system.name}-{i}.json" for i in range(procs)]
        self.logs = [tmp / f"{system.name}-{i}.log" for i in range(procs)]
        self.procs = []
        for out, log in zip(self.outs, self.logs, strict=True):
            with open(log, "w") as err:  # the child has its own copy of the descriptor
                self.procs.append(
                    subprocess.Popen(
                        [*system.cmd, "work", "--dsn", url, "--setting", json.dumps(own), "--out", str(out)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=err,
                        text=True,
                        env=system.env,
                    )
                )
        for p, log in zip(self.procs, self.logs, strict=True):
            assert p.stdout is not None
            line = p.stdout.readline().strip()
            if line != "ready":
                self.stop()
                raise RuntimeError(f"{system.name} worker did not start: {line!r}: {log.read_text()[-1000:]}")

    def go(self) -> None:
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()

    def stop(self) -> dict[str, Any]:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        handled: list[int] = []
        latency: list[float] = []
        cpu = 0.0
        for out in self.outs:
            if out.exists():
                doc = json.loads(out.read_text())
                handled += doc["handled"]
                latency += doc["latency_ms"]
                cpu += doc["cpu_s"]
        return {"handled": handled, "latency_ms": latency, "cpu_s": cpu}


def exactly_once(handled: list[int], expected: range) -> dict[str, int]:
    seen: dict[int, int] = {}
    for n in handled:
        seen[n] = seen.get(n, 0) + 1
    return {
        "duplicates": sum(c - 1 for c in seen.values() if c > 1),
        "missing": sum(1 for n in expected if n not in seen),
    }


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None}
    q = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return {"p50_ms": round(q[49], 2), "p95_ms": round(q[94], 2), "p99_ms": round(q[98], 2)}


# --- workloads ----------------------------------------------------------------------------------


def measure(url: str, system: System, phase: Any) -> dict[str, Any]:
    """Run phase() between two readings of the xid and WAL counters."""
    xid0, wal0 = counters(url)
    result: dict[str, Any] = phase()
    xid1, wal1 = counters(url)
    jobs = max(int(result.get("jobs", 0)), 1)
    result["xids_per_job"] = round((xid1 - xid0) / jobs, 3)
    result["wal_bytes_per_job"] = round((wal1 - wal0) / jobs)
    return result


BARE_TABLE = """
create table bare_job (
    job_id bigint primary key, created_at timestamptz not null default now(), tenant_id text not null,
    queue text not null, priority smallint not null default 0, run_at timestamptz not null default now(),
    state text not null default 'pending', payload jsonb not null
)
"""
BARE_INSERT = """
insert into bare_job (job_id, tenant_id, queue, payload)
select g, 'bench', 'bench', jsonb_build_object('n', g) from generate_series(%s::bigint, %s::bigint) as g
"""


def bare_insert(url: str, jobs: int, batch: int = 1000) -> float:
    """The bound of a bulk enqueue on this cluster: the same rows, a statement of 1,000 a transaction,
    into one plain table with a primary key (no queue rows, no checks): jobs/s."""
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("drop table if exists bare_job")
        c.execute(BARE_TABLE)
        c.execute("checkpoint")
        t0 = time.perf_counter()
        for start in range(0, jobs, batch):
            c.execute(BARE_INSERT, (start, min(start + batch, jobs) - 1))
        seconds = time.perf_counter() - t0
        c.execute("drop table bare_job")
    return jobs / seconds


def e_bulk(url: str, system: System, size: dict[str, int], tmp: Path) -> dict[str, Any]:
    def phase() -> dict[str, Any]:
        n = str(size["bulk"])
        r = adapter(system, "enqueue-bulk", "--dsn", url, "--jobs", n, "--batch", "1000", "--first", "0")
        return {"jobs": r["jobs"], "jobs_per_s": round(r["jobs"] / r["seconds"])}

    result = measure(url, system, phase) | footprint(url, system.schemas)
    if system.name == "jobctl":  # the bound, measured beside it in the same round
        result["bare_insert_jobs_per_s"] = round(bare_insert(url, size["bulk"]))
    return result


def e_single(url: str, system: System, size: dict[str, int], tmp: Path) -> dict[str, Any]:
    def phase() -> dict[str, Any]:
        n = str(size["single"])
        r = adapter(system, "enqueue-single", "--dsn", url, "--jobs", n, "--clients", "8", "--first", "0")
        return {"jobs": r["jobs"], "jobs_per_s": round(r["jobs"] / r["seconds"])}

    return measure(url, system, phase) | footprint(url, system.schemas)


def d_drain(url: str, system: System, size: dict[str, int], tmp: Path) -> dict[str, Any]:
    n = size["drain_slow"] if system.extra.get("slow") else size["drain"]
    adapter(system, "enqueue-bulk", "--dsn", url, "--jobs", str(n), "--batch", "1000", "--first", "0")
    setting = system.setting
    checkpoint(url)
    workers = Workers(system, url, setting, tmp)

    def phase() -> dict[str, Any]:
        t0 = time.perf_counter()
        workers.go()
        while unfinished(url, system.unfinished_sql) > 0:
            time.sleep(0.05)
        seconds = time.perf_counter() - t0
        return {"jobs": n, "jobs_per_s": round(n / seconds), "seconds": round(seconds, 2)}

    try:
        result = measure(url, system, phase)
    finally:
        done = workers.stop()
    result.update(exactly_once(done["handled"], range(n)))
    result["worker_cpu_s"] = round(done["cpu_s"], 1)
    result["setting"] = setting
    return result | footprint(url, system.schemas)


def l_pickup(url: str, system: System, size: dict[str, int], tmp: Path) -> dict[str, Any]:
    seconds = size["pickup_s"]
    workers = Workers(system, url, system.setting, tmp)
    result: dict[str, Any] = {"setting": system.setting}
    try:
        workers.go()
        time.sleep(1.0)  # idle: listeners connected, first polls done
        first = 0
        offsets = {}
        for rate in (500, 50):
            r = adapter(
                system, "enqueue-paced", "--dsn", url, "--rate", str(rate), "--seconds", str(seconds),
                "--first", str(first),
            )  # fmt: skip
            offsets[rate] = (first, first + r["jobs"])
            first += r["jobs"]
            deadline = time.monotonic() + 120
            while unfinished(url, system.unfinished_sql) > 0 and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        done = workers.stop()
    # latencies are recorded in handling order; attribute them to the rate by their n
    by_n = dict(zip(done["handled"][-len(done["latency_ms"]) :], done["latency_ms"], strict=False))
    for rate, (lo, hi) in offsets.items():
        lat = [v for k, v in by_n.items() if lo <= k < hi]
        result[f"at_{rate}"] = {**percentiles(lat), "jobs": hi - lo, "handled": len(lat)}
    result.update(exactly_once(done["handled"], range(first)))
    return result


RUNNERS = {"e-bulk": e_bulk, "e-single": e_single, "d-drain": d_drain, "l-pickup": l_pickup}


# --- report -------------------------------------------------------------------------------------


def headline(workload: str, r: dict[str, Any]) -> float | None:
    """The figure a workload is ranked by: jobs/s (higher is better) or pickup p99 at 500/s (lower)."""
    if workload == "l-pickup":
        p99 = r.get("at_500", {}).get("p99_ms")
        return float(p99) if p99 is not None else None
    return float(r["jobs_per_s"]) if "jobs_per_s" in r else None


def table(rows: list[dict[str, Any]]) -> str:
    lines = []
    for workload in WORKLOADS:
        got = [r for r in rows if r["workload"] == workload and "error" not in r]
        if not got:
            continue
        unit = "p99 ms at 500/s (p50 / p99 at 50/s)" if workload == "l-pickup" else "jobs/s"
        lines.append(
            f"\n{workload}  ({unit}; median [min-max] over rounds; ratio = jobctl / peer, >1 is better)"
        )
        figures: dict[str, list[float]] = {}
        for r in got:
            h = headline(workload, r)
            if h is not None:
                figures.setdefault(r["system"], []).append(h)
        ours = statistics.median(figures["jobctl"]) if "jobctl" in figures else None
        for system, values in figures.items():
            med = statistics.median(values)
            ratio = ""
            if ours is not None and system != "jobctl" and med:
                ratio = f"{(med / ours if workload == 'l-pickup' else ours / med):.2f}x"
            extra = _extras(workload, [r for r in got if r["system"] == system])
            lines.append(
                f"  {system:<16} {med:>10,.1f} [{min(values):,.1f}-{max(values):,.1f}]  {ratio:>7}  {extra}"
            )
        lines += _standing(workload, got)
    return "\n".join(lines)


def _standing(workload: str, rows: list[dict[str, Any]]) -> list[str]:
    """jobctl beside the best peer and beside its own engine (jobctl-sql), by the medians of every
    figure the workload's bars name: jobs/s, or pickup p50 and p99 at each rate (ratios > 1: jobctl ahead)."""
    keys = ["jobs_per_s"] if workload != "l-pickup" else [
        f"at_{rate}.{p}" for rate in (500, 50) for p in ("p50_ms", "p99_ms")
    ]  # fmt: skip
    lower_is_better = workload == "l-pickup"

    def median(system: str, key: str) -> float | None:
        vals = []
        for r in rows:
            v: Any = r
            for part in key.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if r["system"] == system and v is not None:
                vals.append(float(v))
        return statistics.median(vals) if vals else None

    peers = {r["system"] for r in rows if not r["system"].startswith("jobctl")}
    out = []
    for key in keys:
        ours = median("jobctl", key)
        if ours is None:
            continue
        figures = {p: v for p in peers if (v := median(p, key)) is not None}
        parts = []
        if figures:
            best = (min if lower_is_better else max)(figures, key=figures.__getitem__)
            ratio = figures[best] / ours if lower_is_better else ours / figures[best]
            parts.append(f"best peer {best} {figures[best]:,.1f}: {ratio:.2f}x")
        engine = median("jobctl-sql", key)
        if engine:
            ratio = engine / ours if lower_is_better else ours / engine
            parts.append(f"jobctl-sql {engine:,.1f}: jobctl / jobctl-sql {ratio:.2f}x")
        if parts:
            out.append(f"    {key} jobctl {ours:,.1f}; " + "; ".join(parts))
    return out


def _extras(workload: str, rs: list[dict[str, Any]]) -> str:
    def med(key: str) -> Any:
        vals = [r[key] for r in rs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    parts = [
        f"xid/job {med('xids_per_job')}",
        f"WAL B/job {med('wal_bytes_per_job')}",
        f"{med('relations_mib')} MiB",
    ]
    if workload == "d-drain":
        parts += [f"dead {med('dead_tuples')}", f"dup {med('duplicates')} miss {med('missing')}"]
    bare = med("bare_insert_jobs_per_s")
    if workload == "e-bulk" and bare:
        parts.append(f"bare INSERT ... SELECT {bare:,.0f} jobs/s: {med('jobs_per_s') / bare:.2f} of it")
    if workload == "l-pickup":
        p50 = [r["at_50"]["p50_ms"] for r in rs if r.get("at_50", {}).get("p50_ms") is not None]
        p99 = [r["at_50"]["p99_ms"] for r in rs if r.get("at_50", {}).get("p99_ms") is not None]
        if p50:
            parts.insert(0, f"50/s: {statistics.median(p50):.1f} / {statistics.median(p99):.1f} ms")
        parts = parts[:1] if p50 else []
    return ", ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller runs, about 5 minutes")
    ap.add_argument("--smoke", action="store_true", help="tiny runs: checks the harness, not the speed")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 3, quick 1)")
    ap.add_argument(
        "--systems", default=",".join(SYSTEMS), help="comma-separated, from: " + ", ".join(SYSTEMS)
    )
    ap.add_argument(
        "--workloads", default=",".join(WORKLOADS), help="comma-separated, from: " + ", ".join(WORKLOADS)
    )
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    ap.add_argument(
        "--jobctl-at",
        action="append",
        default=[],
        metavar="NAME=REF",
        help="also run jobctl as at git REF (a worktree in .bench-trees/NAME), as system jobctl@NAME",
    )
    ap.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="SYSTEM=JSON",
        help="run SYSTEM with this worker setting instead of its own (e.g. jobctl='{\"procs\": 1}')",
    )
    a = ap.parse_args()
    mode = "smoke" if a.smoke else "quick" if a.quick else "full"
    size = SIZES[mode]
    rounds = a.rounds or (3 if mode == "full" else 1)
    systems = [SYSTEMS[s] for s in a.systems.split(",")]
    systems += [jobctl_at(spec, ROOT / ".bench-trees") for spec in a.jobctl_at]
    for spec in a.setting:
        name, _, setting = spec.partition("=")
        for s in systems:
            if s.name == name:
                s.setting = json.loads(setting)
    missing = [s.name for s in systems if s.needs is not None and not s.needs.exists()]
    if missing:
        print(f"compare: skipping {', '.join(missing)} (run make bench-setup)", file=sys.stderr)
        systems = [s for s in systems if s.name not in missing]
    admin = a.url or cluster_url("postgres")
    url = urlunsplit(urlsplit(admin)._replace(path=f"/{DB}"))
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    runs = RESULTS / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="jobctl-bench-") as tmpdir,
        open(runs / f"{run_id}-{mode}.jsonl", "w") as log,
    ):
        for rnd in range(1, rounds + 1):
            for workload in a.workloads.split(","):
                for system in systems:
                    if system.workloads is not None and workload not in system.workloads:
                        continue
                    fresh_database(admin, url)
                    adapter(system, "install", "--dsn", url)
                    checkpoint(url)
                    row: dict[str, Any] = {"run": run_id, "mode": mode, "round": rnd, "workload": workload}
                    row["system"] = system.name
                    try:
                        row.update(RUNNERS[workload](url, system, size, Path(tmpdir)))
                    except Exception as e:  # one system's failure must not hide the others' figures
                        row["error"] = str(e)[-500:]
                    print(json.dumps(row), flush=True)
                    log.write(json.dumps(row) + "\n")
                    rows.append(row)
    report = [f"{mode} run {run_id}, {rounds} round(s); systems: " + ", ".join(s.name for s in systems)]
    report += [table(rows), *(f"  {s.name}: {s.notes}" for s in systems if s.notes)]
    print("\n" + "\n".join(report))
    (runs / f"{run_id}-{mode}.txt").write_text("\n".join(report) + "\n")
    errors = [r for r in rows if "error" in r]
    for r in errors:
        print(f"  error: {r['system']} {r['workload']}: {r['error']}", file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
