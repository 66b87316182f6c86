"""Where the database is: JOBCTL_DSN, else the private cluster's .pg/dsn."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[2]


class NoDsnError(RuntimeError):
    pass


def dsn() -> str:
    value = os.environ.get("JOBCTL_DSN")
    if value:
        return value
    path = ROOT / ".pg" / "dsn"
    if path.is_file():
        return path.read_text().strip()
    raise NoDsnError("no database: set JOBCTL_DSN or run `make db` to start the local cluster")


def connection_kwargs(conninfo: str, application_name: str, *, autocommit: bool) -> dict[str, Any]:
    """Connection settings for the long-running services' pools: their sessions carry
    application_name (unless the DSN sets one) and give up connecting after 10 s (unless it says)."""
    given = conninfo_to_dict(conninfo)
    kwargs: dict[str, Any] = {"autocommit": autocommit}
    if "application_name" not in given:
        kwargs["application_name"] = application_name
    if "connect_timeout" not in given:
        kwargs["connect_timeout"] = 10
    return kwargs


def connect(autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(dsn(), autocommit=autocommit, application_name="jobctl")


def connect_dicts(autocommit: bool = False) -> psycopg.Connection[dict[str, Any]]:
    """A connection whose rows are dicts keyed by column name."""
    return psycopg.connect(dsn(), autocommit=autocommit, application_name="jobctl", row_factory=dict_row)
