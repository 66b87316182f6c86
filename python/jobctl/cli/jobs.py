"""Jobs: `submit`, `get`, `wait`, `list`, `history`, `cancel`, `retry`, through jobctl.client.

A submit passes only the options the user gave: the defaults (priority, attempts, backoff, timeout)
are applied by SQL, never here.
"""

from __future__ import annotations

import math
import os
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import IO, Any

import click

from jobctl import contract, errors, output
from jobctl.cli.common import (
    CliError,
    JsonCommand,
    as_id,
    as_run_at,
    client,
    last_error,
    page_options,
    parse_json,
    show,
    show_more,
    show_table,
    user_message,
)
from jobctl.cli.flows import as_ids, as_names

SUBMIT_EPILOG = """\b
Examples:
  jobctl submit acme emails '{"to": "ada@example.com"}' --priority 5
  jobctl submit acme reports --run-at +1h --dedup-key report-2026-11
  jobctl submit acme reports --run-at 2026-12-02T02:00:00Z
  jobctl submit acme report '{}' --depends-on 41,42
  jobctl submit acme sync '{"customer": 7}' --dedup-key sync-7 \\
      --dedup-states pending --dedup-mode replace --run-at +30s
  jobctl submit --file jobs.jsonl
  producer | jobctl submit --file - --json

\b
Each line of a --file is one JSON object with submit_jobs' keys: tenant_id,
queue, payload, priority, run_at, dedup_key, max_attempts, backoff, timeout,
subject_key, concurrency_key, depends_on, on_parent_failure, dedup_states,
dedup_period, dedup_mode. A batch is all or nothing; earlier batches
stay submitted."""


def _number_or_text(value: str | None) -> int | float | str | None:
    """A number of seconds when it is one, else the text (an interval such as '5 minutes')."""
    if value is None:
        return None
    for kind in (int, float):
        try:
            number = kind(value)
        except ValueError:
            continue
        return number if math.isfinite(number) else value
    return value


@click.command(cls=JsonCommand, epilog=SUBMIT_EPILOG)
@click.argument("tenant", required=False)
@click.argument("queue", required=False)
@click.argument("payload", metavar="[PAYLOAD_JSON]", required=False)
@click.option("--priority", type=int, help="Higher runs first (default 0; range in docs/errors.md).")
@click.option(
    "--run-at",
    callback=as_run_at,
    metavar="TIME",
    help="When it is due: ISO 8601 with a zone (2026-12-02T02:00:00Z), or from now: +30s, +5m, +2h, +1d.",
)
@click.option(
    "--delay",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Due this many seconds from now, by the database clock.",
)
@click.option(
    "--dedup-key", metavar="KEY", help="At most one job per tenant and key: a repeat returns the first."
)
@click.option("--max-attempts", type=int, metavar="N", help="Runs allowed, the first included.")
@click.option(
    "--backoff", metavar="JSON", help='Retry delays, e.g. \'{"strategy": "fixed", "base": "10s"}\'.'
)
@click.option(
    "--timeout", metavar="SECONDS", help="Longest run: seconds, or an interval such as '5 minutes'."
)
@click.option(
    "--concurrency-key",
    metavar="KEY",
    help="At most the key's limit of its jobs run at once (jobctl key put), in run_at order.",
)
@click.option(
    "--subject-key",
    metavar="KEY",
    help="The person the payload is about (jobctl.forget_subject, docs/security.md).",
)
@click.option(
    "--depends-on",
    callback=as_ids,
    metavar="ID[,ID]",
    help="Jobs of the tenant that must complete first: it waits until the last one did.",
)
@click.option(
    "--on-parent-failure",
    metavar="cancel|wait",
    help="What a dead or cancelled parent does to it: cancel (default) or wait (for a retry).",
)
@click.option(
    "--dedup-states",
    callback=as_names,
    metavar="STATE[,STATE]",
    help="The dedup key holds only while its newest job is in these states (e.g. pending,running).",
)
@click.option(
    "--dedup-period",
    metavar="SECONDS",
    help="The dedup key holds only within the current period: seconds, or an interval such as '1 hour'.",
)
@click.option(
    "--dedup-mode",
    metavar="keep|replace|preserve_run_at",
    help="A repeat keeps the holder (keep, default), replaces its payload and run_at (replace: debounce), "
    "or its payload only (preserve_run_at).",
)
@click.option(
    "--file",
    "jobs_file",
    type=click.File("rb"),
    metavar="PATH",
    help="Submit many jobs from a JSON Lines file ('-': stdin) instead.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 10000),
    default=1000,
    show_default=True,
    help="Jobs per transaction with --file.",
)
def submit(
    tenant: str | None,
    queue: str | None,
    payload: str | None,
    run_at: datetime | timedelta | None,
    delay: float | None,
    backoff: str | None,
    timeout: str | None,
    dedup_period: str | None,
    jobs_file: IO[bytes] | None,
    batch_size: int,
    as_json: bool,
    **options: Any,
) -> None:
    """Submit a job and print its id, or many from a JSON Lines file.

    PAYLOAD_JSON defaults to {}. Omitted options take the database's defaults.
    """
    if jobs_file is not None:
        given = [tenant, queue, payload, run_at, delay, backoff, timeout, dedup_period, *options.values()]
        if any(v is not None for v in given):
            raise click.UsageError("--file takes no TENANT, QUEUE, PAYLOAD_JSON or job options")
        _submit_file(jobs_file, batch_size, as_json)
        return
    if tenant is None or queue is None:
        raise click.UsageError("give TENANT and QUEUE (or --file PATH)")
    if run_at is not None and delay is not None:
        raise click.UsageError("give --run-at or --delay, not both")
    row = client().submit(
        tenant,
        queue,
        parse_json(payload, "PAYLOAD_JSON", "payload") if payload is not None else {},
        run_at=run_at if isinstance(run_at, datetime) else None,
        delay=run_at if isinstance(run_at, timedelta) else delay,
        backoff=parse_json(backoff, "--backoff", "backoff") if backoff is not None else None,
        timeout=_number_or_text(timeout),
        dedup_period=_number_or_text(dedup_period),
        **options,
    )
    show(row, as_json, str(row.job_id))
    if row.duplicate and not as_json:
        click.echo(
            f"duplicate of job {row.job_id} (dedup key {options['dedup_key']!r}): nothing new was submitted",
            err=True,
        )


