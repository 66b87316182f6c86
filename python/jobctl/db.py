"""Where the database is: JOBCTL_DSN, else the private cluster's .pg/dsn."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
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


def connect(autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(dsn(), autocommit=autocommit, application_name="jobctl")


def connect_dicts(autocommit: bool = False) -> psycopg.Connection[dict[str, Any]]:
    """A connection whose rows are dicts keyed by column name."""
    return psycopg.connect(dsn(), autocommit=autocommit, application_name="jobctl", row_factory=dict_row)
