"""Chaos: real `jobctl worker` processes, the HTTP API and a real server under faults, then invariants
checked against a ledger that the handler (chaos_handlers.py) writes in each job's own transaction.

Scenario `faults`: one fault at a time, every few seconds, in a shuffled cycle, while jobs flow:
  kill       kill -9 of a worker running jobs (a new worker replaces it)
  zombie     SIGSTOP of a worker running jobs for longer than its lease, then SIGCONT
  terminate  pg_terminate_backend of every worker's and the API's connections
  restart    a fast restart of the server (a cluster under bin/db: .pg, .test-pg or .bench-pg)
  partition  the TCP proxy between half the workers and the server stops passing bytes for longer
             than a lease, then passes them on again or resets every connection
Scenario `zombies`: every worker is stopped again and again, each time in a phase picked at random
and waited for in pg_stat_activity (working, inside its job transaction after its writes, or in a
heartbeat), for longer than its lease, while other workers take its jobs over; a third of the workers run with
their clocks skewed by minutes (libfaketime), as leases must go by the database's clock only.

A producer submits through SQL (submit_jobs) and one through the API (POST /api/v1/jobs), every job
with a dedup key, each retrying until its submit is acknowledged. Then the faults stop, the workers
drain the queue, and the report counts (all must be 0 but the last ones):
  lost            acknowledged jobs not in the database; dedup keys with two jobs
  unfinished      acknowledged jobs not completed (max_attempts is high: none may die)
  duplicates      jobs with more than one ledger row: effects committed twice
  missing         completed jobs without a ledger row
  stray           ledger rows of an attempt other than the one that completed
  overlaps        an attempt claimed before the previous attempt of the job had ended
  requeue_max_s   from a kill -9 to the end of the killed attempt (the job claimable again), and
  reclaim_max_s   to its next claim; the bound is two leases (60 s with the default 30 s lease)
Prints JSON lines and a table; a full run also writes benchmarks/results/chaos_<scenario>.jsonl.

    .venv/bin/python benchmarks/drills/chaos.py --scenario faults            # 15 minutes, 30 s leases
    .venv/bin/python benchmarks/drills/chaos.py --scenario zombies           # 300 trials
    .venv/bin/python benchmarks/drills/chaos.py --scenario faults --small    # about a minute
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from jobctl import db
from psycopg.conninfo import conninfo_to_dict, make_conninfo

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
FAULTS = ("kill", "zombie", "terminate", "restart", "partition")
SKEWS = ("-7m", "+5m")  # libfaketime offsets for a third of the zombie scenario's workers
SIZES: dict[str, dict[str, Any]] = {
    # seconds of faults (faults) or trials wanted (zombies); lease and stop in seconds
    "faults": {
        "full": {"seconds": 900, "workers": 6, "lease": 30.0, "stop": 40.0, "every": (5.0, 15.0), "rate": 30},
        "small": {"seconds": 30, "workers": 4, "lease": 2.0, "stop": 3.5, "every": (1.0, 3.0), "rate": 30},
    },
    "zombies": {
        "full": {"trials": 300, "workers": 9, "lease": 2.0, "stop": 3.5, "rate": 30},
        "small": {"trials": 20, "workers": 6, "lease": 2.0, "stop": 3.5, "rate": 30},
    },
}
LEDGER_DDL = """
create table if not exists public.chaos_ledger (
    job_id bigint not null, lease_epoch bigint not null, pid integer not null,
    at timestamptz not null default clock_timestamp()
)
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Sql:
    """One connection that reconnects: the harness's own queries outlive terminations and restarts."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: psycopg.Connection[tuple[Any, ...]] | None = None

    def __call__(self, query: str, params: Any = None, timeout: float = 120) -> list[tuple[Any, ...]]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = psycopg.connect(self.dsn, autocommit=True, application_name="chaos-harness")
                cur = self.conn.execute(query, params)
                return cur.fetchall() if cur.description else []
            except psycopg.OperationalError:
                self.conn = None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


class Proxy:
    """127.0.0.1:port to the server's unix socket. cut() stops passing bytes both ways and holds new
    connections (a partition: nobody is told); heal() passes them on again, or resets every
    connection (a partition that outlived the connections)."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.loop = asyncio.new_event_loop()
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._passing = asyncio.Event()
        ready = threading.Event()
        self.port = 0

        async def start() -> None:
            self._passing.set()
            server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()

        threading.Thread(target=self.loop.run_forever, daemon=True, name="chaos-proxy").start()
        asyncio.run_coroutine_threadsafe(start(), self.loop)
        ready.wait(10)

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                await self._passing.wait()
                w.write(data)
                await w.drain()
        except OSError:
            pass
        finally:
            w.close()

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        await self._passing.wait()
        try:
            sr, sw = await asyncio.open_unix_connection(self.socket_path)
        except OSError:
            cw.close()
            return
        pair = (cw, sw)
        self._pairs.add(pair)
        await asyncio.gather(self._pipe(cr, sw), self._pipe(sr, cw))
        self._pairs.discard(pair)

    def cut(self) -> None:
        self.loop.call_soon_threadsafe(self._passing.clear)

    def heal(self, reset: bool) -> None:
        def heal() -> None:
            if reset:
                for pair in list(self._pairs):
                    for w in pair:
                        w.transport.abort()
            self._passing.set()

        self.loop.call_soon_threadsafe(heal)


