"""`jobctl shards`: make JOBCTL_DSN's database a shard, or install the router in it (jobctl.shards)."""

from __future__ import annotations

import click

from jobctl import shards as sh
from jobctl.cli.common import connect, json_option, nothing_applied, show
from jobctl.cli.shard_move import move

EPILOG = """\b
Examples:
  JOBCTL_DSN=$SHARD2 jobctl shards init-shard 2
  JOBCTL_DSN=$ROUTER jobctl shards init-router --shard 0="$SHARD0" --shard 1="$SHARD1" --shard 2="$SHARD2"
A shard's connect string without user= lets PL/Proxy connect as the router's caller (its grants and
tenant rule then hold on the shard too)."""


@click.group(epilog=EPILOG)
def shards() -> None:
    """Sharding by tenant: shards and the PL/Proxy router (docs/operations.md, Sharding)."""


@shards.command("init-shard")
@click.argument("number", type=click.IntRange(0, sh.SHARD_COUNT - 1))
@json_option
def init_shard(number: int, as_json: bool) -> None:
    """Migrate JOBCTL_DSN's database and make it shard NUMBER: its ids have id % 64 = NUMBER."""
    with connect() as conn, nothing_applied("init-shard"):
        done = sh.init_shard(conn, number)
    show({"shard": number, "applied": done}, as_json, f"init-shard: ok, shard {number}")


@shards.command("init-router")
@click.option(
    "--shard", "specs", multiple=True, metavar="N=DSN", help="A shard and its connect string (repeatable)."
)
@json_option
def init_router(specs: tuple[str, ...], as_json: bool) -> None:
    """Install or update the router in JOBCTL_DSN's database (PL/Proxy), with these shards."""
    try:
        shards_given = sh.parse_shards(specs)
    except sh.ShardError as e:
        raise click.BadParameter(str(e), param_hint="--shard") from None
    with connect() as conn, nothing_applied("init-router"):
        count = sh.install_router(conn, shards_given)
    show({"shards": count}, as_json, f"init-router: ok, {count} shards")


shards.add_command(move)  # jobctl shards move (cli/shard_move.py)