@dataclass
class _Batch:
    jobs: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # the line number of each job
    nbytes: int = 0


def _batches(stream: IO[bytes], size: int) -> Iterator[_Batch]:
    """JSON Lines in batches of `size` objects; blank lines are skipped. A bad line raises, naming it."""
    batch = _Batch()
    for lineno, raw in enumerate(stream, 1):
        batch.nbytes += len(raw)
        text = raw.strip()
        if not text:
            continue
        job = parse_json(text, f"line {lineno}")
        if not isinstance(job, dict):
            raise errors.InvalidInput(f"line {lineno} must be a JSON object, not {type(job).__name__}")
        batch.jobs.append(job)
        batch.lines.append(lineno)
        if len(batch.jobs) >= size:
            yield batch
            batch = _Batch()
    if batch.jobs or batch.nbytes:
        yield batch


def _at_line(e: errors.JobctlError, batch: _Batch) -> errors.JobctlError:
    """A submit_jobs error about jobs[i], told as the error of line n of the file. Its HINT ("Nothing
    was submitted") is about the batch: the CLI tells instead what the file's earlier batches kept."""
    where = f"line {batch.lines[e.index]}: " if e.index is not None and e.index < len(batch.lines) else ""
    return type(e)(f"{where}{e}", sqlstate=e.sqlstate, field=e.field, detail=e.detail, index=e.index)


def _file_size(stream: IO[bytes]) -> int | None:
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_size > 0 else None


def _submit_file(stream: IO[bytes], batch_size: int, as_json: bool) -> None:
    submitted = duplicates = batches = done_line = 0
    started = time.monotonic()
    calls = client()
    size = _file_size(stream)  # None for a pipe: the bar shows the jobs submitted instead of a share
    read = _batches(stream, batch_size)
    stderr = sys.stderr
    bar = click.progressbar(
        read,
        length=size,
        label="submitting",
        file=stderr,
        hidden=not stderr.isatty(),  # no bar (nor its label) in logs and pipes
        item_show_func=None if size else lambda batch: f"{submitted + duplicates} jobs" if batch else None,
    )
    try:
        with bar:
            for batch in read if size else bar:  # a bar of unknown length moves with each batch
                if batch.jobs:
                    try:
                        rows = calls.submit_many(batch.jobs)
                    except errors.JobctlError as e:
                        raise _at_line(e, batch) from None
                    dups = sum(1 for r in rows if r.duplicate)
                    submitted, duplicates = submitted + len(rows) - dups, duplicates + dups
                    batches, done_line = batches + 1, batch.lines[-1]
                if size:
                    bar.update(batch.nbytes)  # a file's bar moves with the bytes read
    except Exception as e:
        message = user_message(e)
        if message is None:
            raise
        if done_line == 0:
            message += "; nothing was submitted"
        else:
            message += (
                f"; lines 1-{done_line} were submitted ({submitted + duplicates} jobs),"
                f" nothing from line {done_line + 1} on"
            )
        raise CliError(message) from None
    seconds = time.monotonic() - started
    rate = (submitted + duplicates) / seconds if seconds > 0 else 0.0
    doc = {
        "submitted": submitted,
        "duplicates": duplicates,
        "batches": batches,
        "seconds": round(seconds, 3),
        "jobs_per_s": round(rate, 1),
    }
    text = (
        f"submitted {submitted} jobs ({duplicates} duplicates) in {batches} batches, "
        f"{seconds:.1f}s, {rate:.0f} jobs/s"
    )
    show(doc, as_json, text)


# --- reading and acting on one job

JOB_LIST_EPILOG = """\b
Examples:
  jobctl list --tenant acme --state dead
  jobctl list --tenant acme --queue emails --before 81234 --limit 20
  jobctl list --tenant acme --json | jq '.[].job_id'"""


