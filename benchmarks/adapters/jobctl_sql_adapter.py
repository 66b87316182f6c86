"""The engine's ceiling: jobctl through its SQL contract alone, with no worker (system `jobctl-sql`).

The same install and enqueues as jobctl_adapter.py; `work` is the thinnest loop a service could write
over the contract: claim_job(max_jobs => 500, flush => false, as the worker claims), the no-op
handler for each row, complete_jobs for the batch, then at once again while claims come back full,
else wait for a hint (LISTEN jobctl) or 10 ms. No heartbeats, timeouts, stops or retries: what the
real worker (`jobctl`) adds on top of this is what docs/benchmarks.md measures as the ratio
jobctl / jobctl-sql.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from datetime import timedelta
from typing import Any

import psycopg
from jobctl import queries
from jobctl.worker.calls import bigint_array
from jobctl_adapter import QUEUE, main

MAX_JOBS = 500
POLL = 0.01
# the worker's claim and completion statements, without the columns a no-op handler does not read
CLAIM = "select job_id, lease_epoch, payload::text from jobctl.claim_job(%s, %s, %s, %s, flush => false)"


async def work(a: argparse.Namespace) -> None:
    setting = json.loads(a.setting)
    max_jobs = int(setting.get("max_jobs", MAX_JOBS))
    handled: list[int] = []
    latency_ms: list[float] = []
    conn = await psycopg.AsyncConnection.connect(a.dsn, autocommit=True)
    listener = await psycopg.AsyncConnection.connect(a.dsn, autocommit=True)
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    line = await loop.run_in_executor(None, sys.stdin.readline)
    hinted = asyncio.Event()

    async def listen() -> None:
        await listener.execute(queries.LISTEN)
        async for _ in listener.notifies():
            hinted.set()

    listening = asyncio.create_task(listen())
    lease = timedelta(seconds=30)
    worker_id = f"thin-{id(conn)}"
    while line.strip() == "go" and not stop.is_set():
        hinted.clear()
        cur = await conn.execute(CLAIM, (worker_id, [QUEUE], max_jobs, lease))
        rows = await cur.fetchall()
        for _, _, payload in rows:  # the no-op handler
            now = time.time() * 1000
            doc: dict[str, Any] = json.loads(payload)
            handled.append(doc["n"])
            if "t" in doc:
                latency_ms.append(now - doc["t"])
        if rows:
            ids = bigint_array(r[0] for r in rows)
            epochs = bigint_array(r[1] for r in rows)
            await conn.execute(
                queries.COMPLETE_JOBS, {"job_ids": ids, "lease_epochs": epochs, "results": None}
            )
        if len(rows) < max_jobs:
            waits = [asyncio.ensure_future(hinted.wait()), asyncio.ensure_future(stop.wait())]
            await asyncio.wait(waits, timeout=POLL, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
    listening.cancel()
    await conn.close()
    await listener.close()
    with open(a.out, "w") as f:
        json.dump({"handled": handled, "latency_ms": latency_ms, "cpu_s": time.process_time()}, f)


if __name__ == "__main__":
    main(work)
