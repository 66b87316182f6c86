"""Sharding by tenant on one machine: a PL/Proxy router and shard clusters (bin/db's settings, pg_cron
each), built under .shards/run-<pid>/ on ports 25500-25519 and removed at the end unless --keep.

Phases (one run; the figures are printed as a JSON line, then a table; a full run writes
benchmarks/results/shards.jsonl):
  routing     tenants placed over the shards; by-tenant and by-id calls through the router land on the
              shard that holds the job (get_job, list_jobs, cancel_job through the router against the
              shards' own answers), a submit_jobs of two tenants refused (JC001)
  overhead    submit_job and get_job through the router and directly on the tenant's shard, call by call
              in turn: median microseconds a call of each (median of rounds), and the ratio router/direct
  claims      claim (10 at a time) + complete_jobs by 4 client threads until a fixed backlog spread over
              the shards is drained: through the router (claims round robin over the shards) against
              each thread connected to every shard and rotating over them; jobs/s, medians of rounds
  drain       jobs of many tenants submitted through the router, then drained by real `jobctl worker`
              processes connected to every shard (--dsn per shard): jobs/s per shard and in all, and
              each tenant's share of the completions while every tenant still had jobs (1.0: its fair
              share of all completions), by shard
  sustained   one shard alone: a producer submits (batches of 20) while a worker claims and completes;
              jobs/s completed at a bounded backlog x 86,400 = jobs a day one shard sustains here
  capacity    the same shard's database side alone: SQL producers (submit_jobs of 100) and SQL
              consumers (claims of 50, complete_jobs), no handler: the jobs a day the database sustains
  chaos       a producer submits through the router (dedup keys, retried until acknowledged) for
              tenants on every shard while workers run; one shard is killed with SIGKILL (postmaster and
              every process) and restarted under load; then the ledger of chaos.py (written by the
              handler in each job's own transaction on its shard) is checked on every shard: lost,
              unfinished, duplicates, missing, stray, overlaps must all be 0

    .venv/bin/python benchmarks/drills/shards.py            # 3 shards, about 4 minutes
    .venv/bin/python benchmarks/drills/shards.py --small    # 2 shards, shorter phases (tests/test_shards.py)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
from chaos import BENCH, LEDGER_DDL, ROOT, Run, Sql, invariants, log, print_table
from clusters import Cluster, as_pg, pg_bin, port_free, reachable_by_postgres, remove_run
from jobctl import shards
from psycopg.conninfo import make_conninfo

PORTS = (25500, 25519)
SIZES: dict[str, dict[str, Any]] = {
    "full": {
        "shards": 3,
        "overhead_calls": 300,
        "rounds": 5,
        "claim_jobs": 12000,
        "claim_rounds": 5,
        "tenants": 30,
        "jobs_per_tenant": 400,
        "sustain_s": 30.0,
        "chaos_s": 60.0,
        "kill_at": 20.0,
        "down_s": 5.0,
        "chaos_workers": 2,
        "lease": 2.0,
        "chaos_tenants": 12,
    },
    "small": {
        "shards": 2,
        "overhead_calls": 100,
        "rounds": 3,
        "claim_jobs": 600,
        "claim_rounds": 1,
        "tenants": 8,
        "jobs_per_tenant": 50,
        "sustain_s": 0.0,
        "chaos_s": 12.0,
        "kill_at": 3.0,
        "down_s": 2.0,
        "chaos_workers": 1,
        "lease": 2.0,
        "chaos_tenants": 6,
    },
}
INVARIANTS = ("lost", "unfinished", "duplicates", "missing", "stray", "overlaps")
SUBMIT = "select job_id from jobctl.submit_job(%s, %s, %s::jsonb)"
GET = "select job_id from jobctl.get_job(%s)"
CLAIM = "select job_id, lease_epoch from jobctl.claim_job(%s, array[%s], 10, '30 seconds')"
SUBMIT_MANY = """
select count(*) from jobctl.submit_jobs((
    select jsonb_agg(jsonb_build_object('tenant_id', %s::text, 'queue', %s::text, 'payload', %s::jsonb))
    from generate_series(1, %s::int) as g (i)
))
"""
SUBMIT_CHAOS = """
select job_id from jobctl.submit_job(%s, %s, %s::jsonb, dedup_key => %s, max_attempts => 1000,
    backoff => '{"strategy": "fixed", "base": "0.1 seconds", "max": "1 second"}')
