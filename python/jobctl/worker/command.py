"""`jobctl worker`: the click command around `Worker`."""

from __future__ import annotations

import asyncio
import importlib
import logging
import operator
import os
import signal
import sys
from typing import Any

import click
import psycopg

from jobctl import db, logs
from jobctl.errors import first_line
from jobctl.worker.calls import GaveUp, describe
from jobctl.worker.runner import Worker, default_worker_id, run_loop
from jobctl.worker.running import Handler

log = logging.getLogger("jobctl.worker")


class HandlerError(ValueError):
    """--handler does not name an importable callable."""


def load_handler(spec: str) -> Handler:
    """Import `module:function` (dotted attributes allowed), with the current directory on sys.path."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise HandlerError(f"--handler must be module:function, not {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: object = importlib.import_module(module_name)
    except Exception as e:
        raise HandlerError(f"cannot import {module_name}: {describe(e, one_line=True)}") from None
    try:
        obj = operator.attrgetter(attr)(obj)  # dotted: attribute by attribute
    except AttributeError:
        raise HandlerError(f"{module_name} has no attribute {attr}") from None
    if not callable(obj):
        raise HandlerError(f"{spec} is not callable")
    return obj


BALANCE_EVERY = 1.0  # seconds between two shares of the slots among the shards
BALANCE_FIRST = 0.1  # until a shard has answered the first shares, ask again this often


async def balance(workers: list[Worker], slots: int) -> None:
    """Several shards in one process: every BALANCE_EVERY seconds, each shard's worker may fill the
    share of the process's slots that jobctl.slot_shares gives it from the shards' claimable weights,
    so a tenant's share of the process does not depend on how crowded its shard is (docs/operations.md,
    Sharding: fairness across shards). Until the first shares, every shard's share is 0."""
    shared = False
    while True:
        answers = await asyncio.gather(*(w.claimable_weight() for w in workers), return_exceptions=True)
        weights = [a if isinstance(a, float) else None for a in answers]  # None: it did not answer
        # the first shard to answer shares them (any shard answers alike; a refusal, fewer slots than
        # shards, is raised)
        for asked in workers:
            try:
                shares = await asked.slot_shares(slots, weights)
            except GaveUp:  # that shard is unreachable: ask the next
                continue
            for w, n in zip(workers, shares, strict=True):
                w.share_slots(n)
            shared = True
            break
        await asyncio.sleep(BALANCE_EVERY if shared else BALANCE_FIRST)


async def run_together(workers: list[Worker]) -> None:
    """One worker, or one per database (--dsn A --dsn B ...) in one loop, sharing the process's
    --concurrency slots as jobctl.slot_shares says from the shards' claimable weights (`balance`): at
    least one each, so no shard starves, and never more than --concurrency in all (it refuses fewer
    slots than shards: the process exits non-zero). A signal stops them all; so does any one ending
    (a crash: the process exits non-zero and the others give their jobs back)."""
    if len(workers) == 1:
        await workers[0].run()
        return
    loop = asyncio.get_running_loop()
    stopping = False

    def stop_all() -> None:
        nonlocal stopping
        stopping = True
        for w in workers:
            w.request_stop()  # a second signal: the second stop, no grace

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_all)
    for w in workers:
        w.share_slots(0)  # nothing claimed before the database has shared the slots
    runs = [asyncio.create_task(w.run()) for w in workers]
    balancer = asyncio.create_task(balance(workers, workers[0].concurrency), name="jobctl-balance")
    try:
        # the first to end before a signal (a worker that crashed, or the balance: the database refused
        # the shares) stops them all
        await asyncio.wait([balancer, *runs], return_when=asyncio.FIRST_COMPLETED)
        if not stopping:
            stop_all()
        await asyncio.gather(*runs)
    finally:
        balancer.cancel()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    if balancer.done() and not balancer.cancelled():
        balancer.result()  # the balance ends only by raising (fewer slots than shards): raised here