@dataclass
class Worker:
    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    skew: str | None

    def summary(self) -> dict[str, int]:
        """The counters of the worker's last `worker stopped` line (none when it was killed)."""
        for line in reversed(self.log_path.read_text(errors="replace").splitlines()):
            if "worker stopped" in line:
                fields = json.loads(line) if line.startswith("{") else {}
                return {k: int(v) for k, v in fields.items() if isinstance(v, int)}
        return {}


@dataclass
class Run:
    scenario: str
    size: dict[str, Any]
    dsn: str
    tmp: Path
    queue: str = field(default_factory=lambda: "chaos_" + uuid.uuid4().hex[:8])
    workers: list[Worker] = field(default_factory=list)
    acked: dict[str, int] = field(default_factory=dict)  # dedup key -> job id
    submit_errors: list[str] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    kills: list[tuple[str, float]] = field(default_factory=list)  # worker id, epoch seconds
    ack_times: dict[str, list[float]] = field(default_factory=dict)  # producer kind -> acknowledgements
    stop_producing: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    spawned: int = 0

    @property
    def tenant(self) -> str:
        return self.queue + "_t"

    def ack(self, kind: str, acked: dict[str, int]) -> None:
        """Record acknowledged submits (dedup key -> job id) and when a producer of this kind got them."""
        with self.lock:
            self.acked.update(acked)
            self.ack_times.setdefault(kind, []).append(time.time())


def spawn_worker(run: Run, proxy: Proxy | None, skew: str | None = None) -> Worker:
    run.spawned += 1
    name = f"{run.queue}_w{run.spawned}"
    params = conninfo_to_dict(run.dsn)
    params["application_name"] = name  # its connections, told apart in pg_stat_activity
    through_proxy = proxy is not None and run.spawned % 2 == 0
    if through_proxy:
        assert proxy is not None
        params.update(host="127.0.0.1", port=str(proxy.port), sslmode="disable")
    cmd = [
        sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()",
        "--handler", "chaos_handlers:handle", "--queue", run.queue, "--lease", str(run.size["lease"]),
        "--concurrency", "4", "--poll-interval", "0.5", "--grace", "1", "--worker-id", name,
        "--log-format", "json",
    ]  # fmt: skip
    log_path = run.tmp / f"{name}.log"
    env = {**os.environ, "JOBCTL_DSN": make_conninfo("", **params), "PYTHONUNBUFFERED": "1"}
    if skew:
        # the library itself, not the faketime command, which would fork: signals must reach the worker
        env.update(LD_PRELOAD=faketime_library(), FAKETIME=skew, FAKETIME_DONT_FAKE_MONOTONIC="1")
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=BENCH, env=env, stdout=out, stderr=subprocess.STDOUT)
    w = Worker(name, proc, log_path, skew)
    run.workers.append(w)
    return w


def faketime_library() -> str:
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1"))
    if not found:
        sys.exit("chaos: libfaketime is not installed; run make setup")
    return str(found[0])


