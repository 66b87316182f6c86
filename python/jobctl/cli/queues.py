"""Queues: `queue put` (limits across tenants), `queue list`, `queue pause`, `queue resume`, through
jobctl.client."""

from __future__ import annotations

from typing import Any

import click

from jobctl.cli.common import JsonGroup, client, show_paused, show_settings, show_table

PUT_EPILOG = """\b
Examples:
  jobctl queue put emails --max-running 50 --claim-rate 200
  jobctl queue put emails          (back to the defaults: no limits, not paused)
  jobctl queue pause emails        (no claims from it, for every tenant, from the next claim on)"""


@click.group(cls=JsonGroup)
def queue() -> None:
    """Queues, shared by every tenant: limits across tenants, pause and resume (administrators)."""


@queue.command(epilog=PUT_EPILOG)
@click.argument("name", metavar="QUEUE")
@click.option(
    "--max-running", type=int, metavar="N", help="Most of its jobs running at once, across tenants."
)
@click.option("--claim-rate", type=float, metavar="PER_S", help="Claims a second (token bucket).")
@click.option("--claim-burst", type=int, metavar="N", help="Claim bucket size.")
@click.option("--paused", is_flag=True, help="Paused: no claims until resumed.")
def put(name: str, as_json: bool, **settings: Any) -> None:
    """Create or replace a queue's settings: an option left out goes back to its default."""
    show_settings(client().put_queue(name, **settings), as_json)


COLUMNS = {
    "QUEUE": "queue",
    "PAUSED": "paused",
    "MAX RUNNING": "max_running",
    "CLAIM/S": "claim_rate",
    "CLAIM BURST": "claim_burst",
    "DUE": "due",
    "RUNNING": "running",
}


@queue.command("list")
def list_(as_json: bool) -> None:
    """List the queues with settings or jobs: limits ('-': none), paused, jobs due and running."""
    show_table(client().list_queues(), as_json, COLUMNS, right=range(2, 7))


@queue.command()
@click.argument("name", metavar="QUEUE")
def pause(name: str, as_json: bool) -> None:
    """Stop claims from QUEUE for every tenant, from the next claim on (submits go on)."""
    show_paused("queue", "queue", name, True, client().pause_queue(name), as_json)


@queue.command()
@click.argument("name", metavar="QUEUE")
def resume(name: str, as_json: bool) -> None:
    """Restart claims from QUEUE."""
    show_paused("queue", "queue", name, False, client().resume_queue(name), as_json)
