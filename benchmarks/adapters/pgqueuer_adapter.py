"""Benchmark adapter for pgqueuer 1.6.0 (asyncpg driver). Protocol: benchmarks/adapters/README.md.

    benchmarks/.venv-peers/bin/python benchmarks/adapters/pgqueuer_adapter.py <subcommand> --dsn URL ...

- install:        `Queries.install()` (what `pgq install` runs), into the connection's
                  search_path (public): tables pgqueuer, pgqueuer_log, pgqueuer_statistics,
                  pgqueuer_schedules, enum pgqueuer_status, trigger tg_pgqueuer_changed.
- enqueue-bulk:   `Queries.enqueue([...], [...], [...])` with lists: one INSERT ... UNNEST per
                  batch, autocommit (each call its own transaction), one connection.
- enqueue-single: `Queries.enqueue("noop", payload)` from C asyncpg connections.
- enqueue-paced:  `Queries.enqueue("noop", payload)` on one connection, absolute schedule.
- work:           a `QueueManager` on one asyncpg connection (`AsyncpgDriver`, as in pgqueuer's
                  docs) with entrypoint "noop"; `qm.run(batch_size=..., ...)`; SIGTERM sets
                  `qm.shutdown`, which lets in-flight jobs finish and flushes the buffered
                  completions before `run` returns.

Setting keys (work): batch_size (dequeue batch and completion-buffer size, default 10),
max_concurrent_tasks (default unset = unbounded), dequeue_timeout (s, polling fallback,
default 30), heartbeat_timeout (s, default 30), log_aggregation_interval (s, default 30;
0 disables), procs (ignored: the orchestrator's process count).

Unfinished jobs: `select count(*) from pgqueuer` (finished rows are deleted; the history
goes to pgqueuer_log).

Event loop: uvloop, as pgqueuer's own CLI (`pgq run`) uses it when installed (it is a
dependency of pgqueuer on Linux).
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from typing import Any

import asyncpg
import peer_common as pc
import uvloop
from pgqueuer import Job, QueueManager
from pgqueuer.adapters.drivers.asyncpg import AsyncpgDriver
from pgqueuer.queries import Queries

ENTRYPOINT = "noop"
log = logging.getLogger("adapter")


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


async def connect(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn)


async def cmd_install(args: Any) -> dict[str, Any]:
    conn = await connect(args.dsn)
    try:
        q = Queries(AsyncpgDriver(conn))
        if await q.schema_is_installed():
            raise SystemExit("pgqueuer is already installed in this database")
        await q.install()
    finally:
        await conn.close()
    return {}


async def cmd_enqueue_bulk(args: Any) -> dict[str, Any]:
    conn = await connect(args.dsn)
    try:
        q = Queries(AsyncpgDriver(conn))

        async def enqueue_batch(payloads: list[dict[str, Any]]) -> None:
            k = len(payloads)
            await q.enqueue([ENTRYPOINT] * k, [encode(p) for p in payloads], [0] * k)

        seconds = await pc.bulk_loop(args.jobs, args.batch, args.first, enqueue_batch)
    finally:
        await conn.close()
    return {"seconds": seconds, "jobs": args.jobs}


async def cmd_enqueue_single(args: Any) -> dict[str, Any]:
    conns = await asyncio.gather(*(connect(args.dsn) for _ in range(args.clients)))
    try:
        enqueuers = []
        for conn in conns:
            q = Queries(AsyncpgDriver(conn))

            async def enqueue(payload: dict[str, Any], q: Queries = q) -> None:
                await q.enqueue(ENTRYPOINT, encode(payload))

            enqueuers.append(enqueue)
        seconds = await pc.single_loop(args.jobs, args.first, enqueuers)
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    return {"seconds": seconds, "jobs": args.jobs}


async def cmd_enqueue_paced(args: Any) -> dict[str, Any]:
    conn = await connect(args.dsn)
    try:
        q = Queries(AsyncpgDriver(conn))

        async def enqueue(payload: dict[str, Any]) -> None:
            await q.enqueue(ENTRYPOINT, encode(payload))

        jobs, seconds = await pc.paced_loop(args.rate, args.seconds, args.first, enqueue)
    finally:
        await conn.close()
    return {"jobs": jobs, "seconds": seconds}


SETTING_KEYS: dict[str, Any] = {
    "batch_size": int,
    "max_concurrent_tasks": int,
    "dequeue_timeout": (int, float),
    "heartbeat_timeout": (int, float),
    "log_aggregation_interval": (int, float),
}


async def cmd_work(args: Any) -> None:
    setting = pc.check_setting(args.setting, SETTING_KEYS)
    run_kwargs: dict[str, Any] = {"batch_size": setting.get("batch_size", 10)}
    if setting.get("max_concurrent_tasks") is not None:
        run_kwargs["max_concurrent_tasks"] = setting["max_concurrent_tasks"]
    for key in ("dequeue_timeout", "heartbeat_timeout", "log_aggregation_interval"):
        if setting.get(key) is not None:
            run_kwargs[key] = timedelta(seconds=setting[key])

    ctl = pc.Control()
    rec = pc.Recorder()
    conn = await connect(args.dsn)
    try:
        qm = QueueManager(Queries(AsyncpgDriver(conn)))

        @qm.entrypoint(ENTRYPOINT)
        async def noop(job: Job) -> None:
            rec.record(json.loads(job.payload))

        await qm.verify_structure()  # fail before `ready` if the schema is missing
        ctl.ready()
        if await ctl.wait_go():
            log.info("go: qm.run(%s)", run_kwargs)
            runner = asyncio.create_task(qm.run(**run_kwargs))
            stop = asyncio.create_task(ctl.stop.wait())
            done, _ = await asyncio.wait((runner, stop), return_when=asyncio.FIRST_COMPLETED)
            if runner not in done:
                qm.shutdown.set()  # graceful: finish in-flight jobs, flush completions
            await runner
            stop.cancel()
    finally:
        rec.write(args.out)
        await conn.close()


COMMANDS = {
    "install": cmd_install,
    "enqueue-bulk": cmd_enqueue_bulk,
    "enqueue-single": cmd_enqueue_single,
    "enqueue-paced": cmd_enqueue_paced,
    "work": cmd_work,
}


def main() -> None:
    pc.setup_logging("pgqueuer")
    args = pc.parse_args("pgqueuer_adapter.py")
    result = uvloop.run(COMMANDS[args.cmd](args))
    if result is not None:
        pc.emit(result)


if __name__ == "__main__":
    main()