def start_api(run: Run, port: int | None = None) -> tuple[subprocess.Popen[bytes], str, str]:
    """`jobctl serve` on 127.0.0.1:port (a free one by default) and a token of the run's tenant."""
    sql = Sql(run.dsn)
    [(token,)] = sql("select jobctl.create_api_token(%s, array['jobs:submit', 'jobs:read'])", (run.tenant,))
    port = port or free_port()
    params = conninfo_to_dict(run.dsn)
    params["application_name"] = run.queue + "_api"
    env = {**os.environ, "JOBCTL_DSN": make_conninfo("", **params)}
    out = open(run.tmp / "api.log", "wb")  # noqa: SIM115 (open for the process's life)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobctl.cli", "serve", "--port", str(port)], env=env, stdout=out, stderr=out
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/api/v1/health", timeout=1).status_code < 500:
                return proc, base, str(token)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the API did not start; see " + str(run.tmp / "api.log"))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def job_spec(run: Run, key: str) -> dict[str, Any]:
    return {
        "tenant_id": run.tenant,
        "queue": run.queue,
        "payload": {"work": round(random.uniform(0, 0.6), 3), "tx": round(random.uniform(0, 0.4), 3)},
        "dedup_key": key,
        "max_attempts": 1000,
        "backoff": {"strategy": "fixed", "base": "0.1 seconds", "max": "1 second", "jitter": False},
    }


def produce_sql(run: Run, rate: float) -> None:
    """Batches of 1-5 jobs through submit_jobs, each batch retried until acknowledged."""
    sql, n = Sql(run.dsn), 0
    while not run.stop_producing.is_set():
        keys = [f"{run.queue}-s{n + i}" for i in range(random.randint(1, 5))]
        n += len(keys)
        jobs = json.dumps([job_spec(run, k) for k in keys])
        try:
            rows = sql("select job_id from jobctl.submit_jobs(%s::jsonb)", (jobs,), timeout=600)
        except psycopg.Error as e:  # not a lost connection: an answer, which a retry would repeat
            run.submit_errors.append(f"sql: {e}")
            continue
        run.ack("sql", dict(zip(keys, (int(r[0]) for r in rows), strict=True)))
        time.sleep(len(keys) / rate)


def produce_api(run: Run, base: str, token: str, rate: float) -> None:
    """One job a request through the API, retried until it answers 201 or 200 (a duplicate)."""
    headers, n = {"Authorization": f"Bearer {token}"}, 0
    with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
        while not run.stop_producing.is_set():
            key = f"{run.queue}-a{n}"
            n += 1
            spec = job_spec(run, key)
            spec.pop("tenant_id")
            while True:
                try:
                    r = client.post("/api/v1/jobs", json=spec)
                except httpx.HTTPError:
                    time.sleep(0.2)
                    continue
                if r.status_code in (200, 201):
                    run.ack("api", {key: int(r.json()["job"]["job_id"])})
                    break
                if r.status_code < 500 and r.status_code != 429:
                    run.submit_errors.append(f"api {r.status_code}: {r.text[:200]}")
                    break
                time.sleep(0.2)
            time.sleep(1 / rate)


def start_producers(run: Run, base: str, token: str, rate: float) -> list[threading.Thread]:
    """The SQL and the API producer, half the rate each, running until run.stop_producing."""
    producers = [
        threading.Thread(target=guarded, args=(run, produce_sql, run, rate / 2), daemon=True),
        threading.Thread(target=guarded, args=(run, produce_api, run, base, token, rate / 2), daemon=True),
    ]
    for t in producers:
        t.start()
    return producers


def guarded(run: Run, target: Any, *args: Any) -> None:
    """Run a producer; its death is a submit error in the report, not a thread's traceback."""
    try:
        target(*args)
    except Exception as e:
        run.submit_errors.append(f"{target.__name__} died: {e!r}")


def holding(sql: Sql, worker: Worker) -> list[int]:
    return [int(r[0]) for r in sql("select job_id from jobctl._running where worker_id = %s", (worker.name,))]


def busy_worker(run: Run, sql: Sql) -> Worker:
    """A live worker running jobs (any live one when none is)."""
    live = [w for w in run.workers if w.proc.poll() is None]
    rows = sql("select distinct worker_id from jobctl._running where worker_id like %s", (run.queue + "_w%",))
    names = {r[0] for r in rows}
    busy = [w for w in live if w.name in names]
    return random.choice(busy or live)


