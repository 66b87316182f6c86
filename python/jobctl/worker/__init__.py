"""The generic worker: `jobctl worker --handler module:function [--queue Q ...] [--concurrency N]`.

A handler is `def handle(job)` (run in a thread pool sized to the concurrency) or `async def
handle(job)` (run as a task). Its return value (JSON-serialisable, or None) is the job's result; an
exception fails the attempt with a retry (`"<ExcType>: <message>"` as last_error, its traceback as
last_traceback: the last 8,192 characters, innermost frame last); `PermanentError` fails it for good.
For exactly-once database writes, do them in `job.transaction()`, which completes the job in the
same transaction and raises `LeaseLost` (rolling back) when the job was fenced; for
calls to other services, pass `job.idempotency_key` (the same for every attempt of a job). For long
processes, `job.step`, `job.sleep` and `job.wait_for` keep steps' results and park the job without
holding a slot (docs/durable.md); a parked handler stops with `Suspended`, which must not be caught.

A job is stopped when its heartbeat answers `cancelled` or `lost`, when it runs past its timeout
(then failed with a retry: "timed out: ran past its timeout", as the reaper writes it) and at
shutdown after the grace period (then given back with release_job). An async handler's task is
cancelled; a sync handler cannot be interrupted: its `job.cancelled` is set, whatever it does
afterwards is ignored (a late completion is fenced), and its thread keeps its slot until it returns.
See `jobctl.worker.runner` for the moving parts and the modules they live in.
"""

from __future__ import annotations

from jobctl.worker.calls import APP_NAME
from jobctl.worker.command import HandlerError, load_handler, worker_command
from jobctl.worker.durable import EventTimeout, Suspended
from jobctl.worker.job import ChildFailed, Job, JobTransaction, LeaseLost, PermanentError
from jobctl.worker.outbox import Stats
from jobctl.worker.runner import Worker, default_worker_id, run, run_loop
from jobctl.worker.running import Handler

__all__ = [
    "APP_NAME",
    "ChildFailed",
    "EventTimeout",
    "Handler",
    "HandlerError",
    "Job",
    "JobTransaction",
    "LeaseLost",
    "PermanentError",
    "Stats",
    "Suspended",
    "Worker",
    "default_worker_id",
    "load_handler",
    "run",
    "run_loop",
    "worker_command",
]
