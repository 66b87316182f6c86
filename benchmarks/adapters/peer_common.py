"""Shared plumbing for the Python peer adapters (pgqueuer, procrastinate).

Implements the parts of the adapter protocol (benchmarks/adapters/README.md) that do not depend
on the peer: the argparse command line, the stdout/stderr discipline, the enqueue loops (bulk,
single from C connections, paced on an absolute schedule), the `ready` / `go` handshake, SIGTERM
handling and the out file of `work`. Each adapter supplies the peer-specific coroutines.

Runs inside benchmarks/.venv-peers only; imports nothing from jobctl or from a peer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

log = logging.getLogger("adapter")


def setup_logging(name: str) -> None:
    """Everything goes to stderr; stdout carries only `ready` or the final JSON line."""
    level = os.environ.get("BENCH_ADAPTER_LOG", "WARNING").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.WARNING),
        format=f"%(asctime)s {name} %(levelname)s %(name)s: %(message)s",
    )
    log.setLevel(logging.INFO)


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def parse_args(prog: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=prog, description="benchmark adapter (see README.md)")
    sub = p.add_subparsers(dest="cmd", required=True)

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--dsn", required=True, help="postgresql://postgres@127.0.0.1:PORT/bench")
        return sp

    add("install", "create the peer's schema in the empty database")
    sp = add("enqueue-bulk", "N jobs through the batch API, B per call/transaction")
    sp.add_argument("--jobs", type=int, required=True)
    sp.add_argument("--batch", type=int, required=True)
    sp.add_argument("--first", type=int, default=0)
    sp = add("enqueue-single", "N jobs one per call/transaction from C connections")
    sp.add_argument("--jobs", type=int, required=True)
    sp.add_argument("--clients", type=int, required=True)
    sp.add_argument("--first", type=int, default=0)
    sp = add("enqueue-paced", "one job every 1/R s for S s (absolute schedule)")
    sp.add_argument("--rate", type=float, required=True)
    sp.add_argument("--seconds", type=float, required=True)
    sp.add_argument("--first", type=int, default=0)
    sp = add("work", "run the peer's worker: ready, wait for go, work until SIGTERM")
    sp.add_argument("--setting", default="{}", help="JSON object of adapter-defined keys")
    sp.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.cmd == "work":
        try:
            args.setting = json.loads(args.setting)
        except json.JSONDecodeError as e:
            p.error(f"--setting is not JSON: {e}")
        if not isinstance(args.setting, dict):
            p.error("--setting must be a JSON object")
    for name in ("jobs", "batch", "clients"):
        if getattr(args, name, 1) < 1:
            p.error(f"--{name} must be >= 1")
    if args.cmd == "enqueue-paced" and (args.rate <= 0 or args.seconds <= 0):
        p.error("--rate and --seconds must be > 0")
    return args


def check_setting(setting: dict[str, Any], allowed: dict[str, type | tuple[type, ...]]) -> dict[str, Any]:
    """Validate the work setting. `procs` is the orchestrator's key (number of worker
    processes it starts); it is accepted and ignored here, since one process runs one worker."""
    out: dict[str, Any] = {}
    for key, value in setting.items():
        if key == "procs":
            continue
        if key not in allowed:
            raise SystemExit(f"unknown setting key {key!r}; accepted: {sorted(allowed)} (+ procs)")
        if value is not None and not isinstance(value, allowed[key]):
            raise SystemExit(f"setting {key!r} has the wrong type: {value!r}")
        out[key] = value
    return out


# --------------------------------------------------------------------------- enqueue loops


async def bulk_loop(
    jobs: int, batch: int, first: int, enqueue_batch: Callable[[list[dict[str, Any]]], Awaitable[Any]]
) -> float:
    """Call `enqueue_batch(payloads)` for consecutive slices of B payloads; return the seconds
    spent in the loop (connection set-up excluded: the caller connects before)."""
    start = time.perf_counter()
    n = first
    end = first + jobs
    while n < end:
        upto = min(n + batch, end)
        await enqueue_batch([{"n": i} for i in range(n, upto)])
        n = upto
    return time.perf_counter() - start


async def single_loop(
    jobs: int, first: int, enqueuers: Sequence[Callable[[dict[str, Any]], Awaitable[Any]]]
) -> float:
    """C concurrent clients (one per element of `enqueuers`, each bound to its own connection)
    take the next n from a shared counter until N jobs are enqueued."""
    it = iter(range(first, first + jobs))

    async def client(enqueue: Callable[[dict[str, Any]], Awaitable[Any]]) -> None:
        for n in it:  # shared iterator: one event loop thread, no race
            await enqueue({"n": n})

    start = time.perf_counter()
    await asyncio.gather(*(client(e) for e in enqueuers))
    return time.perf_counter() - start


async def paced_loop(
    rate: float, seconds: float, first: int, enqueue: Callable[[dict[str, Any]], Awaitable[Any]]
) -> tuple[int, float]:
    """Job i is due at start + i/R (absolute schedule, no drift) for every i/R < S; its payload
    carries `t` = wall-clock ms when the enqueue call began. Calls are sequential on one
    connection; a late call is made at once (no skipping), so a slow peer shows as lateness."""
    count = max(1, int(round(rate * seconds)))
    loop = asyncio.get_running_loop()
    start = loop.time()
    t0 = time.perf_counter()
    late = 0
    for i in range(count):
        due = start + i / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.005:
            late += 1
        await enqueue({"n": first + i, "t": time.time() * 1000.0})
    elapsed = time.perf_counter() - t0
    if late:
        log.warning("paced: %d of %d enqueue calls started more than 5 ms late", late, count)
    return count, elapsed


# --------------------------------------------------------------------------- work plumbing


class Recorder:
    """What the no-op handler saw: every n, and for paced payloads the pickup latency."""

    def __init__(self) -> None:
        self.handled: list[int] = []
        self.latency_ms: list[float] = []

    def record(self, payload: dict[str, Any]) -> None:
        now_ms = time.time() * 1000.0  # first thing at handler start
        self.handled.append(payload["n"])
        t = payload.get("t")
        if t is not None:
            self.latency_ms.append(now_ms - t)

    def write(self, path: str) -> None:
        data = {"handled": self.handled, "latency_ms": self.latency_ms, "cpu_s": time.process_time()}
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
        log.info("wrote %s: %d handled, %d latencies", path, len(self.handled), len(self.latency_ms))


class Control:
    """`go` from stdin (read by a daemon thread) and SIGTERM/SIGINT, as asyncio events.
    Create inside the running loop."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.go = asyncio.Event()
        self.stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._on_signal, sig)
        threading.Thread(target=self._read_stdin, name="stdin-go", daemon=True).start()

    def _on_signal(self, sig: int) -> None:
        log.info("got signal %s, stopping", signal.Signals(sig).name)
        self.stop.set()

    def _read_stdin(self) -> None:
        for line in sys.stdin:
            if line.strip() == "go":
                self.loop.call_soon_threadsafe(self.go.set)
                return
            log.warning("ignoring stdin line %r (waiting for 'go')", line.strip())
        log.warning("stdin closed before 'go'; waiting for SIGTERM")

    @staticmethod
    def ready() -> None:
        sys.stdout.write("ready\n")
        sys.stdout.flush()

    async def wait_go(self) -> bool:
        """True once `go` arrived; False if a stop signal came first."""
        go = asyncio.ensure_future(self.go.wait())
        stop = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait((go, stop), return_when=asyncio.FIRST_COMPLETED)
        for t in (go, stop):
            t.cancel()
        return self.go.is_set() and not self.stop.is_set()
