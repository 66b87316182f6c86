"""`jobctl shards`: make JOBCTL_DSN's database a shard, or install the router in it (jobctl.shards); move
a tenant to another shard (jobctl.shard_move), with JOBCTL_DSN the router."""

from __future__ import annotations

import click

from jobctl import output, shard_move
from jobctl import shards as sh
from jobctl.cli.common import CliError, JsonGroup, connect, nothing_applied, show

EPILOG = """\b
Examples:
  JOBCTL_DSN=$SHARD2 jobctl shards init-shard 2
  JOBCTL_DSN=$ROUTER jobctl shards init-router --shard 0="$SHARD0" --shard 1="$SHARD1" --shard 2="$SHARD2"
A shard's connect string without user= lets PL/Proxy connect as the router's caller (its grants and
tenant rule then hold on the shard too)."""


@click.group(cls=JsonGroup, epilog=EPILOG)
def shards() -> None:
    """Sharding by tenant: shards and the PL/Proxy router (docs/operations.md, Sharding)."""


@shards.command("init-shard")
@click.argument("number", type=click.IntRange(0, sh.SHARD_COUNT - 1))
def init_shard(number: int, as_json: bool) -> None:
    """Migrate JOBCTL_DSN's database and make it shard NUMBER: its ids have id % 64 = NUMBER."""
    with connect() as conn, nothing_applied("init-shard"):
        done = sh.init_shard(conn, number)
    show({"shard": number, "applied": done}, as_json, f"init-shard: ok, shard {number}")


@shards.command("init-router")
@click.option(
    "--shard", "specs", multiple=True, metavar="N=DSN", help="A shard and its connect string (repeatable)."
)
def init_router(specs: tuple[str, ...], as_json: bool) -> None:
    """Install or update the router in JOBCTL_DSN's database (PL/Proxy), with these shards."""
    try:
        shards_given = sh.parse_shards(specs)
    except sh.ShardError as e:
        raise click.BadParameter(str(e), param_hint="--shard") from None
    with connect() as conn, nothing_applied("init-router"):
        count = sh.install_router(conn, shards_given)
    show({"shards": count}, as_json, f"init-router: ok, {count} shards")


@shards.command("move")
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
def move(tenant_id: str, to: int, page: int, drain_timeout: float, as_json: bool) -> None:
    """Move a tenant's pending, delayed and retrying jobs to shard --to and route it there; jobs running
    on the source finish there. Run it again after any failure or crash: it finishes the same move."""
    with connect() as router:
        try:
            report = shard_move.move_tenant(router, tenant_id, to, page=page, drain_timeout=drain_timeout)
        except shard_move.MoveError as e:
            raise CliError(f"move: {e}") from None
    show({k: v for k, v in output.record(report) if k != "notes"}, as_json, report.line())