def do_fault(run: Run, sql: Sql, proxy: Proxy, fault: str, cluster: str | None) -> dict[str, Any]:
    size, at = run.size, time.time()
    if fault == "kill":
        w = busy_worker(run, sql)
        jobs = holding(sql, w)
        w.proc.kill()
        w.proc.wait()
        run.kills.append((w.name, at))
        spawn_worker(run, proxy)
        return {"fault": fault, "worker": w.name, "jobs": len(jobs)}
    if fault == "zombie":
        w = busy_worker(run, sql)
        jobs = holding(sql, w)
        w.proc.send_signal(signal.SIGSTOP)
        time.sleep(size["stop"])
        w.proc.send_signal(signal.SIGCONT)
        return {"fault": fault, "worker": w.name, "jobs": len(jobs), "stopped_s": size["stop"]}
    if fault == "terminate":
        rows = sql(
            "select count(*) filter (where pg_terminate_backend(pid)) from pg_stat_activity"
            " where application_name like %s and pid <> pg_backend_pid()",
            (run.queue + "%",),
        )
        return {"fault": fault, "connections": int(rows[0][0])}
    if fault == "restart":
        if cluster is None:
            return {"fault": fault, "skipped": "the cluster is not one of bin/db's"}
        env = {**os.environ, "JOBCTL_PGNAME": cluster}
        for step in ("stop", "start"):
            subprocess.run(
                [str(ROOT / "bin" / "db"), step], env=env, check=True, capture_output=True, timeout=120
            )
        return {"fault": fault, "down_s": round(time.time() - at, 2)}
    # partition
    reset = random.random() < 0.5
    proxy.cut()
    time.sleep(size["lease"] * 1.5 + 0.5)
    proxy.heal(reset)
    return {"fault": fault, "cut_s": round(time.time() - at, 2), "reset": reset}


def bin_db_cluster(sql: Sql) -> str | None:
    """The name bin/db knows the server's cluster by (.pg, .test-pg or .bench-pg), if it is one of them."""
    [(data,)] = sql("show data_directory")
    for name in (".pg", ".test-pg", ".bench-pg"):
        here = ROOT / name / "data"
        if here.exists() and os.path.realpath(here) == os.path.realpath(data):
            return name
    return None


def fault_loop(run: Run, sql: Sql, proxy: Proxy) -> None:
    cluster = bin_db_cluster(sql)
    end = time.monotonic() + run.size["seconds"]
    cycle: list[str] = []
    while time.monotonic() < end:
        time.sleep(random.uniform(*run.size["every"]))
        if not cycle:
            cycle = random.sample(FAULTS, len(FAULTS))
        fault = cycle.pop()
        record = do_fault(run, sql, proxy, fault, cluster)
        log(json.dumps(record))
        run.faults.append(record)


PHASES = ("working", "in_transaction", "heartbeat")


def zombie_loop(run: Run, sql: Sql, worker: Worker, trials: list[dict[str, Any]], wanted: int) -> None:
    """Stop this worker, for longer than its lease, at a moment of a phase picked at random:
    working (jobs held, no transaction of its open), in_transaction (its job transaction open on the
    server: the ledger row written, the completion not yet), or heartbeat (a heartbeat in flight: the
    harness holds the job's _running row, so the heartbeat waits on it, stops the worker, then lets
    the heartbeat through, whose answer the stopped worker never reads)."""
    while len(trials) < wanted:
        time.sleep(random.uniform(0.05, 1.0))
        phase = random.choice(PHASES)
        blocker = psycopg.connect(run.dsn, application_name="chaos-harness") if phase == "heartbeat" else None
        try:
            jobs = holding(sql, worker)
            if not jobs:
                continue
            if blocker is not None:
                blocker.execute("select from jobctl._running where job_id = %s for update", (jobs[0],))
            if not caught(sql, worker, phase, timeout=run.size["lease"]):
                continue
            worker.proc.send_signal(signal.SIGSTOP)
            stopped_at = time.monotonic()
        finally:
            if blocker is not None:
                blocker.close()
        time.sleep(max(0.0, run.size["stop"] + random.uniform(0, 1.5) - (time.monotonic() - stopped_at)))
        worker.proc.send_signal(signal.SIGCONT)
        trials.append({"worker": worker.name, "skew": worker.skew, "jobs": len(jobs), "phase": phase})


