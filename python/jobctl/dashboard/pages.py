"""Rendering: the Jinja2 environment over the package's templates (autoescape on), its filters, and
the page and action wrappers every route goes through (sign-in, scope, errors as pages)."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg
from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from jobctl import errors
from jobctl.api import auth
from jobctl.api.auth import Caller
from jobctl.client import RawJson
from jobctl.dashboard import charts, cron_words, web

log = logging.getLogger("jobctl.dashboard")

LIVE_HEADER = "x-jobctl-live"  # the poller's request: only the page's live block
SEALED_KEY = "$jobctl_sealed"  # a payload stored encrypted and not opened for this caller

env = Environment(
    loader=PackageLoader("jobctl.dashboard", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,  # the templates ship in the package: compiled once per process
)


def _wall(value: datetime | None, zone: str) -> str:
    """The wall time of an instant in a schedule's time zone ('' for UTC, or a zone Python lacks)."""
    if value is not None and zone != "UTC":
        with suppress(ZoneInfoNotFoundError, ValueError):
            return value.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")
    return ""


def _age(value: datetime | None, now: datetime) -> str:
    """How long ago (or, in the future, 'in ...')."""
    if value is None:
        return "–"
    delta = (now - value).total_seconds()
    text = charts.seconds(abs(delta)).replace(".0 ", " ")
    return f"in {text}" if delta < 0 else f"{text} ago"


def pretty_json(value: Any) -> str:
    if isinstance(value, RawJson):
        return value.text
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _number(value: Any) -> float | None:
    """A finite JSON number as a float (None for anything else: a bool, a string, ...)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def progress_view(value: Any) -> tuple[float | None, str, Any]:
    """A job's progress as the job page shows it: how far it is, 0 to 1 (from numbers `done` and
    `total` above 0, or `percent`; None: no bar), the bar's words ("3 of 4"), and what else it holds
    (shown as JSON: the whole of a progress without a bar, the other keys of one with; None: nothing)."""
    if not isinstance(value, dict):
        return None, "", value
    done, total, percent = (_number(value.get(k)) for k in ("done", "total", "percent"))
    if done is not None and total is not None and total > 0:
        part, label = done / total, f"{value['done']:,} of {value['total']:,}"
    elif percent is not None:
        part, label = percent / 100, ""
    else:
        return None, "", value
    rest = {k: v for k, v in value.items() if k not in ("done", "total", "percent")}
    return max(0.0, min(1.0, part)), label, rest or None


# What a tenant's text must not do to the page's reader: C0 controls but newline and tab, DEL and C1
# controls, bidi embeddings, overrides and isolates. Shown as escapes (`\x1b`, `\u202e`), as the CLI
# shows them (jobctl.output.printable, which escapes newlines too); markup is autoescape's.
_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with the characters a reader would not see (or that reorder what follows) as escapes."""
    return _HIDDEN.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


STEP_RESULT_SHOWN = 200  # characters of a step's result on a job's page


def excerpt(value: Any) -> str:
    """A JSON value on one line, cut to STEP_RESULT_SHOWN characters, with the hidden ones visible."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return visible(text if len(text) <= STEP_RESULT_SHOWN else text[: STEP_RESULT_SHOWN - 1] + "…")


env.filters.update(
    excerpt=excerpt,
    when=lambda value: "–" if value is None else value.strftime("%Y-%m-%d %H:%M:%S"),
    wall=_wall,
    age=_age,
    num=charts.number,
    secs=charts.seconds,
    grouped=lambda value: (
        "–" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"
    ),
    cron_words=cron_words.describe,
    pretty_json=pretty_json,
    sealed=lambda value: isinstance(value, dict) and SEALED_KEY in value,
    progress_view=progress_view,
    visible=visible,
    line_count=lambda text: len(text.rstrip("\n").split("\n")),
    pct=lambda v: "–" if v is None else f"{v:.0%}",
)
env.globals.update(meter=charts.meter, share_bar=charts.share_bar, progress_bar=charts.progress_bar)
# the macros as a global, not a template's import: a live block rendered alone sees them too
env.globals["m"] = env.get_template("macros.html").module


@dataclass(frozen=True)
class Me:
    """Who is signed in, as jobctl.authenticate named the token (kept past its transaction)."""

    token_id: int
    tenant_id: str | None
    scopes: frozenset[str]
    csrf: str
    # the areas the database says the token may see (jobctl.caller_access); None: not asked (a live
    # block, a bulk run's report), every tab shown
    areas: frozenset[str] | None = None

    def may(self, scope: str) -> bool:
        return scope in self.scopes

    def sees(self, area: str) -> bool:
        """Whether a tab's area is one the token may see (the database's answer, not a rule here)."""
        return self.areas is None or area in self.areas

    @property
    def read_only(self) -> bool:
        return all(scope.endswith(":read") for scope in self.scopes)

    @classmethod
    def of(cls, caller: Caller, request: Request) -> Me:
        csrf = web.csrf_for(request, web.session_token(request))
        return cls(caller.token_id, caller.tenant_id, caller.scopes, csrf)


# the tabs: each a section at /<section> (the overview at /), shown when the token may see its area of
# jobctl.caller_access (the overview's: jobs)
NAV = ("overview", "jobs", "queues", "tenants", "schedules", "workers")


def render(
    request: Request, template: str, context: dict[str, Any], status: int = 200, me: Me | None = None
) -> HTMLResponse:
    """The page, or only its `live` block when the poller asks (header x-jobctl-live). A page with a live
    block polls for it."""
    tmpl = env.get_template(template)
    live = "live" in tmpl.blocks
    ctx = {"request": request, "me": me, "nav": NAV, "section": "", "title": "", "live": live} | context
    if request.headers.get(LIVE_HEADER) and live:
        body = "".join(tmpl.blocks["live"](tmpl.new_context(ctx)))
    else:
        body = tmpl.render(ctx)
    return HTMLResponse(body, status_code=status)


def to_sign_in(request: Request, expired: bool = False) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.headers.get(LIVE_HEADER):  # the poller: the page reloads itself on 401
        response: Response = Response(status_code=401)
    else:
        response = RedirectResponse(
            "/sign-in?" + ("expired=1&" if expired else "") + "next=" + quote(target, safe=""),
            status_code=303,
        )
    if expired:
        clear_cookie(response, request)
    return response


def clear_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(
        web.COOKIE, path="/", secure=request.url.scheme == "https", httponly=True, samesite="strict"
    )


SCOPE_WORDS = {
    "jobs:read": "see jobs",
    "jobs:cancel": "cancel jobs",
    "jobs:retry": "retry jobs",
    "jobs:delete": "delete finished jobs",
    "queues:read": "see the queues (shared by every tenant: an admin token)",
    "queues:write": "change queues (an admin token)",
    "schedules:read": "see schedules",
    "schedules:write": "change schedules",
    "tenants:read": "see tenant administration",
    "tenants:write": "change tenants",
}


def problem(
    request: Request, err: BaseException, scope: str, me: Me | None, section: str = ""
) -> HTMLResponse:
    """An error as a page of its own: what this token may not do, what is not there, or what broke."""
    if isinstance(err, errors.Forbidden):
        status, heading = 403, "Not for this token"
        text = f"This token may not {SCOPE_WORDS.get(scope, scope)}."
        if err.sqlstate == "42501" and "tenant" in str(err):
            text = str(err)
    elif isinstance(err, errors.JobctlError):  # NotFound 404, OverLimit 429, ...
        status, text = err.http_status, str(err)
        heading = {404: "Not found", 429: "Over the limit"}.get(status, "Refused")
    elif isinstance(err, psycopg.errors.UndefinedFunction):
        status, heading = 501, "Not in this database yet"
        text = "The database lacks a function this page needs: run `jobctl migrate`. " + errors.first_line(
            str(err)
        )
    elif isinstance(err, psycopg.OperationalError):
        status, heading, text = 503, "Database unavailable", "The database did not answer; try again shortly."
    else:
        log.exception("dashboard page failed", exc_info=err)
        status, heading, text = 500, "Something broke", errors.first_line(str(err))
    return _problem_page(request, status, heading, text, me, section)


def refused(request: Request, text: str) -> HTMLResponse:
    """403: a form that did not come from this dashboard's own page."""
    return _problem_page(request, 403, "Refused", text)


