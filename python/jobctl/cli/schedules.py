"""Recurring schedules: `schedule put|list|drop|pause|resume|run|runs|next`, through jobctl.client."""

from __future__ import annotations

import shlex

import click

from jobctl import errors, output
from jobctl.cli.common import as_id, echo_json, json_option, parse_json
from jobctl.client import Client

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


@click.group()
def schedule() -> None:
    """Recurring schedules: cron expressions that enqueue jobs (in UTC or a time zone)."""


@schedule.command(epilog=PUT_EPILOG)
@click.argument("tenant_id", metavar="TENANT")
@click.argument("name")
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
@click.option("--time-zone", default="UTC", show_default=True, metavar="ZONE", help=TIME_ZONE_HELP)
@json_option
def put(
    tenant_id: str,
    name: str,
    cron: str,
    queue: str,
    payload: str,
    priority: int,
    catch_up: int,
    skip_overlap: bool,
    time_zone: str,
    as_json: bool,
) -> None:
    """Create or replace a schedule: each fire time of CRON enqueues one job on QUEUE.

    CRON: 5 fields (minute hour day-of-month month day-of-week) or @every <interval>, @hourly,
    @daily, @weekly, @monthly, @yearly; read in the wall time of --time-zone (default UTC).
    """
    with Client() as client:
        saved = client.put_schedule(
            tenant_id,
            name,
            cron,
            queue,
            parse_json(payload, "PAYLOAD", "payload"),
            priority=priority,
            catch_up=catch_up,
            skip_overlap=skip_overlap,
            time_zone=time_zone,
        )
    if as_json:
        echo_json(saved)
    else:
        click.echo(output.key_values(output.record(saved)))


@schedule.command("list")
@click.argument("tenant_id", metavar="[TENANT]", required=False)
@json_option
def list_(tenant_id: str | None, as_json: bool) -> None:
    """List the schedules of TENANT (default: every tenant) with their next fire times."""
    with Client() as client:
        schedules = client.list_schedules(tenant_id)
    if as_json:
        echo_json(schedules)
        return
    headers = [
        "TENANT",
        "NAME",
        "CRON",
        "TZ",
        "QUEUE",
        "NEXT FIRE (UTC)",
        "LAST FIRE (UTC)",
        "LAST JOB",
        "PAUSED",
    ]
    rows = [
        [
            s.tenant_id,
            s.name,
            s.cron,
            s.time_zone,
            s.queue,
            s.next_fire_at,
            s.last_fire_at,
            s.last_job_id,
            s.paused,
        ]
        for s in schedules
    ]
    click.echo(output.table(headers, rows))


@schedule.command()
@click.argument("tenant_id", metavar="TENANT")
@click.argument("name")
@json_option
def drop(tenant_id: str, name: str, as_json: bool) -> None:
    """Remove a schedule (runs already enqueued stay)."""
    with Client() as client:
        dropped = client.drop_schedule(tenant_id, name)
    if as_json:
        echo_json({"tenant_id": tenant_id, "name": name, "dropped": dropped})
    elif not dropped:
        raise errors.NotFound(f"no schedule {name} for tenant {tenant_id}")
    else:
        click.echo(f"dropped schedule {name}")


@schedule.command()
@click.argument("tenant_id", metavar="TENANT")
@click.argument("name")
@json_option
def pause(tenant_id: str, name: str, as_json: bool) -> None:
    """Stop a schedule firing until `schedule resume` (jobctl.pause_schedule)."""
    with Client() as client:
        changed = client.pause_schedule(tenant_id, name)
    if as_json:
        echo_json({"tenant_id": tenant_id, "name": name, "paused": True, "changed": changed})
    else:
        click.echo(f"paused schedule {name}" if changed else f"schedule {name} was paused already")


@schedule.command()
@click.argument("tenant_id", metavar="TENANT")
@click.argument("name")
@json_option
def resume(tenant_id: str, name: str, as_json: bool) -> None:
    """Let a paused schedule fire again from its next fire time after now: the runs it missed while
    paused are skipped (jobctl.resume_schedule)."""
    with Client() as client:
        changed = client.resume_schedule(tenant_id, name)
    if as_json:
        echo_json({"tenant_id": tenant_id, "name": name, "paused": False, "changed": changed})
    else:
        click.echo(f"resumed schedule {name}" if changed else f"schedule {name} was not paused")


@schedule.command()
@click.argument("tenant_id", metavar="TENANT")
@click.argument("name")
@json_option
def run(tenant_id: str, name: str, as_json: bool) -> None:
    """Submit one run of a schedule now, paused or not (jobctl.run_schedule); prints the job's id."""
    with Client() as client:
        job_id = client.run_schedule(tenant_id, name)
    if as_json:
        echo_json({"tenant_id": tenant_id, "name": name, "job_id": job_id})
    else:
        click.echo(f"job {job_id}")


@schedule.command()
@click.argument("tenant_id", metavar="TENANT")
@click.argument("name")
@click.option(
    "--before",
    "before_id",
    callback=as_id,
    metavar="ID",
    help="Only runs older than this job id (next page).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    metavar="N",
    help="At most N runs.",
)
@json_option
def runs(tenant_id: str, name: str, before_id: int | None, limit: int, as_json: bool) -> None:
    """List a schedule's runs, newest first: each job it enqueued with the fire time it stands for
    (jobctl.schedule_runs; also after the schedule was dropped)."""
    with Client() as client:
        found = client.schedule_runs(tenant_id, name, before_id=before_id, max_rows=limit)
    if as_json:
        echo_json(found)
        return
    if not found:
        click.echo("(no runs)")
        return
    headers = ["JOB", "FIRE TIME (UTC)", "STATE", "ATTEMPT", "CREATED", "FINISHED", "LAST ERROR"]
    rows = [
        [
            r.job_id,
            r.fire_time,
            r.state,
            r.attempt,
            r.created_at,
            r.finished_at,
            output.truncate(r.last_error, 50) if r.last_error else None,
        ]
        for r in found
    ]
    click.echo(output.table(headers, rows, right=[3]))
    if len(found) == limit:
        args = [tenant_id, name, "--before", str(found[-1].job_id), "--limit", str(limit)]
        click.echo(f"(more may follow: jobctl schedule runs {shlex.join(args)})")


@schedule.command("next")
@click.argument("cron")
@click.option(
    "--count", type=click.IntRange(1, 1000), default=5, show_default=True, help="How many fire times."
)
@click.option("--time-zone", default="UTC", show_default=True, metavar="ZONE", help=TIME_ZONE_HELP)
@json_option
def next_(cron: str, count: int, time_zone: str, as_json: bool) -> None:
    """Print the coming fire times of a CRON expression read in --time-zone (printed in UTC), as
    jobctl.cron_next computes them."""
    with Client() as client:
        times = client.next_fire_times(cron, count, time_zone=time_zone)
    if as_json:
        echo_json(times)
    else:
        click.echo("\n".join(output.timestamp(t) for t in times))
