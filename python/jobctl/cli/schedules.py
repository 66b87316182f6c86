"""Recurring schedules: `schedule put|list|drop|next`."""

from __future__ import annotations

import click
from psycopg.types.json import Jsonb

from jobctl import errors, output, queries
from jobctl.cli.common import connect, echo_json, fetch_all, fetch_one, json_option, parse_json

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
    params = {
        "tenant_id": tenant_id,
        "name": name,
        "cron": cron,
        "queue": queue,
        "payload": Jsonb(parse_json(payload, "PAYLOAD", "payload")),
        "priority": priority,
        "catch_up": catch_up,
        "skip_overlap": skip_overlap,
    }
    with connect() as conn, conn.transaction():
        conn.execute(queries.PUT_SCHEDULE, params)
        saved = fetch_one(conn, queries.GET_SCHEDULE, {"tenant_id": tenant_id, "name": name})
    if saved is None:
        raise errors.NotFound(f"schedule {name} was not saved")
    if as_json:
        echo_json(saved)
    else:
        click.echo(output.key_values(saved.items()))


@schedule.command("list")
@click.argument("tenant_id", metavar="[TENANT]", required=False)
@json_option
def list_(tenant_id: str | None, as_json: bool) -> None:
    """List the schedules of TENANT (default: every tenant) with their next fire times."""
    with connect() as conn:
        rows = fetch_all(conn, queries.LIST_SCHEDULES, {"tenant_id": tenant_id})
    if as_json:
        echo_json(rows)
        return
    headers = ["TENANT", "NAME", "CRON", "QUEUE", "NEXT FIRE (UTC)", "LAST FIRE (UTC)", "LAST JOB"]
    table = [
        [
            r["tenant_id"],
            r["name"],
            r["cron"],
            r["queue"],
            r["next_fire_at"],
            r["last_fire_at"],
            r["last_job_id"],
        ]
        for r in rows
    ]
    click.echo(output.table(headers, table))


@schedule.command()
@click.argument("tenant_id", metavar="TENANT")
@click.argument("name")
@json_option
def drop(tenant_id: str, name: str, as_json: bool) -> None:
    """Remove a schedule (runs already enqueued stay)."""
    with connect() as conn:
        row = fetch_one(conn, queries.DROP_SCHEDULE, {"tenant_id": tenant_id, "name": name})
    dropped = bool(row and row["dropped"])
    if as_json:
        echo_json({"tenant_id": tenant_id, "name": name, "dropped": dropped})
    elif not dropped:
        raise errors.NotFound(f"no schedule {name} for tenant {tenant_id}")
    else:
        click.echo(f"dropped schedule {name}")


@schedule.command("next")
@click.argument("cron")
@click.option(
    "--count", type=click.IntRange(1, 1000), default=5, show_default=True, help="How many fire times."
)
@json_option
def next_(cron: str, count: int, as_json: bool) -> None:
    """Print the coming fire times of a CRON expression (UTC), as jobctl.cron_next computes them."""
    with connect() as conn:
        times = [r["at"] for r in fetch_all(conn, queries.CRON_TIMES, {"cron": cron, "count": count})]
    if as_json:
        echo_json(times)
    else:
        click.echo("\n".join(t.isoformat() for t in times))
