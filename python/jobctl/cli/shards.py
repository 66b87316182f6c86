"""`jobctl shards`: make JOBCTL_DSN's database a shard, or install the router in it (jobctl.shards)."""

from __future__ import annotations

import click
import psycopg

from jobctl import shards as sh
from jobctl.cli.common import CliError, connect, echo_json, json_option
from jobctl.cli.shard_move import move
from jobctl.errors import first_line

EPILOG = """\b
Examples:
  JOBCTL_DSN=$SHARD2 jobctl shards init-shard 2
  JOBCTL_DSN=$ROUTER jobctl shards init-router --shard 0="$SHARD0" --shard 1="$SHARD1" --shard 2="$SHARD2"
A shard's connect string without user= lets PL/Proxy connect as the router's caller (its grants and
tenant rule then hold on the shard too)."""


def _failed(what: str, e: psycopg.Error) -> CliError:
    return CliError(
        f"{what} failed, nothing applied: {first_line(e.diag.message_primary or str(e))} [{e.sqlstate}]"
    )


@click.group(epilog=EPILOG)
def shards() -> None:
    """Sharding by tenant: shards and the PL/Proxy router (docs/operations.md, Sharding)."""


@shards.command("init-shard")
@click.argument("number", type=click.IntRange(0, sh.SHARD_COUNT - 1))
@json_option
def init_shard(number: int, as_json: bool) -> None:
    """Migrate JOBCTL_DSN's database and make it shard NUMBER: its ids have id % 64 = NUMBER."""
    with connect() as conn:
        try:
            done = sh.init_shard(conn, number)
        except psycopg.Error as e:
            if e.sqlstate is None:
                raise
            raise _failed("init-shard", e) from None
    if as_json:
        echo_json({"shard": number, "applied": done})
    else:
        click.echo(f"init-shard: ok, shard {number}")


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
    with connect() as conn:
        try:
            count = sh.install_router(conn, shards_given)
        except psycopg.Error as e:
            if e.sqlstate is None:
                raise
            raise _failed("init-router", e) from None
    if as_json:
        echo_json({"shards": count})
    else:
        click.echo(f"init-router: ok, {count} shards")


shards.add_command(move)  # jobctl shards move (cli/shard_move.py)
