"""Sharding by tenant: make a database a shard, install the router (docs/operations.md, Sharding).

A shard is an ordinary jobctl database (`jobctl migrate`) whose ids carry its number
(`jobctl.init_shard(n)`: id % 64 = n). The router is a database with PL/Proxy whose `jobctl.*`
functions have the shards' signatures and run each call on the tenant's shard, or on the shard a job
id names (sql/router/). `install_router` applies sql/router/ in the order of router.list, in one
transaction under an advisory lock, and writes the shard list; it can be run again (to add shards or
change a connect string).

    jobctl shards init-shard 2                          # JOBCTL_DSN is shard 2: migrate, init_shard(2)
    jobctl shards init-router --shard 0=DSN0 --shard 1=DSN1 --shard 2=DSN2   # JOBCTL_DSN: the router
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

import psycopg

from jobctl import migrate as mig
from jobctl import queries

ROUTER_DIR: Traversable = files("jobctl.sql.router")
SHARD_COUNT = 64  # ids carry their shard as id % 64: shard numbers are 0..63


class ShardError(ValueError):
    """A shard list or number that cannot be used."""


def router_script() -> str:
    """The router's SQL files as one script, in the order of router.list."""
    names = mig.listed(ROUTER_DIR / "router.list")
    return "\n".join(f"-- {n}\n" + (ROUTER_DIR / n).read_text() for n in names)


def parse_shards(specs: list[str] | tuple[str, ...]) -> dict[int, str]:
    """`N=DSN` strings as {shard number: connect string}."""
    shards: dict[int, str] = {}
    for spec in specs:
        number, sep, connstr = spec.partition("=")
        if not sep or not number.strip().isdigit() or not connstr.strip():
            raise ShardError(f"a shard is N=DSN (N from 0 to {SHARD_COUNT - 1}), not {spec!r}")
        n = int(number)
        if not 0 <= n < SHARD_COUNT or n in shards:
            raise ShardError(f"shard {n}: numbers are 0..{SHARD_COUNT - 1}, each once")
        shards[n] = connstr.strip()
    return shards


def install_router(conn: psycopg.Connection[tuple[object, ...]], shards: dict[int, str]) -> int:
    """Install or re-apply the router schema and add or update the given shards; returns how many
    shards the router has. One transaction, under the migration's advisory lock."""
    with conn.transaction():
        conn.execute(queries.MIGRATE_LOCK, {"key": mig.LOCK_KEY})
        conn.execute(router_script().encode())
        for n, connstr in sorted(shards.items()):
            conn.execute(queries.ROUTER_PUT_SHARD, {"shard": n, "connstr": connstr})
        row = conn.execute(queries.ROUTER_SHARD_COUNT).fetchone()
    return int(str(row[0])) if row else 0


def init_shard(conn: psycopg.Connection[tuple[object, ...]], number: int) -> list[str]:
    """Migrate the database and make it shard `number` (jobctl.init_shard); returns what migrate applied."""
    done = mig.migrate(conn)
    with conn.transaction():
        conn.execute(queries.INIT_SHARD, {"shard": number})
    return done
