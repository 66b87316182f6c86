"""`jobctl shards move`: move a tenant to another shard (jobctl.shard_move), with JOBCTL_DSN the router."""

from __future__ import annotations

import click

from jobctl import output, shard_move
from jobctl.cli.common import CliError, connect, json_option, show


@click.command("move")
@click.option("--tenant", "tenant_id", required=True, help="The tenant to move.")
@click.option("--to", "to", required=True, type=click.IntRange(0, 63), help="The shard number to move it to.")
@click.option(
    "--page",
    type=click.IntRange(1, 10000),
    default=shard_move.PAGE,
    show_default=True,
    help="Jobs per copy step.",
)
@click.option(
    "--drain-timeout",
    type=click.FloatRange(0, 86400),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for the tenant's jobs still running on the source; past it, run the move again.",
)
@json_option
def move(tenant_id: str, to: int, page: int, drain_timeout: float, as_json: bool) -> None:
    """Move a tenant's pending, delayed and retrying jobs to shard --to and route it there; jobs running
    on the source finish there. Run it again after any failure or crash: it finishes the same move."""
    with connect() as router:
        try:
            report = shard_move.move_tenant(router, tenant_id, to, page=page, drain_timeout=drain_timeout)
        except shard_move.MoveError as e:
            raise CliError(f"move: {e}") from None
    show({k: v for k, v in output.record(report) if k != "notes"}, as_json, report.line())