@click.command(
    "worker", short_help="Run jobs with a handler (module:function).", context_settings={"show_default": True}
)
@click.option(
    "--handler",
    "handler_spec",
    required=True,
    metavar="MODULE:FUNCTION",
    help="The handler: `def f(job)` runs in a thread pool, `async def f(job)` as a task.",
)
@click.option(
    "--queue",
    "queues",
    multiple=True,
    metavar="QUEUE",
    help="A queue to claim from (repeatable). Default: all.",
)
@click.option("--concurrency", type=click.IntRange(1, 1000), default=10, help="Jobs run at once.")
@click.option(
    "--lease",
    type=click.FloatRange(1, 86400),
    default=30.0,
    help="Lease in seconds; heartbeats every lease/3.",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(0.01, 3600),
    default=1.0,
    help="Seconds between claims when idle (NOTIFY wakes the worker sooner).",
)
@click.option(
    "--grace",
    type=click.FloatRange(0, 86400),
    default=30.0,
    help="On SIGTERM/SIGINT, seconds to let running jobs finish before giving them back.",
)
@click.option("--worker-id", help="Recorded on claims. Default: hostname:pid.")
@click.option(
    "--dsn",
    "dsns",
    multiple=True,
    metavar="DSN",
    help="A database to claim from (repeatable: the shards of a sharded install, each served by a worker "
    "of its own, its id WORKER_ID/N, sharing the --concurrency slots by the weight of the tenants with due "
    "jobs on each). Default: JOBCTL_DSN.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=0,
    help="Serve this process's Prometheus metrics on this port (0: none).",
)
@click.option("--metrics-host", default="127.0.0.1", help="The address --metrics-port listens on.")
@click.option(
    "--metrics-queues",
    type=click.IntRange(1, 10000),
    default=100,
    help="Queues with a handler histogram of their own on --metrics-port (the others are summed in queue"
    ' "other"; a queue idle for 10 minutes gives its place up): bounds the metrics whatever the queues.',
)
@click.option(
    "--listen-dsn",
    envvar="JOBCTL_LISTEN_DSN",
    help="Where the wake-up listener connects (env JOBCTL_LISTEN_DSN). Default: JOBCTL_DSN, or none"
    " (poll only) behind a transaction pooler (JOBCTL_POOLER=transaction): point it at PostgreSQL.",
)
@logs.format_option
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
    help="The least severe log level written.",
)
def worker_command(
    handler_spec: str,
    dsns: tuple[str, ...],
    worker_id: str | None,
    log_format: str,
    log_level: str,
    **options: Any,  # the rest are Worker's options of the same names (queues, concurrency, lease, ...)
) -> None:
    """Run jobs with a handler until SIGTERM/SIGINT (a second signal skips the grace period)."""
    if worker_id is not None and not 0 < len(worker_id) <= 200:
        raise click.ClickException("--worker-id must be 1 to 200 characters")
    if len(dsns) > 1 and options["metrics_port"]:
        raise click.ClickException("--metrics-port serves one worker: give it with one --dsn")
    if len(dsns) > 1 and options["listen_dsn"]:
        raise click.ClickException("--listen-dsn names one database's listener: give it with one --dsn")
    try:
        handler = load_handler(handler_spec)
        targets = list(dsns) or [db.dsn()]
        for dsn in targets:
            db.session_options(dsn)  # a bad JOBCTL_PAYLOAD_KEYS (or JOBCTL_POOLER) fails here, in one line
    except (HandlerError, db.ConfigError) as e:
        raise click.ClickException(str(e)) from None
    logs.setup(json_logs=log_format == "json", level=getattr(logging, log_level.upper()))
    base_id = worker_id or default_worker_id()
    workers = [
        Worker(
            handler,
            dsn=dsn,
            worker_id=base_id if len(targets) == 1 else f"{base_id}/{n}",
            handle_signals=len(targets) == 1,
            **options,
        )
        for n, dsn in enumerate(targets)
    ]
    try:
        run_loop(run_together(workers))
        crashed = any(w.crashed is not None for w in workers)
    except psycopg.Error as e:  # jobctl.slot_shares's error, e.g. fewer slots than shards
        raise click.ClickException(first_line(str(e))) from None
    except Exception:
        log.exception("worker failed")
        crashed = True
    if any(w.stuck_threads for w in workers):
        # a thread cannot be killed, and the interpreter would wait for it at exit (sys.exit too)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1 if crashed else 0)
    if crashed:
        sys.exit(1)
