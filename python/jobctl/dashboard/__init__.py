"""The web dashboard `jobctl serve` answers at `/` (docs/dashboard.md): server-rendered pages (Jinja2,
autoescaped) over the same SQL functions and token rules as the API, inline SVG charts, a little
vanilla JS that polls for the live parts, and nothing loaded from another host.

Modules: routes (the pages and actions), pages (rendering, the page and action wrappers), web
(session cookie, CSRF, security headers), charts (SVG), cron_words (cron in plain words).
"""

from __future__ import annotations

import secrets

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles


def install(app: FastAPI) -> None:
    """Mount the dashboard on app: its pages at /, its assets at /static, its headers on both."""
    from jobctl.dashboard import routes, web  # here: they import jobctl.api, which imports this

    app.state.dashboard_secret = secrets.token_bytes(32)  # the CSRF fields' key: per app, never stored
    app.include_router(routes.router)
    app.mount("/static", StaticFiles(packages=[("jobctl.dashboard", "static")]), name="dashboard-static")
    app.add_middleware(web.SecurityHeaders)
