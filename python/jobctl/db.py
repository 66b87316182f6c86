"""Where the database is: JOBCTL_DSN, else the private cluster's .pg/dsn; what every session
carries: the tenants' payload keys from JOBCTL_PAYLOAD_KEYS (docs/security.md); and whether JOBCTL_DSN
leads to a transaction-pooling proxy (JOBCTL_POOLER=transaction, PgBouncer: docs/operations.md,
Connection pooling), which changes three things: no server-side prepared statements, no startup
`options`, and LISTEN only on a direct connection (JOBCTL_LISTEN_DSN) or not at all."""

from __future__ import annotations

import json
import logging
import os
import random
from pathlib import Path
from typing import Any

import psycopg
import psycopg_pool.base
import psycopg_pool.pool
import psycopg_pool.pool_async
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[2]


class ConfigError(RuntimeError):
    """The environment does not say how to reach or use the database."""


class NoDsnError(ConfigError):
    pass


PAYLOAD_KEYS_ENV = "JOBCTL_PAYLOAD_KEYS"
# Said, not guessed: a probe (pg_backend_pid() against the pid the server announced) costs a round trip
# per connection and cannot tell transaction pooling from session pooling, and libpq refuses a DSN
# parameter it does not know. An environment variable reaches every process (CLI, worker, API,
# client) the way JOBCTL_DSN does.
POOLER_ENV = "JOBCTL_POOLER"
LISTEN_DSN_ENV = "JOBCTL_LISTEN_DSN"


def pooled() -> bool:
    """Whether the DSN leads to a transaction-pooling proxy: JOBCTL_POOLER=transaction (unset, empty,
    `none` or `session`: no; a session-pooling proxy behaves as a direct connection)."""
    value = os.environ.get(POOLER_ENV, "").strip().lower()
    if value in ("", "none", "session"):
        return False
    if value == "transaction":
        return True
    raise ConfigError(f"{POOLER_ENV} must be transaction, session or none, not {value!r}")


def listen_dsn(conninfo: str, given: str | None = None) -> str | None:
    """Where a LISTEN may run: `given`, else JOBCTL_LISTEN_DSN, else the DSN itself unless it leads to a
    transaction pooler (None then: hints are off and the caller polls). A LISTEN through such a proxy
    would register on whichever server connection ran it, and its notifications would reach whichever
    client holds that connection at the time, or nobody."""
    value = given or os.environ.get(LISTEN_DSN_ENV)
    if value:
        return value
    return None if pooled() else conninfo


# The longest pause between a pool's connection attempts, and between the checks of connections a
# restart broke (psycopg_pool: 1 s doubling, to minutes; the worker and the API then stayed idle ~10 s
# after a 1 s restart). Jittered: each pause is drawn between half and all of it.
RECONNECT_FIRST, RECONNECT_MAX = 0.1, 1.0


class _CappedAttempt(psycopg_pool.base.AttemptWithBackoff):
    """psycopg_pool's backoff, from RECONNECT_FIRST doubling to at most RECONNECT_MAX, jittered."""

    INITIAL_DELAY = RECONNECT_FIRST

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        cap = random.uniform(RECONNECT_MAX / 2, RECONNECT_MAX)
        self.delay = min(self.delay, cap)


def cap_pool_backoff() -> None:
    """Cap the reconnect backoff of psycopg_pool's pools in this process (the worker's, the API's):
    they look up `AttemptWithBackoff` in their module at each use, so the capped class replaces it
    there. Idempotent."""
    for module in (psycopg_pool.pool, psycopg_pool.pool_async):
        if getattr(module, "AttemptWithBackoff", None) is None:  # a psycopg_pool that changed: its own
            logging.getLogger(__name__).warning(  # backoff stays (slower reconnects, nothing worse)
                "%s has no AttemptWithBackoff: reconnects keep psycopg_pool's own backoff", module.__name__
            )
            continue
        setattr(module, "AttemptWithBackoff", _CappedAttempt)  # noqa: B010


def pooler_kwargs() -> dict[str, Any]:
    """psycopg settings for the pooler: psycopg prepares a statement on a connection after its fifth
    run, and PgBouncer 1.18 (no protocol-level prepared statements) would send the next run's
    `execute _pg3_0` to another server connection, which has no such statement."""
    return {"prepare_threshold": None} if pooled() else {}


def session_options(conninfo: str = "") -> dict[str, Any]:
    """libpq startup options for a jobctl session: JOBCTL_PAYLOAD_KEYS (a JSON object, tenant id ->
    key) becomes the session setting jobctl.payload_keys, with which the database seals and opens
    the payloads of tenants that encrypt theirs; keys live in the service's environment, never in a
    table. Options the DSN already has are kept."""
    behind_pooler = pooled()  # a bad JOBCTL_POOLER fails here too
    raw = os.environ.get(PAYLOAD_KEYS_ENV)
    if not raw:
        return {}
    if behind_pooler:
        raise ConfigError(
            f"{PAYLOAD_KEYS_ENV} cannot pass a transaction pooler (PgBouncer refuses the startup parameter"
            " `options`): set jobctl.payload_keys in the pooler's connect_query, or connect directly"
        )
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
    application_name (unless the DSN sets one) and give up connecting after 10 s (unless it says);
    behind a transaction pooler, psycopg prepares no statement (pooler_kwargs)."""
    given = conninfo_to_dict(conninfo)
    kwargs: dict[str, Any] = {"autocommit": autocommit}
    if "application_name" not in given:
        kwargs["application_name"] = application_name
    if "connect_timeout" not in given:
        kwargs["connect_timeout"] = 10
    return kwargs | pooler_kwargs() | session_options(conninfo)


def _cli_kwargs(conninfo: str) -> dict[str, Any]:
    """What connect and connect_dicts open with: application_name jobctl, the pooler's and the
    session's settings."""
    return {"application_name": "jobctl"} | pooler_kwargs() | session_options(conninfo)


def connect(autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    conninfo = dsn()
    return psycopg.connect(conninfo, autocommit=autocommit, **_cli_kwargs(conninfo))


def connect_dicts(autocommit: bool = False) -> psycopg.Connection[dict[str, Any]]:
    """A connection whose rows are dicts keyed by column name."""
    conninfo = dsn()
    return psycopg.connect(conninfo, autocommit=autocommit, row_factory=dict_row, **_cli_kwargs(conninfo))