"""
BACKLOG = "select count(*) from jobctl.job where queue = %s and state <> 'completed'"
COMPLETE = "select count(*) from jobctl.complete_jobs(%s::bigint[], %s::bigint[]) where completed"


def next_port(port: int) -> int:
    while not port_free(port):
        port += 1
    if port > PORTS[1]:
        raise RuntimeError(f"no free port in {PORTS[0]}-{PORTS[1]}")
    return port


def build_shard(base: Path, n: int, port: int) -> Cluster:
    """A jobctl cluster by bin/db (its settings, pg_cron, the migration), made shard n."""
    name = str((base / f"shard{n}").relative_to(ROOT))
    env = {**os.environ, "JOBCTL_PGNAME": name, "JOBCTL_PG_PORT": str(port), "JOBCTL_PG_DB": "jobctl"}
    subprocess.run([str(ROOT / "bin" / "db")], env=env, check=True, capture_output=True, timeout=300)
    cluster = Cluster((base / f"shard{n}").resolve(), int((base / f"shard{n}" / "port").read_text()))
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        shards.init_shard(conn, n)
        conn.execute(LEDGER_DDL)
    return cluster


def build_router(base: Path, port: int, shard_dsns: dict[int, str]) -> Cluster:
    """A plain cluster (no jobctl schema) with the database `jobctl` holding the router."""
    path = base / "router"
    path.mkdir()
    if os.getuid() == 0:
        shutil.chown(path, "postgres", "postgres")
    router = Cluster(path.resolve(), port)
    subprocess.run(
        as_pg(
            [
                str(pg_bin() / "initdb"),
                "-D",
                str(router.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    conf = (
        f"port = {port}\nlisten_addresses = ''\nunix_socket_directories = '{router.path}'\n"
        "max_connections = 200\nshared_buffers = '128MB'\nlog_min_messages = warning\n"
    )
    subprocess.run(
        as_pg(["tee", "-a", str(router.data / "postgresql.conf")]),
        input=conf.encode(),
        check=True,
        capture_output=True,
    )
    router.ctl("-l", str(router.path / "server.log"), "-w", "-t", "60", "start")
    with psycopg.connect(make_conninfo(router.dsn(), dbname="postgres"), autocommit=True) as conn:
        conn.execute("create database jobctl")
    with psycopg.connect(router.dsn(), autocommit=True) as conn:
        shards.install_router(conn, shard_dsns)
    return router


def build(base: Path, count: int) -> tuple[Cluster, list[Cluster]]:
    ports, port = [], PORTS[0]
    for _ in range(count + 1):
        port = next_port(port)
        ports.append(port)
        port += 1
    with ThreadPoolExecutor(count) as pool:
        built = list(pool.map(lambda n: build_shard(base, n, ports[n + 1]), range(count)))
    router = build_router(base, ports[0], {n: c.dsn() for n, c in enumerate(built)})
    return router, built


def connect(dsn: str) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(dsn, autocommit=True, prepare_threshold=0)


def tenants_by_shard(router: Cluster, tenants: list[str]) -> dict[str, int]:
    """Place the tenants (as a submit through the router would) and read where they went."""
    with connect(router.dsn()) as conn:
        return {
            t: int(conn.execute("select jobctl_router.tenant_shard(%s, true)", (t,)).fetchone()[0])
            for t in tenants
        }


def routing(router: Cluster, shard_list: list[Cluster]) -> dict[str, Any]:
    """Calls through the router against the shards' own answers."""
    out: dict[str, Any] = {"checked": 0, "wrong": []}
    tenants = [f"route_{i}" for i in range(4 * len(shard_list))]
    placed = tenants_by_shard(router, tenants)
    with connect(router.dsn()) as r:
        direct = [connect(c.dsn()) for c in shard_list]
        for t in tenants:
            [(job_id,)] = r.execute(SUBMIT, (t, "route_q", "{}")).fetchall()
            s = placed[t]
            checks = {
                "id_names_shard": job_id % 64 == s,
                "on_its_shard": direct[s].execute(GET, (job_id,)).fetchall() == [(job_id,)],
                "nowhere_else": all(
                    not d.execute(GET, (job_id,)).fetchall() for i, d in enumerate(direct) if i != s
                ),
                "get_by_id": r.execute(GET, (job_id,)).fetchall() == [(job_id,)],
                "list_by_tenant": [
                    row[0] for row in r.execute("select job_id from jobctl.list_jobs(%s)", (t,))
                ]
                == [row[0] for row in direct[s].execute("select job_id from jobctl.list_jobs(%s)", (t,))],
                "cancel_by_id": r.execute("select jobctl.cancel_job(%s)", (job_id,)).fetchone()
                == ("cancelled",),
            }
            out["checked"] += len(checks)
            out["wrong"] += [f"{t}: {k}" for k, ok in checks.items() if not ok]
        mixed = json.dumps([{"tenant_id": t, "queue": "route_q", "payload": {}} for t in tenants[:2]])
        try:
            r.execute("select * from jobctl.submit_jobs(%s::jsonb)", (mixed,))
            out["wrong"].append("a submit_jobs of two tenants was accepted")
        except psycopg.Error as e:
            out["mixed_tenants_refused"] = e.sqlstate
        for d in direct:
            d.close()
    out["tenants_per_shard"] = [sum(1 for s in placed.values() if s == n) for n in range(len(shard_list))]
    return out