def caught(sql: Sql, worker: Worker, phase: str, timeout: float) -> bool:
    """Wait (polling every 5 ms) until the worker is in the phase, as its connections show."""
    query = {
        "working": "select not exists (select from pg_stat_activity where application_name = %s"
        " and state like 'idle in transaction%%')",
        "in_transaction": "select exists (select from pg_stat_activity where application_name = %s"
        " and state = 'idle in transaction' and query like '%%chaos_ledger%%')",
        "heartbeat": "select exists (select from pg_stat_activity where application_name = %s"
        " and state = 'active' and query like '%%jobctl.heartbeat%%' and wait_event_type = 'Lock')",
    }[phase]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sql(query, (worker.name,))[0][0]:
            return True
        time.sleep(0.005)
    return False


def drain_and_stop(run: Run, sql: Sql, api: subprocess.Popen[bytes], within: float) -> None:
    """Wait up to `within` seconds for every acknowledged job to complete, then stop the workers
    (SIGTERM, SIGKILL after 30 s) and the API."""
    drain_by = time.monotonic() + within
    ids = list(run.acked.values())
    while time.monotonic() < drain_by:
        [(left,)] = sql(
            "select count(*) from jobctl.job where job_id = any(%s) and state <> 'completed'", [ids]
        )
        if left == 0:
            break
        time.sleep(0.5)
    for w in run.workers:
        if w.proc.poll() is None:
            w.proc.send_signal(signal.SIGTERM)
    for w in run.workers:
        try:
            w.proc.wait(30)
        except subprocess.TimeoutExpired:
            w.proc.kill()
    api.terminate()
    api.wait(30)


