"""The HTTP API: `create_app()` for any ASGI server, `serve_command` (`jobctl serve`) to run it.

Modules: app (factory, pool lifespan), routes (the endpoints), auth (bearer tokens), models (JSON
shapes), error_handlers (one error body for all), audit (who changed what), metrics (Prometheus),
serve (the command).
"""

from __future__ import annotations

from jobctl.api.app import create_app
from jobctl.api.serve import serve_command

__all__ = ["create_app", "serve_command"]
