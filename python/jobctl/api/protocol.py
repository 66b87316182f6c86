"""The HTTP/1.1 protocol `jobctl serve` runs: uvicorn's h11 protocol with a request-head timeout.

uvicorn (0.54) bounds only the idle time between requests (timeout_keep_alive, and only once a
response is done): a connection that never sends a byte, or sends a request head a byte at a time
(slowloris), is kept forever. Here a connection must deliver a whole request head (request line
and headers) within head_timeout seconds of opening, and of the end of each response; else it is
answered 408 and closed. The timer is not reset by data, so trickling bytes does not extend it.
Bodies are not timed here (a slow body holds a socket and a task, never a database connection:
FastAPI reads the body before the endpoint's dependencies run).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from jobctl.api.error_handlers import body

HEAD_TIMEOUT = 10.0  # seconds
# The 408's body: the API's one error shape (no SQLSTATE: no database rule is behind it)
TIMED_OUT = json.dumps(
    body("request_timeout", "the request head was not received in time; the connection is closed")
).encode()


class HeadTimeoutH11Protocol(H11Protocol):
    head_timeout = HEAD_TIMEOUT  # set per server by head_timeout_protocol()

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


def head_timeout_protocol(seconds: float) -> type[HeadTimeoutH11Protocol]:
    """The protocol class to pass as uvicorn's `http`, with this head timeout."""
    return type("HeadTimeoutH11Protocol", (HeadTimeoutH11Protocol,), {"head_timeout": seconds})