def invariants(run: Run, sql: Sql) -> dict[str, Any]:
    keys, ids = list(run.acked), list(run.acked.values())
    [(found, two)] = sql(
        "select (select count(*) from jobctl.job where job_id = any(%s)),"
        " (select count(*) from (select dedup_key from jobctl.job where dedup_key = any(%s)"
        "  group by tenant_id, dedup_key having count(*) > 1) as d)",
        (ids, keys),
    )
    [(unfinished, duplicates, missing, stray, attempts)] = sql(
        """
        with j as (select job_id, state, lease_epoch, attempt from jobctl.job where job_id = any(%s)),
        l as (select job_id, count(*) as n, max(lease_epoch) as epoch from public.chaos_ledger
              where job_id = any(%s) group by job_id)
        select count(*) filter (where j.state <> 'completed'),
            count(*) filter (where l.n > 1),
            count(*) filter (where j.state = 'completed' and l.job_id is null),
            count(*) filter (where l.epoch <> j.lease_epoch),
            coalesce(sum(j.attempt), 0)
        from j left join l on l.job_id = j.job_id
        """,
        (ids, ids),
    )
    # every attempt's claim and end, through job_history (the last attempt's claim is on the job row)
    sql(
        "create temp table if not exists attempts on commit preserve rows as"
        " select j.job_id, h.attempt, min(h.at) filter (where h.event = 'claimed') as claimed,"
        " max(h.at) filter (where h.event <> 'claimed') as ended,"
        " max(h.event) filter (where h.event <> 'claimed') as how, max(h.worker_id) as worker_id"
        " from unnest(%s::bigint[]) as j (job_id) cross join lateral jobctl.job_history(j.job_id) as h"
        " where h.attempt > 0 group by j.job_id, h.attempt",
        (ids,),
    )
    [(overlaps,)] = sql(
        "select count(*) from attempts as a join attempts as b on b.job_id = a.job_id"
        " and b.attempt = a.attempt + 1 where b.claimed < a.ended"
    )
    # a killed worker's attempts ended after the kill (by the reaper): how long until claimable, claimed
    requeue = sql(
        "select to_timestamp(k.at), a.ended, b.claimed"
        " from unnest(%s::text[], %s::float8[]) as k (worker_id, at)"
        " join attempts as a on a.worker_id = k.worker_id and a.how <> 'completed'"
        " and a.ended >= to_timestamp(k.at)"
        " left join attempts as b on b.job_id = a.job_id and b.attempt = a.attempt + 1",
        ([w for w, _ in run.kills], [t for _, t in run.kills]),
    )
    requeue_s = [(e - k).total_seconds() for k, e, _ in requeue]
    reclaim_s = [(n - k).total_seconds() for k, _, n in requeue if n is not None]
    return {
        "jobs": len(ids),
        "attempts": int(attempts),
        "lost": len(ids) - int(found) + int(two),
        "unfinished": int(unfinished),
        "duplicates": int(duplicates),
        "missing": int(missing),
        "stray": int(stray),
        "overlaps": int(overlaps),
        "orphans_requeued": len(requeue_s),
        "requeue_max_s": round(max(requeue_s), 2) if requeue_s else None,
        "reclaim_max_s": round(max(reclaim_s), 2) if reclaim_s else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=sorted(SIZES), default="faults")
    ap.add_argument("--small", action="store_true", help="the scaled-down run `make test` does")
    ap.add_argument("--dsn", default=None, help="default: the development cluster's (.pg/dsn, JOBCTL_DSN)")
    args = ap.parse_args()
    size = SIZES[args.scenario]["small" if args.small else "full"]
    dsn = args.dsn or db.dsn()
    tmp = Path(tempfile.mkdtemp(prefix="jobctl-chaos-"))
    run = Run(args.scenario, size, dsn, tmp)
    sql = Sql(dsn)
    sql(LEDGER_DDL)
    params = conninfo_to_dict(dsn)
    socket_path = f"{params['host']}/.s.PGSQL.{params.get('port', 5432)}"
    proxy = Proxy(socket_path) if args.scenario == "faults" else None
    started = time.monotonic()
    for i in range(size["workers"]):
        skew = SKEWS[i // 3 % 2] if args.scenario == "zombies" and i % 3 == 2 else None
        spawn_worker(run, proxy, skew)
    api, base, token = start_api(run)
    producers = start_producers(run, base, token, size["rate"])
    trials: list[dict[str, Any]] = []
    if args.scenario == "faults":
        assert proxy is not None
        fault_loop(run, sql, proxy)
    else:
        loops = [
            threading.Thread(target=zombie_loop, args=(run, Sql(dsn), w, trials, size["trials"]), daemon=True)
            for w in run.workers
        ]
        for t in loops:
            t.start()
        for t in loops:
            t.join()
    run.stop_producing.set()
    for t in producers:
        t.join(120)
    faulted_s = time.monotonic() - started
    drain_and_stop(run, sql, api, size["lease"] * 4 + 120)
    drained_s = time.monotonic() - started - faulted_s
    counts: dict[str, int] = {}
    for w in run.workers:
        for k, v in w.summary().items():
            counts[k] = counts.get(k, 0) + v
    result: dict[str, Any] = {
        "scenario": args.scenario,
        "size": "small" if args.small else "full",
        "lease_s": size["lease"],
        "faulted_s": round(faulted_s, 1),
        "drained_s": round(drained_s, 1),
        "workers_started": run.spawned,
        "submit_errors": len(run.submit_errors),
        **invariants(run, sql),
        "worker_counts": counts,
    }
    if args.scenario == "faults":
        injected: dict[str, int] = {}
        for f in run.faults:
            injected[f["fault"]] = injected.get(f["fault"], 0) + ("skipped" not in f)
        result["faults"] = injected
        downs = [f["down_s"] for f in run.faults if "down_s" in f]
        result["restart_max_s"] = max(downs) if downs else None
    else:
        phases: dict[str, int] = {}
        for trial in trials:
            phases[trial["phase"]] = phases.get(trial["phase"], 0) + 1
        result["trials"] = len(trials)
        result["skewed_trials"] = sum(1 for trial in trials if trial["skew"])
        result["phases"] = phases
    print(json.dumps(result))
    for e in run.submit_errors[:5]:
        log("submit error: " + e)
    print_table(result)
    if not args.small:
        out = ROOT / "benchmarks" / "results" / f"chaos_{args.scenario}.jsonl"
        out.write_text(json.dumps(result) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)


def print_table(r: dict[str, Any]) -> None:
    rows = [(k, v) for k, v in r.items() if not isinstance(v, dict)]
    rows += [(f"{k}.{kk}", vv) for k, v in r.items() if isinstance(v, dict) for kk, vv in v.items()]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