def backend_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a server process has used: /proc/<pid>/stat, clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def overhead(router: Cluster, shard_list: list[Cluster], calls: int, rounds: int) -> dict[str, Any]:
    """Per-call latency of submit_job and get_job, through the router and directly, call by call."""
    tenant = "ovh_tenant"
    s = tenants_by_shard(router, [tenant])[tenant]
    timings: dict[str, list[float]] = {
        k: [] for k in ("submit_router", "submit_direct", "get_router", "get_direct")
    }
    with connect(router.dsn()) as r, connect(shard_list[s].dsn()) as d:
        ids = [
            row[0]
            for row in d.execute(
                SUBMIT_MANY.replace("count(*)", "job_id"),
                (tenant, "ovh_q", "{}", calls),
            )
        ]
        for name in ("submit", "get"):  # warm both paths (PL/Proxy's connection, plans)
            for conn in (r, d):
                conn.execute(
                    SUBMIT if name == "submit" else GET,
                    (tenant, "ovh_q", "{}") if name == "submit" else (ids[0],),
                )
        # call by call, router and direct in turn (the order swapped every call): a busy machine's
        # drift hits both alike; the median of each call's time, per round, then the median of rounds
        [(router_pid,)] = r.execute("select pg_backend_pid()").fetchall()
        cpu_before = backend_cpu_s(int(router_pid))
        for _ in range(rounds):
            samples: dict[str, list[float]] = {k: [] for k in timings}
            for i, job_id in enumerate(ids):
                for via, conn in (
                    (("router", r), ("direct", d)) if i % 2 == 0 else (("direct", d), ("router", r))
                ):
                    t0 = time.perf_counter()
                    conn.execute(SUBMIT, (tenant, "ovh_q", "{}"))
                    t1 = time.perf_counter()
                    conn.execute(GET, (job_id,))
                    t2 = time.perf_counter()
                    samples[f"submit_{via}"].append((t1 - t0) * 1e6)
                    samples[f"get_{via}"].append((t2 - t1) * 1e6)
            for k, v in samples.items():
                timings[k].append(statistics.median(v))
        # the router's own work a call (its backend's CPU: routing, PL/Proxy's send and receive), the
        # figure that bounds one router: calls/s a core = 1e6 / this
        router_cpu_us = (backend_cpu_s(int(router_pid)) - cpu_before) * 1e6 / (2 * calls * rounds)
    med = {k: round(statistics.median(v), 1) for k, v in timings.items()}
    return {
        "us": med,
        "submit_ratio": round(med["submit_router"] / med["submit_direct"], 2),
        "get_ratio": round(med["get_router"] / med["get_direct"], 2),
        "submit_added_us": round(med["submit_router"] - med["submit_direct"], 1),
        "get_added_us": round(med["get_router"] - med["get_direct"], 1),
        "router_cpu_us_a_call": round(router_cpu_us, 1),
        "calls": calls,
        "rounds": rounds,
    }


