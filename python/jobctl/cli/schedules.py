"""Recurring schedules: `schedule put|list|drop|pause|resume|run|next`, through jobctl.client."""

from __future__ import annotations

import click

from jobctl import errors, output
from jobctl.cli.common import echo_json, json_option, parse_json
from jobctl.client import Client

PUT_EPILOG = """\b
Examples:
  jobctl schedule put acme nightly-report '0 2 * * *' reports '{"kind": "nightly"}'
  jobctl schedule put acme heartbeat '@every 15 seconds' pings '{}' --skip-overlap
  jobctl schedule put acme hourly '@hourly' etl '{}' --catch-up 24   (backfill up to a day)"""


@click.group()
def schedule() -> None:
    """Recurring schedules: cron expressions that enqueue jobs (UTC)."""


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
    as_json: bool,
) -> None:
    """Create or replace a schedule: each fire time of CRON enqueues one job on QUEUE.

    CRON: 5 fields (minute hour day-of-month month day-of-week) or @every <interval>, @hourly,
    @daily, @weekly, @monthly, @yearly; times are UTC.
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
    headers = ["TENANT", "NAME", "CRON", "QUEUE", "NEXT FIRE (UTC)", "LAST FIRE (UTC)", "LAST JOB", "PAUSED"]
    rows = [
        [s.tenant_id, s.name, s.cron, s.queue, s.next_fire_at, s.last_fire_at, s.last_job_id, s.paused]
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


@schedule.command("next")
@click.argument("cron")
@click.option(
    "--count", type=click.IntRange(1, 1000), default=5, show_default=True, help="How many fire times."
)
@json_option
def next_(cron: str, count: int, as_json: bool) -> None:
    """Print the coming fire times of a CRON expression (UTC), as jobctl.cron_next computes them."""
    with Client() as client:
        times = client.next_fire_times(cron, count)
    if as_json:
        echo_json(times)
    else:
        click.echo("\n".join(output.timestamp(t) for t in times))
