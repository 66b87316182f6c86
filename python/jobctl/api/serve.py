"""`jobctl serve`: run the API under uvicorn, its access log and errors through jobctl.logs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import click
import psycopg
import uvicorn
from psycopg.conninfo import conninfo_to_dict

from jobctl import db, logs
from jobctl.api import app, long_poll
from jobctl.api.protocol import HEAD_TIMEOUT, head_timeout_protocol
from jobctl.errors import first_line

F = TypeVar("F", bound=Callable[..., Any])
KEEP_ALIVE_TIMEOUT = 5  # seconds an idle connection is kept between requests (uvicorn's default)


def _drop_color_message(record: logging.LogRecord) -> bool:
    # uvicorn attaches an ANSI-coloured copy of some messages; our formatters would print it as a field
    record.__dict__.pop("color_message", None)
    return True


def setting(
    name: str, default: float, kind: click.ParamType[Any], text: str, env: bool = True
) -> Callable[[F], F]:
    """A click option of `jobctl serve`, its default shown; env: the environment may set it too, as
    JOBCTL_API_ and its name (JOBCTL_API_LOCK_TIMEOUT)."""
    envvar = "JOBCTL_API_" + name.removeprefix("--").upper().replace("-", "_") if env else None
    return click.option(
        name, default=default, show_default=True, envvar=envvar, show_envvar=env, type=kind, help=text
    )


@click.command("serve", short_help="Serve the HTTP API (/api/v1).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@logs.format_option
@setting("--pool-size", 10, click.IntRange(1, 1000), "Most database connections.", env=False)
@setting(
    "--pool-timeout",
    5.0,
    click.FloatRange(0.1, 600),
    "Seconds a request waits for a database connection before it answers 503.",
    env=False,
)
@setting(
    "--statement-timeout",
    app.STATEMENT_TIMEOUT,
    click.FloatRange(0, 3600),
    "Seconds a database statement may run before the request answers 503 (0: no limit).",
)
@setting(
    "--lock-timeout",
    app.LOCK_TIMEOUT,
    click.FloatRange(0, 3600),
    "Seconds a statement waits for a lock before the request answers 503 (0: no limit).",
)
@setting(
    "--wait-concurrency",
    long_poll.WAIT_CONCURRENCY,
    click.IntRange(1, 1000),
    "Long polls (GET /api/v1/jobs/{id}?wait=) of one token's tenants at once; more answer 429.",
)
@setting(
    "--list-concurrency",
    app.LIST_CONCURRENCY,
    click.IntRange(1, 1000),
    "List requests of one token's tenants running at once; more answer 429.",
)
@setting(
    "--header-timeout",
    HEAD_TIMEOUT,
    click.FloatRange(0.1, 600),
    "Seconds a connection has to send a whole request head (from opening, or the previous response); "
    "else 408 and closed.",
)
@setting(
    "--keep-alive-timeout",
    KEEP_ALIVE_TIMEOUT,
    click.IntRange(1, 600),
    "Seconds an idle connection is kept open between requests.",
)
def serve_command(
    host: str,
    port: int,
    log_format: str,
    pool_size: int,
    pool_timeout: float,
    header_timeout: float,
    keep_alive_timeout: int,
    **limits: Any,
) -> None:
    """Serve the HTTP API (/api/v1, OpenAPI at /api/v1/openapi.json, metrics at /metrics)."""
    logs.setup(json_logs=log_format == "json")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_drop_color_message)
    try:
        dsn = db.dsn()
        conninfo_to_dict(dsn)  # a DSN that does not parse fails here, in one line, not at startup
        db.session_options(dsn)  # and so does a bad JOBCTL_PAYLOAD_KEYS
    except db.ConfigError as e:
        raise click.ClickException(str(e)) from None
    except psycopg.ProgrammingError as e:
        raise click.ClickException(f"invalid DSN: {first_line(str(e))}") from None
    api = app.create_app(
        dsn,
        pool_max=pool_size,
        pool_timeout=pool_timeout,
        **limits,  # statement_timeout, lock_timeout, list_concurrency, wait_concurrency
    )
    uvicorn.run(
        api,
        host=host,
        port=port,
        # h11 (httptools is not a dependency) with a request-head timeout: protocol.py. uvicorn's
        # limit_concurrency is not used: it counts open connections, slow ones too, and would
        # answer real requests 503 while slowloris sockets are open
        http=head_timeout_protocol(header_timeout),
        timeout_keep_alive=keep_alive_timeout,
        lifespan="on",
        log_config=None,  # uvicorn's loggers propagate to the root handler logs.setup installed
        access_log=True,
        server_header=False,
        timeout_graceful_shutdown=10,
    )
