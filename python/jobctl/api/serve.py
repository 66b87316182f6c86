"""`jobctl serve`: run the API under uvicorn, its access log and errors through jobctl.logs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import click
import h11
import psycopg
import uvicorn
from psycopg.conninfo import conninfo_to_dict
from uvicorn.protocols.http.h11_impl import H11Protocol

from jobctl import db, logs
from jobctl.api import app, long_poll
from jobctl.api.error_handlers import body
from jobctl.errors import first_line

F = TypeVar("F", bound=Callable[..., Any])
KEEP_ALIVE_TIMEOUT = 5  # seconds an idle connection is kept between requests (uvicorn's default)
HEAD_TIMEOUT = 10.0  # seconds
# The 408's body: the API's one error shape (no SQLSTATE: no database rule is behind it)
TIMED_OUT = json.dumps(
    body("request_timeout", "the request head was not received in time; the connection is closed")
).encode()


class HeadTimeoutH11Protocol(H11Protocol):
    """The HTTP/1.1 protocol `jobctl serve` runs: uvicorn's h11 protocol with a request-head timeout.

    uvicorn (0.54) bounds only the idle time between requests (timeout_keep_alive, and only once a
    response is done): a connection that never sends a byte, or sends a request head a byte at a time
    (slowloris), is kept forever. Here a connection must deliver a whole request head (request line
    and headers) within head_timeout seconds of opening, and of the end of each response; else it is
    answered 408 and closed. The timer is not reset by data, so trickling bytes does not extend it.
    Bodies are not timed here (a slow body holds a socket and a task, never a database connection:
    FastAPI reads the body before the endpoint's dependencies run)."""

    head_timeout = HEAD_TIMEOUT  # set per server by a subclass (serve_command)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timer: asyncio.TimerHandle | None = None
        self.head_cycle: object = None  # the cycle (request) in progress when the timer was armed

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self.head_cycle = self.cycle
        self.head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        # a new request head parsed makes a new cycle (uvicorn's RequestResponseCycle)
        if self.head_timer is not None and (self.cycle is not self.head_cycle or self.transport.is_closing()):
            self._cancel_head_timer()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._cancel_head_timer()  # the head is complete; the transport goes to another protocol
        super().handle_websocket_upgrade(event)

    def on_response_complete(self) -> None:
        # armed first: uvicorn's own handler may parse a pipelined request at once (handle_events)
        if not self.transport.is_closing():
            self._arm_head_timer()
        super().on_response_complete()

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if self.transport.is_closing():
            return
        # 408 to a client that began a request; a silent close to one that sent nothing (keep-alive)
        if self.conn.our_state is h11.IDLE and self.conn.trailing_data[0]:
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(TIMED_OUT)).encode()),
                (b"connection", b"close"),
            ]
            response = h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")
            self.transport.write(
                (self.conn.send(response) or b"") + (self.conn.send(h11.Data(data=TIMED_OUT)) or b"")
            )
        self.transport.close()


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
        # h11 (httptools is not a dependency) with a request-head timeout: HeadTimeoutH11Protocol. uvicorn's
        # limit_concurrency is not used: it counts open connections, slow ones too, and would
        # answer real requests 503 while slowloris sockets are open
        http=type("HeadTimeoutH11Protocol", (HeadTimeoutH11Protocol,), {"head_timeout": header_timeout}),
        timeout_keep_alive=keep_alive_timeout,
        lifespan="on",
        log_config=None,  # uvicorn's loggers propagate to the root handler logs.setup installed
        access_log=True,
        server_header=False,
        timeout_graceful_shutdown=10,
    )