def prefill(router: Cluster, queue: str, tenants: list[str], per_tenant: int) -> None:
    with connect(router.dsn()) as r:
        for t in tenants:
            for start in range(0, per_tenant, 1000):
                n = min(1000, per_tenant - start)
                r.execute(
                    SUBMIT_MANY,
                    (t, queue, "{}", n),
                )


def claim_loop(dsns: list[str], queue: str, total: int, done: list[int], lock: threading.Lock) -> None:
    """Claim 10 and complete them until `total` jobs are done by all threads; with several dsns,
    rotate over them (a thread connected to every shard)."""
    conns = [connect(d) for d in dsns]
    i = random.randrange(len(conns))
    try:
        while True:
            with lock:
                if done[0] >= total:
                    return
            conn = conns[i % len(conns)]
            i += 1
            rows = conn.execute(CLAIM, ("bench", queue)).fetchall()
            if not rows:
                continue
            [(n,)] = conn.execute(COMPLETE, ([j for j, _ in rows], [e for _, e in rows])).fetchall()
            with lock:
                done[0] += int(n)
    finally:
        for c in conns:
            c.close()


def claims(router: Cluster, shard_list: list[Cluster], jobs: int, rounds: int) -> dict[str, Any]:
    """Claim + complete through the router against directly (rotating over the shards), side by side."""
    rates: dict[str, list[float]] = {"router": [], "direct": []}
    tenants = [f"claim_t{i}" for i in range(3 * len(shard_list))]
    for rnd in range(rounds):
        for via in ("router", "direct") if rnd % 2 == 0 else ("direct", "router"):
            queue = f"claim_{via}_{rnd}"
            prefill(router, queue, tenants, jobs // len(tenants))
            total = jobs // len(tenants) * len(tenants)
            dsns = [router.dsn()] if via == "router" else [c.dsn() for c in shard_list]
            done, lock = [0], threading.Lock()
            threads = [
                threading.Thread(target=claim_loop, args=(dsns, queue, total, done, lock)) for _ in range(4)
            ]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rates[via].append(total / (time.perf_counter() - t0))
    med = {k: round(statistics.median(v)) for k, v in rates.items()}
    return {
        "jobs_s": med,
        "ratio_router_direct": round(med["router"] / med["direct"], 2),
        "jobs": jobs,
        "rounds": rounds,
    }


def spawn_worker(
    tmp: Path, name: str, dsns: list[str], queue: str, lease: float, concurrency: int
) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-c",
        "from jobctl.worker import worker_command; worker_command()",
        "--handler",
        "chaos_handlers:handle",
        "--queue",
        queue,
        "--lease",
        str(lease),
        "--concurrency",
        str(concurrency),
        "--poll-interval",
        "0.5",
        "--grace",
        "1",
        "--worker-id",
        name,
        "--log-format",
        "json",
    ]
    for d in dsns:
        cmd += ["--dsn", d]
    with open(tmp / f"{name}.log", "wb") as out:
        return subprocess.Popen(
            cmd, cwd=BENCH, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=out, stderr=subprocess.STDOUT
        )


def stop(procs: list[subprocess.Popen[bytes]]) -> list[int | None]:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(30))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(None)
    return codes