@click.command(cls=JsonCommand)
@click.argument("job_id", metavar="ID", callback=as_id)
def get(job_id: int, as_json: bool) -> None:
    """Show one job: state, attempts, lease, progress, payload, result, error, and the steps it saved
    (docs/durable.md)."""
    jobctl = client()
    job = jobctl.get_job(job_id)
    if job is None:
        raise errors.NotFound(f"no job {job_id}")
    steps = jobctl.job_steps(job_id)
    text = output.key_values(output.record(job))
    if steps:
        text += "\nsteps:\n" + output.rows_table(steps, STEP_COLUMNS)
    show({**dict(output.record(job)), "steps": steps}, as_json, text)


STEP_RESULT_SHOWN = 80  # characters of a step's result in `jobctl get` (--json shows it all)
STEP_COLUMNS: output.Columns = {
    "STEP": "step",
    "SAVED": "saved_at",
    "ATTEMPT": "attempt",
    "RESULT": lambda s: output.truncate(output.to_json(s.result), STEP_RESULT_SHOWN),
}


# `jobctl wait`'s exit statuses besides 0 (completed), 1 (an error) and 2 (usage): docs/cli.md
WAIT_NOT_COMPLETED = 3  # finished dead or cancelled
WAIT_TIMED_OUT = 4  # not finished within --timeout


@click.command(cls=JsonCommand)
@click.argument("job_id", metavar="ID", callback=as_id)
@click.option(
    "--timeout",
    type=click.FloatRange(0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds to wait for the job to finish.",
)
def wait(job_id: int, timeout: float, as_json: bool) -> None:
    """Wait for a job to finish and show it. Exit 0: completed; 3: dead or cancelled; 4: still
    unfinished after --timeout (shown as it is)."""
    code = 0
    try:
        job = client().wait(job_id, timeout)
    except errors.WaitTimeout as e:
        job, code = e.job, WAIT_TIMED_OUT
    if code == 0 and job.state != "completed":
        code = WAIT_NOT_COMPLETED
    show(job, as_json)
    raise click.exceptions.Exit(code)


JOB_COLUMNS: output.Columns = {
    "ID": "job_id",
    "QUEUE": "queue",
    "STATE": "state",
    "PRIO": "priority",
    "ATTEMPT": lambda j: f"{j.attempt}/{j.max_attempts}",
    "RUN AT": "run_at",
    "CREATED": "created_at",
    "LAST ERROR": last_error,
}


@click.command("list", cls=JsonCommand, epilog=JOB_LIST_EPILOG)
@click.option("--tenant", "tenant_id", metavar="TENANT", required=True, help="Whose jobs.")
@click.option("--state", type=click.Choice(contract.STATES), help="Only jobs in this state.")
@click.option("--queue", metavar="QUEUE", help="Only jobs of this queue.")
@page_options(100, "Only jobs older than this id (next page).", "At most this many jobs.")
def list_(
    tenant_id: str, state: str | None, queue: str | None, before_id: int | None, limit: int, as_json: bool
) -> None:
    """List a tenant's jobs, newest first, a page at a time."""
    jobs = client().list_jobs(tenant_id, state=state, queue=queue, before_id=before_id, max_rows=limit)
    show_table(jobs, as_json, JOB_COLUMNS, right=[4])
    if as_json:
        return
    args = ["--tenant", tenant_id]
    args += ["--state", state] if state else []
    args += ["--queue", queue] if queue else []
    show_more(jobs, limit, "list", args)
    if not jobs:
        click.echo("(no jobs)")


HISTORY_COLUMNS: output.Columns = {
    "AT": "at",
    "EVENT": "event",
    "ATTEMPT": "attempt",
    "EPOCH": "lease_epoch",
    "WORKER": "worker_id",
    "DETAIL": lambda e: e.detail and output.truncate(e.detail, 60),
}


@click.command(cls=JsonCommand)
@click.argument("job_id", metavar="ID", callback=as_id)
def history(job_id: int, as_json: bool) -> None:
    """Show every transition of a job, oldest first."""
    events = client().job_history(job_id)
    if not events:
        raise errors.NotFound(f"no job {job_id}")
    show_table(events, as_json, HISTORY_COLUMNS, right=[2, 3])


def _show_state(job_id: int, state: str, as_json: bool) -> None:
    show({"job_id": job_id, "state": state}, as_json, f"job {job_id}: {state}")


@click.command(cls=JsonCommand)
@click.argument("job_id", metavar="ID", callback=as_id)
def cancel(job_id: int, as_json: bool) -> None:
    """Cancel a pending, failed or running job.

    A running job's lease is revoked: its worker is told to stop at its next heartbeat.
    """
    _show_state(job_id, client().cancel_job(job_id), as_json)


@click.command(cls=JsonCommand)
@click.argument("job_id", metavar="ID", callback=as_id)
def retry(job_id: int, as_json: bool) -> None:
    """Make a failed, dead or cancelled job pending and due now."""
    _show_state(job_id, client().retry_job(job_id), as_json)
