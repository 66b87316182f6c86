"""What the sync client's path costs a call: `Client` (each call a plan its own executor runs on its
connection) beside a sync facade over `AsyncClient` (each call handed to an event loop in a thread
and waited for), the other way to write the calls once. Rounds alternate the two; each round is N
`submit` + N `get_job` calls, and a round's figure is its time a call. Prints the best and the
median round of each, in microseconds.

    .venv/bin/python benchmarks/client_paths.py --dsn "$(cat .test-pg/dsn)"   # 3 rounds of 1,000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from jobctl import AsyncClient, Client


class Facade:
    """AsyncClient's calls, each run to its end on a loop in a thread of its own."""

    def __init__(self, dsn: str) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.client = AsyncClient(dsn)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.client, name)
        return lambda *a, **k: asyncio.run_coroutine_threadsafe(method(*a, **k), self.loop).result()


def per_call(client: Any, tenant: str, n: int) -> float:
    """Microseconds a call over n submits and n get_jobs."""
    start = time.perf_counter()
    for i in range(n):
        client.get_job(client.submit(tenant, "paths", {"n": i}).job_id)
    return (time.perf_counter() - start) / (2 * n) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--calls", type=int, default=1000, help="submits (and as many get_jobs) a round")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tenant = "client_paths"
    with Client(args.dsn) as client:
        client.put_tenant(tenant)
        designs: dict[str, Any] = {"Client": client, "sync facade over AsyncClient": Facade(args.dsn)}
        times: dict[str, list[float]] = {name: [] for name in designs}
        for design in designs.values():
            per_call(design, tenant, 10)  # connect
        for r in range(args.rounds):
            for name in list(designs)[:: 1 if r % 2 == 0 else -1]:
                times[name].append(per_call(designs[name], tenant, args.calls))
        for action in (client.cancel_jobs, client.delete_jobs):  # leave the database as it was
            after: int | None = None
            while not (batch := action({"tenant_id": tenant, "queue": "paths"}, 1000, after)).done:
                after = batch.last_id
    for name, t in times.items():
        print(f"{name:30} best {min(t):8.1f} us/call  median {statistics.median(t):8.1f}")


if __name__ == "__main__":
    main()