def drain(router: Cluster, shard_list: list[Cluster], size: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Many tenants' jobs through the router, drained by workers connected to every shard."""
    queue = "drain_q"
    tenants = [f"drain_t{i:03d}" for i in range(size["tenants"])]
    placed = tenants_by_shard(router, tenants)
    jobs = json.dumps({"work": 0, "tx": 0})
    with connect(router.dsn()) as r:
        for t in tenants:
            r.execute(
                SUBMIT_MANY,
                (t, queue, jobs, size["jobs_per_tenant"]),
            )
    dsns = [c.dsn() for c in shard_list]
    # 8 slots a shard, shared by the shards' claimable weight (jobctl worker --dsn ...)
    procs = [spawn_worker(tmp, f"drain_w{i}", dsns, queue, 30.0, 8 * len(dsns)) for i in range(2)]
    total = len(tenants) * size["jobs_per_tenant"]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        left = sum(
            Sql(d)("select count(*) from jobctl.job where queue = %s and state <> 'completed'", (queue,))[0][
                0
            ]
            for d in dsns
        )
        if left == 0:
            break
        time.sleep(0.5)
    codes = stop(procs)
    finished: dict[str, list[float]] = {}
    per_shard: list[dict[str, Any]] = []
    first_start, last_end = float("inf"), 0.0
    for n, d in enumerate(dsns):
        rows = Sql(d)(
            "select tenant_id, extract(epoch from started_at)::float8,"
            " extract(epoch from finished_at)::float8 from jobctl.job"
            " where queue = %s and state = 'completed'",
            (queue,),
        )
        starts, ends = [r[1] for r in rows], [r[2] for r in rows]
        for t, _, e in rows:
            finished.setdefault(t, []).append(e)
        if rows:
            first_start, last_end = min(first_start, min(starts)), max(last_end, max(ends))
            per_shard.append(
                {
                    "shard": n,
                    "tenants": sum(1 for s in placed.values() if s == n),
                    "jobs": len(rows),
                    "jobs_s": round(len(rows) / max(max(ends) - min(starts), 1e-3)),
                }
            )
    # shares while every tenant still had jobs: completions of each up to the first tenant's last one
    window_end = min(max(v) for v in finished.values())
    done_in_window = {t: sum(1 for e in v if e <= window_end) for t, v in finished.items()}
    fair = sum(done_in_window.values()) / len(done_in_window)
    share = {t: n / fair for t, n in done_in_window.items()}
    by_shard = {
        str(n): round(statistics.mean([share[t] for t, s in placed.items() if s == n and t in share]), 2)
        for n in range(len(shard_list))
        if any(s == n for s in placed.values())
    }
    within = [
        max(v) / min(v)
        for n in range(len(shard_list))
        if (v := [share[t] for t, s in placed.items() if s == n and t in share]) and min(v) > 0
    ]
    return {
        "jobs": total,
        "completed": sum(len(v) for v in finished.values()),
        "jobs_s_total": round(sum(len(v) for v in finished.values()) / max(last_end - first_start, 1e-3)),
        "per_shard": per_shard,
        "share_by_shard": by_shard,
        "share_min_max": [round(min(share.values()), 2), round(max(share.values()), 2)],
        "share_spread_within_shard_max": round(max(within), 2) if within else None,
        "worker_exit_codes": codes,
    }


def sustained(shard: Cluster, seconds: float, tmp: Path) -> dict[str, Any]:
    """One shard: a producer submits while a worker drains; completions a second at a bounded backlog."""
    queue = "sustain_q"
    stop_at = time.monotonic() + seconds
    submitted = [0]
    payload = json.dumps({"work": 0, "tx": 0})

    def produce() -> None:
        with connect(shard.dsn()) as c:
            while time.monotonic() < stop_at:
                c.execute(
                    SUBMIT_MANY.replace("%s::text,", "'sus_t' || (g.i %% 10),", 1),
                    (queue, payload, 20),
                )
                submitted[0] += 20
                # keep the backlog bounded: the rate is the one submit + claim + complete sustain together
                [(backlog,)] = c.execute(BACKLOG, (queue,)).fetchall()
                while backlog > 1000 and time.monotonic() < stop_at:
                    time.sleep(0.05)
                    [(backlog,)] = c.execute(BACKLOG, (queue,)).fetchall()

    proc = spawn_worker(tmp, "sustain_w", [shard.dsn()], queue, 30.0, 20)
    time.sleep(1.0)
    t0 = time.time()
    threads = [threading.Thread(target=produce) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t1 = time.time()
    stop([proc])
    sql = Sql(shard.dsn())
    [(done, backlog)] = sql(
        "select count(*) filter (where finished_at between to_timestamp(%s) and to_timestamp(%s)),"
        " count(*) filter (where state <> 'completed') from jobctl.job where queue = %s",
        (t0, t1, queue),
    )
    rate = int(done) / (t1 - t0)
    return {
        "seconds": round(t1 - t0, 1),
        "submitted_s": round(submitted[0] / (t1 - t0)),
        "completed_s": round(rate),
        "backlog_at_end": int(backlog),
        "jobs_per_day": int(rate * 86400),
    }


CLAIM_MANY = "select job_id, lease_epoch from jobctl.claim_job(%s, array[%s], 50, '30 seconds')"


def capacity(shard: Cluster, seconds: float) -> dict[str, Any]:
    """One shard's database side alone: 2 producers (submit_jobs of 100 over 10 tenants) and 2 SQL
    consumers (claims of 50, complete_jobs) at a bounded backlog; no handler, so the figure is what the
    database sustains, where `sustained` is bound by one Python worker process."""
    queue = "capacity_q"
    stop_at = time.monotonic() + seconds
    payload = json.dumps({"work": 0})
    done, lock = [0], threading.Lock()
    submit = SUBMIT_MANY.replace("%s::text,", "'cap_t' || (g.i %% 10),", 1)

    def produce() -> None:
        with connect(shard.dsn()) as c:
            while time.monotonic() < stop_at:
                c.execute(submit, (queue, payload, 100))
                [(backlog,)] = c.execute(BACKLOG, (queue,)).fetchall()
                while backlog > 2000 and time.monotonic() < stop_at:
                    time.sleep(0.02)
                    [(backlog,)] = c.execute(BACKLOG, (queue,)).fetchall()

    def consume() -> None:
        with connect(shard.dsn()) as c:
            while time.monotonic() < stop_at:
                rows = c.execute(CLAIM_MANY, ("bench", queue)).fetchall()
                if not rows:
                    time.sleep(0.01)
                    continue
                [(n,)] = c.execute(COMPLETE, ([j for j, _ in rows], [e for _, e in rows])).fetchall()
                with lock:
                    done[0] += int(n)

    threads = [threading.Thread(target=f) for f in (produce, produce, consume, consume)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rate = done[0] / (time.perf_counter() - t0)
    return {"seconds": round(seconds), "completed_s": round(rate), "jobs_per_day": int(rate * 86400)}


def chaos(router: Cluster, shard_list: list[Cluster], size: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Submits through the router and workers on every shard; one shard killed with SIGKILL and restarted."""
    queue = "chaos_shards"
    tenants = [f"chaos_t{i}" for i in range(size["chaos_tenants"])]
    placed = tenants_by_shard(router, tenants)
    victim = 1 % len(shard_list)
    dsns = [c.dsn() for c in shard_list]
    acked: list[dict[str, int]] = [{} for _ in shard_list]
    errors: list[str] = []
    retries = [0]
    stop_producing = threading.Event()

    def produce() -> None:
        sql, n = Sql(router.dsn()), 0
        while not stop_producing.is_set():
            t = random.choice(tenants)
            key = f"ck{n}"
            n += 1
            payload = json.dumps(
                {"work": round(random.uniform(0, 0.3), 3), "tx": round(random.uniform(0, 0.1), 3)}
            )
            while True:
                try:
                    [(job_id,)] = sql(
                        SUBMIT_CHAOS,
                        (t, queue, payload, key),
                        timeout=600,
                    )
                    acked[placed[t]][key] = int(job_id)
                    break
                except psycopg.Error as e:
                    if not unreachable(e):  # an answer, which a retry would repeat
                        errors.append(f"{e.sqlstate}: {str(e).splitlines()[0]}")
                        break
                    retries[0] += 1  # the shard is down (PL/Proxy's error): retried, the dedup key
                    time.sleep(0.2)  # answers the retry of a submit that did commit
            time.sleep(0.02)

    workers = [
        spawn_worker(tmp, f"chaos_w{i}", dsns, queue, size["lease"], 4 * len(dsns))
        for i in range(size["chaos_workers"])
    ]
    producers = [threading.Thread(target=produce, daemon=True) for _ in range(2)]
    started = time.monotonic()
    for p in producers:
        p.start()
    time.sleep(size["kill_at"])
    killed_at = time.time()
    processes = shard_list[victim].kill()
    log(f"killed shard {victim} ({processes} processes)")
    time.sleep(size["down_s"])
    shard_list[victim].ctl("-l", str(shard_list[victim].path / "server.log"), "-w", "-t", "60", "start")
    restarted_s = time.time() - killed_at
    log(f"shard {victim} restarted {restarted_s:.1f} s after the kill")
    while time.monotonic() - started < size["chaos_s"]:
        time.sleep(0.2)
    stop_producing.set()
    for p in producers:
        p.join(120)
    # drain: every acknowledged job completed on its shard
    deadline = time.monotonic() + size["lease"] * 4 + 120
    while time.monotonic() < deadline:
        left = sum(
            Sql(d)(
                "select count(*) from jobctl.job where job_id = any(%s) and state <> 'completed'",
                (list(a.values()),),
            )[0][0]
            for d, a in zip(dsns, acked, strict=True)
        )
        if left == 0:
            break
        time.sleep(0.5)
    codes = stop(workers)
    totals: dict[str, Any] = dict.fromkeys(INVARIANTS, 0)
    totals["jobs"] = 0
    per_shard = []
    for n, (d, a) in enumerate(zip(dsns, acked, strict=True)):
        run = Run("shards", {"lease": size["lease"]}, d, tmp)
        run.acked = dict(a)
        checked = invariants(run, Sql(d))
        per_shard.append({"shard": n, "jobs": checked["jobs"], **{k: checked[k] for k in INVARIANTS}})
        for k in (*INVARIANTS, "jobs"):
            totals[k] += checked[k]
    [(unplaced,)] = Sql(router.dsn())(
        "select count(*) from jobctl_router.placement where tenant_id like 'chaos_t%%'"
    )
    return {
        **totals,
        "killed_shard": victim,
        "victim_jobs": per_shard[victim]["jobs"],
        "down_s": round(restarted_s, 1),
        "submit_retries": retries[0],
        "submit_errors": len(errors),
        "submit_error_samples": errors[:3],
        "per_shard": per_shard,
        "worker_exit_codes": codes,
        "placements": int(unplaced),
    }


def unreachable(e: psycopg.Error) -> bool:
    """An error of a shard (or the router) that cannot be reached, as PL/Proxy reports it."""
    text = str(e).lower()
    return (
        e.sqlstate is None
        or e.sqlstate.startswith("08")
        or e.sqlstate in ("57P01", "57P02", "57P03")
        or any(w in text for w in ("connection", "could not connect", "server closed", "terminating"))
    )


def remove(base: Path, count: int) -> None:
    """The run's directory, and the far directories bin/db may have linked its shards to."""
    for n in range(count):
        link = base / f"shard{n}"
        if link.is_symlink():
            shutil.rmtree(link.resolve(), ignore_errors=True)
            link.unlink()
    remove_run(base)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="the scaled-down run tests/test_shards.py does")
    ap.add_argument("--keep", action="store_true", help="leave the clusters running under .shards/")
    args = ap.parse_args()
    size = SIZES["small" if args.small else "full"]
    base = reachable_by_postgres(ROOT / ".shards") / f"run-{os.getpid()}"
    base.mkdir()
    tmp = base / "logs"
    tmp.mkdir()
    started = time.monotonic()
    router, shard_list = None, []
    try:
        router, shard_list = build(base, size["shards"])
        built_s = time.monotonic() - started
        log(
            f"router :{router.port}, shards :{', :'.join(str(c.port) for c in shard_list)},"
            f" built in {built_s:.1f} s"
        )
        result: dict[str, Any] = {
            "size": "small" if args.small else "full",
            "shards": len(shard_list),
            "built_s": round(built_s, 1),
        }
        phases = [
            ("routing", lambda: routing(router, shard_list)),
            ("overhead", lambda: overhead(router, shard_list, size["overhead_calls"], size["rounds"])),
            ("claims", lambda: claims(router, shard_list, size["claim_jobs"], size["claim_rounds"])),
            ("drain", lambda: drain(router, shard_list, size, tmp)),
        ]
        if size["sustain_s"]:
            phases.append(("sustained", lambda: sustained(shard_list[0], size["sustain_s"], tmp)))
            phases.append(("capacity", lambda: capacity(shard_list[0], size["sustain_s"])))
        phases.append(("chaos", lambda: chaos(router, shard_list, size, tmp)))
        for name, phase in phases:
            t0 = time.monotonic()
            result[name] = phase()
            log(f"{name}: {json.dumps(result[name])} ({time.monotonic() - t0:.1f} s)")
        result["total_s"] = round(time.monotonic() - started, 1)
        result["loadavg_1m_end"] = round(os.getloadavg()[0], 1)  # 2 cores, shared: how busy the machine was
    finally:
        for c in [router, *shard_list]:
            if c is not None and not args.keep:
                c.kill()
        if not args.keep:
            remove(base, size["shards"])
    print(json.dumps(result))
    print_table(result)
    if not args.small:
        (ROOT / "benchmarks" / "results" / "shards.jsonl").write_text(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
