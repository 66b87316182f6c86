"""`jobctl serve`: run the API under uvicorn, its access log and errors through jobctl.logs."""

from __future__ import annotations

import logging

import click
import psycopg
import uvicorn
from psycopg.conninfo import conninfo_to_dict

from jobctl import db, logs
from jobctl.api.app import create_app
from jobctl.errors import first_line


def _drop_color_message(record: logging.LogRecord) -> bool:
    # uvicorn attaches an ANSI-coloured copy of some messages; our formatters would print it as a field
    record.__dict__.pop("color_message", None)
    return True


@click.command("serve", short_help="Serve the HTTP API (/api/v1).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@logs.format_option
@click.option(
    "--pool-size",
    default=10,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Most database connections.",
)
@click.option(
    "--pool-timeout",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0.1, 600),
    help="Seconds a request waits for a database connection before it answers 503.",
)
def serve_command(host: str, port: int, log_format: str, pool_size: int, pool_timeout: float) -> None:
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
    uvicorn.run(
        create_app(dsn, pool_max=pool_size, pool_timeout=pool_timeout),
        host=host,
        port=port,
        lifespan="on",
        log_config=None,  # uvicorn's loggers propagate to the root handler logs.setup installed
        access_log=True,
        server_header=False,
        timeout_graceful_shutdown=10,
    )
