"""Recurring schedules: `schedule put|list|drop|pause|resume|run|runs|next`, through jobctl.client."""

from __future__ import annotations

from typing import Any

import click

from jobctl import errors, output
from jobctl.cli.common import (
    Decorated,
    JsonGroup,
    client,
    last_error,
    page_options,
    parse_json,
    show,
    show_more,
    show_table,
)

PUT_EPILOG = """\b
Examples:
  jobctl schedule put acme nightly-report '0 2 * * *' reports '{"kind": "nightly"}'
  jobctl schedule put acme heartbeat '@every 15 seconds' pings '{}' --skip-overlap
  jobctl schedule put acme hourly '@hourly' etl '{}' --catch-up 24   (backfill up to a day)
  jobctl schedule put acme berlin-9am '0 9 * * mon-fri' reports '{}' --time-zone Europe/Berlin"""

TIME_ZONE_HELP = (
    "The time zone whose wall time CRON reads: a name of pg_timezone_names such as Europe/Berlin "
    "(not an abbreviation such as CEST). Daylight saving time: docs/schedules.md."
)


time_zone_option = click.option(
    "--time-zone", default="UTC", show_default=True, metavar="ZONE", help=TIME_ZONE_HELP
)


def schedule_named(callback: Decorated) -> Decorated:
    """The arguments TENANT NAME, which name a schedule."""
    return click.argument("tenant_id", metavar="TENANT")(click.argument("name")(callback))


@click.group(cls=JsonGroup)
def schedule() -> None:
    """Recurring schedules: cron expressions that enqueue jobs (in UTC or a time zone)."""


@schedule.command(epilog=PUT_EPILOG)
@schedule_named
@click.argument("cron")
@click.argument("queue")
@click.argument("payload", default="{}")
@click.option("--priority", type=int, default=0, show_default=True, help="Priority of each run (-100..100).")
@click.option(
    "--catch-up",
    type=int,
    default=1,
    show_default=True,
    metavar="N",
    help="After downtime, at most N missed runs (the latest); 1: one run for the whole missed window.",
)
@click.option("--skip-overlap", is_flag=True, help="Skip a run while the previous run is unfinished.")
@time_zone_option
def put(
    tenant_id: str, name: str, cron: str, queue: str, payload: str, as_json: bool, **settings: Any
) -> None:
    """Create or replace a schedule: each fire time of CRON enqueues one job on QUEUE.

    CRON: 5 fields (minute hour day-of-month month day-of-week) or @every <interval>, @hourly,
    @daily, @weekly, @monthly, @yearly; read in the wall time of --time-zone (default UTC).
    """
    doc = parse_json(payload, "PAYLOAD", "payload")
    show(client().put_schedule(tenant_id, name, cron, queue, doc, **settings), as_json)


COLUMNS = {
    "TENANT": "tenant_id",
    "NAME": "name",
    "CRON": "cron",
    "TZ": "time_zone",
    "QUEUE": "queue",
    "NEXT FIRE (UTC)": "next_fire_at",
    "LAST FIRE (UTC)": "last_fire_at",
    "LAST JOB": "last_job_id",
    "PAUSED": "paused",
}


@schedule.command("list")
@click.argument("tenant_id", metavar="[TENANT]", required=False)
def list_(tenant_id: str | None, as_json: bool) -> None:
    """List the schedules of TENANT (default: every tenant) with their next fire times."""
    show_table(client().list_schedules(tenant_id), as_json, COLUMNS)


@schedule.command()
@schedule_named
def drop(tenant_id: str, name: str, as_json: bool) -> None:
    """Remove a schedule (runs already enqueued stay)."""
    dropped = client().drop_schedule(tenant_id, name)
    if not dropped and not as_json:
        raise errors.NotFound(f"no schedule {name} for tenant {tenant_id}")
    show({"tenant_id": tenant_id, "name": name, "dropped": dropped}, as_json, f"dropped schedule {name}")


@schedule.command()
@schedule_named
def pause(tenant_id: str, name: str, as_json: bool) -> None:
    """Stop a schedule firing until `schedule resume` (jobctl.pause_schedule)."""
    _pause(tenant_id, name, True, as_json)


@schedule.command()
@schedule_named
def resume(tenant_id: str, name: str, as_json: bool) -> None:
    """Let a paused schedule fire again from its next fire time after now: the runs it missed while
    paused are skipped (jobctl.resume_schedule)."""
    _pause(tenant_id, name, False, as_json)


def _pause(tenant_id: str, name: str, paused: bool, as_json: bool) -> None:
    calls = client()
    changed = (calls.pause_schedule if paused else calls.resume_schedule)(tenant_id, name)
    if changed:
        text = f"{'paused' if paused else 'resumed'} schedule {name}"
    else:
        text = f"schedule {name} was {'paused already' if paused else 'not paused'}"
    show({"tenant_id": tenant_id, "name": name, "paused": paused, "changed": changed}, as_json, text)


@schedule.command()
@schedule_named
def run(tenant_id: str, name: str, as_json: bool) -> None:
    """Submit one run of a schedule now, paused or not (jobctl.run_schedule); prints the job's id."""
    job_id = client().run_schedule(tenant_id, name)
    show({"tenant_id": tenant_id, "name": name, "job_id": job_id}, as_json, f"job {job_id}")


RUN_COLUMNS: output.Columns = {
    "JOB": "job_id",
    "FIRE TIME (UTC)": "fire_time",
    "STATE": "state",
    "ATTEMPT": "attempt",
    "CREATED": "created_at",
    "FINISHED": "finished_at",
    "LAST ERROR": last_error,
}


@schedule.command()
@schedule_named
@page_options(20, "Only runs older than this job id (next page).", "At most N runs.")
def runs(tenant_id: str, name: str, before_id: int | None, limit: int, as_json: bool) -> None:
    """List a schedule's runs, newest first: each job it enqueued with the fire time it stands for
    (jobctl.schedule_runs; also after the schedule was dropped)."""
    found = client().schedule_runs(tenant_id, name, before_id=before_id, max_rows=limit)
    show(found, as_json, output.rows_table(found, RUN_COLUMNS, right=[3], empty="(no runs)"))
    if not as_json:
        show_more(found, limit, "schedule runs", [tenant_id, name])


@schedule.command("next")
@click.argument("cron")
@click.option(
    "--count", type=click.IntRange(1, 1000), default=5, show_default=True, help="How many fire times."
)
@time_zone_option
def next_(cron: str, count: int, time_zone: str, as_json: bool) -> None:
    """Print the coming fire times of a CRON expression read in --time-zone (printed in UTC), as
    jobctl.cron_next computes them."""
    times = client().next_fire_times(cron, count, time_zone=time_zone)
    show(times, as_json, "\n".join(output.timestamp(t) for t in times))
