"""Queues: `queue put` (limits across tenants), `queue list`, `queue pause`, `queue resume`, through
jobctl.client."""

from __future__ import annotations

import click

from jobctl import output
from jobctl.cli.common import echo_json, json_option, show_paused
from jobctl.client import Client

PUT_EPILOG = """\b
Examples:
  jobctl queue put emails --max-running 50 --claim-rate 200
  jobctl queue put emails          (back to the defaults: no limits, not paused)
  jobctl queue pause emails        (no claims from it, for every tenant, from the next claim on)"""


@click.group()
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
@json_option
def put(
    name: str,
    max_running: int | None,
    claim_rate: float | None,
    claim_burst: int | None,
    paused: bool,
    as_json: bool,
) -> None:
    """Create or replace a queue's settings: an option left out goes back to its default."""
    with Client() as client:
        saved = client.put_queue(
            name, max_running=max_running, claim_rate=claim_rate, claim_burst=claim_burst, paused=paused
        )
    if as_json:
        echo_json(saved)
    else:
        click.echo(output.key_values((k, "unlimited" if v is None else v) for k, v in output.record(saved)))


@queue.command("list")
@json_option
def list_(as_json: bool) -> None:
    """List the queues with settings or jobs: limits ('-': none), paused, jobs due and running."""
    with Client() as client:
        queues = client.list_queues()
    if as_json:
        echo_json(queues)
        return
    headers = ["QUEUE", "PAUSED", "MAX RUNNING", "CLAIM/S", "CLAIM BURST", "DUE", "RUNNING"]
    table = [
        [q.queue, q.paused, q.max_running, q.claim_rate, q.claim_burst, q.due, q.running] for q in queues
    ]
    click.echo(output.table(headers, table, right=range(2, 7)))


@queue.command()
@click.argument("name", metavar="QUEUE")
@json_option
def pause(name: str, as_json: bool) -> None:
    """Stop claims from QUEUE for every tenant, from the next claim on (submits go on)."""
    _pause(name, True, as_json)


@queue.command()
@click.argument("name", metavar="QUEUE")
@json_option
def resume(name: str, as_json: bool) -> None:
    """Restart claims from QUEUE."""
    _pause(name, False, as_json)


def _pause(name: str, paused: bool, as_json: bool) -> None:
    with Client() as client:
        changed = client.pause_queue(name) if paused else client.resume_queue(name)
    show_paused("queue", "queue", name, paused, changed, as_json)
