"""jobctl's benchmark adapter (protocol: benchmarks/adapters/README.md), run by the project's venv.

It uses the product as a service would: submit_jobs / submit_job from queries.py for enqueues, and
the real worker (jobctl.worker.Worker, every guarantee on: leases, heartbeats, fencing, history) for
`work`. All jobs go to tenant `bench`, queue `bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from jobctl import migrate, queries
from jobctl.worker import Job, Worker, run_loop
from psycopg.types.json import Jsonb

TENANT = QUEUE = "bench"


def spec(n: int, **extra: Any) -> dict[str, Any]:
    return {"tenant_id": TENANT, "queue": QUEUE, "payload": {"n": n, **extra}}


def install(a: argparse.Namespace) -> dict[str, Any]:
    with psycopg.connect(a.dsn) as conn:
        migrate.migrate(conn)
    return {}


def enqueue_bulk(a: argparse.Namespace) -> dict[str, Any]:
    with psycopg.connect(a.dsn, autocommit=True) as conn:
        batches = [
            Jsonb([spec(n) for n in range(start, min(start + a.batch, a.first + a.jobs))])
            for start in range(a.first, a.first + a.jobs, a.batch)
        ]
        t0 = time.perf_counter()
        for batch in batches:
            conn.execute(queries.SUBMIT_JOBS, {"jobs": batch}).fetchall()
        return {"seconds": time.perf_counter() - t0, "jobs": a.jobs}


async def enqueue_single(a: argparse.Namespace) -> dict[str, Any]:
    conns = [await psycopg.AsyncConnection.connect(a.dsn, autocommit=True) for _ in range(a.clients)]
    todo = iter(range(a.first, a.first + a.jobs))

    async def client(conn: psycopg.AsyncConnection[Any]) -> None:
        for n in todo:
            await conn.execute(
                queries.SUBMIT_JOB, {"tenant_id": TENANT, "queue": QUEUE, "payload": Jsonb({"n": n})}
            )

    t0 = time.perf_counter()
    await asyncio.gather(*(client(c) for c in conns))
    seconds = time.perf_counter() - t0
    for c in conns:
        await c.close()
    return {"seconds": seconds, "jobs": a.jobs}


async def enqueue_paced(a: argparse.Namespace) -> dict[str, Any]:
    async with await psycopg.AsyncConnection.connect(a.dsn, autocommit=True) as conn:
        total = int(a.rate * a.seconds)
        t0 = time.perf_counter()
        for i in range(total):
            delay = t0 + i / a.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            payload = Jsonb({"n": a.first + i, "t": time.time() * 1000})
            await conn.execute(queries.SUBMIT_JOB, {"tenant_id": TENANT, "queue": QUEUE, "payload": payload})
        return {"jobs": total, "seconds": time.perf_counter() - t0}


async def work(a: argparse.Namespace) -> None:
    setting = json.loads(a.setting)
    handled: list[int] = []
    latency_ms: list[float] = []

    async def handle(job: Job) -> None:
        now = time.time() * 1000
        handled.append(job.payload["n"])
        if "t" in job.payload:
            latency_ms.append(now - job.payload["t"])

    worker = Worker(
        handle,
        dsn=a.dsn,
        queues=[QUEUE],
        concurrency=int(setting.get("concurrency", 100)),
        poll_interval=float(setting.get("poll_interval", 1.0)),
        lease=float(setting.get("lease", 30.0)),
        grace=5.0,
    )
    with psycopg.connect(a.dsn):  # reachable: the worker itself connects on `go`
        pass
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)  # before `go`: the worker takes it over then
    line = await loop.run_in_executor(None, sys.stdin.readline)
    if line.strip() == "go" and not stop.is_set():
        loop.remove_signal_handler(signal.SIGTERM)
        await worker.run()
    with open(a.out, "w") as f:
        json.dump({"handled": handled, "latency_ms": latency_ms, "cpu_s": time.process_time()}, f)


def main(work: Callable[[argparse.Namespace], Awaitable[None]] = work) -> None:
    """The adapter's subcommands; `work` runs the workers (jobctl_sql_adapter.py passes its thin loop)."""
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("install", "enqueue-bulk", "enqueue-single", "enqueue-paced", "work"):
        p = sub.add_parser(name)
        p.add_argument("--dsn", required=True)
        if name.startswith("enqueue"):
            p.add_argument("--first", type=int, default=0)
        if name in ("enqueue-bulk", "enqueue-single"):
            p.add_argument("--jobs", type=int, required=True)
        if name == "enqueue-bulk":
            p.add_argument("--batch", type=int, default=1000)
        if name == "enqueue-single":
            p.add_argument("--clients", type=int, default=8)
        if name == "enqueue-paced":
            p.add_argument("--rate", type=float, required=True)
            p.add_argument("--seconds", type=float, required=True)
        if name == "work":
            p.add_argument("--setting", default="{}")
            p.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "work":
        run_loop(work(a))  # the event loop `jobctl worker` runs on
        return
    run = {
        "install": install,
        "enqueue-bulk": enqueue_bulk,
        "enqueue-single": lambda a: asyncio.run(enqueue_single(a)),
        "enqueue-paced": lambda a: asyncio.run(enqueue_paced(a)),
    }[a.cmd]
    print(json.dumps(run(a)), flush=True)


if __name__ == "__main__":
    main()
