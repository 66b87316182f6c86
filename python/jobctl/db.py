"""Where the database is: JOBCTL_DSN, else the private cluster's .pg/dsn; and what every session
carries: the tenants' payload keys from JOBCTL_PAYLOAD_KEYS (docs/security.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[2]


class ConfigError(RuntimeError):
    """The environment does not say how to reach or use the database."""


class NoDsnError(ConfigError):
    pass


PAYLOAD_KEYS_ENV = "JOBCTL_PAYLOAD_KEYS"


def session_options(conninfo: str = "") -> dict[str, Any]:
    """libpq startup options for a jobctl session: JOBCTL_PAYLOAD_KEYS (a JSON object, tenant id ->
    key) becomes the session setting jobctl.payload_keys, with which the database seals and opens
    the payloads of tenants that encrypt theirs; keys live in the service's environment, never in a
    table. Options the DSN already has are kept."""
    raw = os.environ.get(PAYLOAD_KEYS_ENV)
    if not raw:
        return {}
    try:
        keys = json.loads(raw)
    except ValueError:
        keys = None
    if not isinstance(keys, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in keys.items()
    ):
        raise ConfigError(f"{PAYLOAD_KEYS_ENV} must be a JSON object of tenant id -> non-empty key string")
    # libpq splits options at spaces unless escaped with a backslash, which escapes itself
    value = json.dumps(keys, separators=(",", ":")).replace("\\", "\\\\").replace(" ", "\\ ")
    given = conninfo_to_dict(conninfo).get("options") if conninfo else None
    return {"options": " ".join(filter(None, [str(given or ""), f"-c jobctl.payload_keys={value}"]))}


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
    return kwargs | session_options(conninfo)


def connect(autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    conninfo = dsn()
    return psycopg.connect(
        conninfo, autocommit=autocommit, application_name="jobctl", **session_options(conninfo)
    )


def connect_dicts(autocommit: bool = False) -> psycopg.Connection[dict[str, Any]]:
    """A connection whose rows are dicts keyed by column name."""
    conninfo = dsn()
    return psycopg.connect(
        conninfo,
        autocommit=autocommit,
        application_name="jobctl",
        row_factory=dict_row,
        **session_options(conninfo),
    )
