"""Benchmark adapter for procrastinate 3.10.0 (psycopg 3 connector). Protocol: README.md here.

    benchmarks/.venv-peers/bin/python benchmarks/adapters/procrastinate_adapter.py <subcommand> --dsn URL ...

- install:        `app.schema_manager.apply_schema_async()` (what `procrastinate schema --apply`
                  runs) into public: tables procrastinate_jobs, procrastinate_events,
                  procrastinate_periodic_defers, procrastinate_workers, their functions/triggers.
- enqueue-bulk:   `task.batch_defer_async(*kwargs)` per batch of B: one
                  `procrastinate_defer_jobs_v1(...)` statement per call, its own transaction.
- enqueue-single: `task.defer_async(n=...)` from C concurrent tasks over a pool of C connections
                  (min_size = max_size = C), one job per call and transaction.
- enqueue-paced:  `task.defer_async(n=..., t=...)` on a one-connection pool, absolute schedule.
- work:           `app.run_worker_async(queues=["default"], concurrency=N, wait=True,
                  listen_notify=True, install_signal_handlers=False)` as a task, on the
                  connector's default pool (psycopg_pool default: 4 connections). SIGTERM
                  cancels that task, which procrastinate turns into its graceful stop (no new
                  fetch, in-flight jobs finish and their status is written, worker unregistered).

Setting keys (work): concurrency (default 1; best measured 10 with 2 processes),
fetch_job_polling_interval (s, default 5), abort_job_polling_interval (s, default 5),
listen_notify (bool, default true), delete_jobs ("never" | "successful" | "always", default
"never"), procs (ignored: the orchestrator's process count).

Unfinished jobs: `select count(*) from procrastinate_jobs where status in ('todo', 'doing')`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import peer_common as pc
import procrastinate

QUEUE = "default"
log = logging.getLogger("adapter")

RECORDER = pc.Recorder()


def make_app(dsn: str, **pool_args: Any) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn, **pool_args))

    @app.task(name="noop", queue=QUEUE)
    async def noop(n: int, t: float | None = None) -> None:
        RECORDER.record({"n": n} if t is None else {"n": n, "t": t})

    return app


async def cmd_install(args: Any) -> dict[str, Any]:
    app = make_app(args.dsn, min_size=1, max_size=1)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
    return {}


async def cmd_enqueue_bulk(args: Any) -> dict[str, Any]:
    app = make_app(args.dsn, min_size=1, max_size=1)
    task = app.tasks["noop"]
    async with app.open_async():

        async def enqueue_batch(payloads: list[dict[str, Any]]) -> None:
            await task.batch_defer_async(*payloads)

        seconds = await pc.bulk_loop(args.jobs, args.batch, args.first, enqueue_batch)
    return {"seconds": seconds, "jobs": args.jobs}


async def cmd_enqueue_single(args: Any) -> dict[str, Any]:
    app = make_app(args.dsn, min_size=args.clients, max_size=args.clients)
    task = app.tasks["noop"]
    async with app.open_async():  # opens the pool and waits for its C connections

        async def enqueue(payload: dict[str, Any]) -> None:
            await task.defer_async(**payload)

        seconds = await pc.single_loop(args.jobs, args.first, [enqueue] * args.clients)
    return {"seconds": seconds, "jobs": args.jobs}


async def cmd_enqueue_paced(args: Any) -> dict[str, Any]:
    app = make_app(args.dsn, min_size=1, max_size=1)
    task = app.tasks["noop"]
    async with app.open_async():

        async def enqueue(payload: dict[str, Any]) -> None:
            await task.defer_async(**payload)

        jobs, seconds = await pc.paced_loop(args.rate, args.seconds, args.first, enqueue)
    return {"jobs": jobs, "seconds": seconds}


SETTING_KEYS: dict[str, Any] = {
    "concurrency": int,
    "fetch_job_polling_interval": (int, float),
    "abort_job_polling_interval": (int, float),
    "listen_notify": bool,
    "delete_jobs": str,
}


async def cmd_work(args: Any) -> None:
    setting = pc.check_setting(args.setting, SETTING_KEYS)
    worker_kwargs: dict[str, Any] = {
        "queues": [QUEUE],
        "concurrency": setting.get("concurrency", 1),
        "wait": True,
        "install_signal_handlers": False,  # SIGTERM is ours (it may come before `go`)
    }
    for key in ("fetch_job_polling_interval", "abort_job_polling_interval", "listen_notify", "delete_jobs"):
        if setting.get(key) is not None:
            worker_kwargs[key] = setting[key]

    ctl = pc.Control()
    app = make_app(args.dsn)  # procrastinate's default pool
    try:
        async with app.open_async():
            if not await app.check_connection_async():
                raise SystemExit("procrastinate schema is not installed")
            ctl.ready()
            if await ctl.wait_go():
                log.info("go: run_worker_async(%s)", worker_kwargs)
                runner = asyncio.create_task(app.run_worker_async(**worker_kwargs))
                stop = asyncio.create_task(ctl.stop.wait())
                done, _ = await asyncio.wait((runner, stop), return_when=asyncio.FIRST_COMPLETED)
                if runner not in done:
                    # Worker.run shields its loop: cancelling it calls worker.stop() and waits
                    # for the graceful shutdown before re-raising CancelledError.
                    runner.cancel()
                try:
                    await runner
                except asyncio.CancelledError:
                    if not ctl.stop.is_set():
                        raise
                stop.cancel()
    finally:
        RECORDER.write(args.out)


COMMANDS = {
    "install": cmd_install,
    "enqueue-bulk": cmd_enqueue_bulk,
    "enqueue-single": cmd_enqueue_single,
    "enqueue-paced": cmd_enqueue_paced,
    "work": cmd_work,
}


def main() -> None:
    pc.setup_logging("procrastinate")
    # "App is instantiated in the main Python module": harmless here, the task has an explicit
    # name and every process (enqueuers and workers) runs this same script.
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    args = pc.parse_args("procrastinate_adapter.py")
    result = asyncio.run(COMMANDS[args.cmd](args))
    if result is not None:
        pc.emit(result)


if __name__ == "__main__":
    main()