def _problem_page(
    request: Request, status: int, heading: str, text: str, me: Me | None = None, section: str = ""
) -> HTMLResponse:
    context = {"heading": heading, "text": text, "section": section, "title": heading, "status": status}
    return render(request, "problem.html", context, status=status, me=me)


Build = Callable[[Request, Caller], Awaitable[dict[str, Any]]]  # a page's context, read on its connection
NOTES = {  # what an action's redirect (?note=) says on the page it returns to
    "cancelled": "Job cancelled.",
    "retried": "Job made pending again.",
    "paused": "Paused.",
    "resumed": "Resumed.",
    "saved": "Saved.",
    "ran": "Schedule run: a job was submitted.",
}


async def me_for(caller: Caller, request: Request) -> Me:
    """Who is signed in, with the areas the database lets the token see (for the tabs; not asked for
    a live block, which has no tabs)."""
    me = Me.of(caller, request)
    if request.headers.get(LIVE_HEADER):
        return me
    return replace(me, areas=await caller.client.caller_access(conn=caller.conn))


async def page(request: Request, scope: str, template: str, build: Build, section: str) -> Response:
    """A page: the session's token authenticated for scope, build's context gathered on its
    connection (one transaction), then rendered after the connection is back in the pool. Its title is
    the section's unless build names one; `now` is the database's clock unless build gives it; `note` is
    the flash an action sent it back with (?note=)."""
    me: Me | None = None
    try:
        async with auth.session(request, web.session_token(request), scope) as caller:
            me = await me_for(caller, request)
            context = await build(request, caller)
            if "now" not in context:  # the clock every age on a page is measured by
                context["now"] = await caller.client.now(conn=caller.conn)
    except web.NotSignedIn:
        return to_sign_in(request)
    except errors.Unauthorized:
        return to_sign_in(request, expired=True)
    except (errors.JobctlError, psycopg.Error) as e:
        return problem(request, e, scope, me, section)
    note = NOTES.get(request.query_params.get("note", ""))
    return render(
        request, template, {"section": section, "title": section.capitalize(), "note": note} | context, me=me
    )


Form = dict[str, list[str]]  # an urlencoded form's fields, each with its values in order (web.read_form)
Act = Callable[[Caller, Form], Awaitable[Response]]


async def action(request: Request, scope: str, act: Act, section: str) -> Response:
    """A POST: same-origin and CSRF checked (else 403), then the token authenticated for scope (so a
    read-only token is refused 403 by the database), then act on the request's transaction."""
    me: Me | None = None
    try:
        form = await web.checked_form(request)
        async with auth.session(request, web.session_token(request), scope) as caller:
            me = await me_for(caller, request)
            return await act(caller, form)
    except (web.Refused, web.NotSignedIn):
        return refused(
            request,
            "This form did not come from this dashboard's own page (CSRF check): reload the page and retry.",
        )
    except errors.Unauthorized:
        return to_sign_in(request, expired=True)
    except (errors.JobctlError, psycopg.Error) as e:
        return problem(request, e, scope, me, section)


def field(form: Form, name: str, default: str = "") -> str:
    return (form.get(name) or [default])[0].strip()
