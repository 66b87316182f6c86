"""The dashboard's session, CSRF and response headers.

Session: the API token itself, in an HttpOnly, SameSite=Strict, Path=/ cookie (Secure over https).
Each request authenticates it (session_token) exactly as the API authenticates a bearer token
(jobctl.api.auth.session: jobctl.authenticate for the page's scope, in the request's transaction), so the
database acts for the token's tenant and scopes only; nothing here filters tenants.

CSRF: every POST carries a hidden field, the HMAC-SHA256 of the session token under a secret of the
app's own (made when the app is made: a restart invalidates open forms, never sessions), and must come
from this origin (Origin, else Referer, equal to the request's own). The sign-in form, before there is
a session, uses a random pre-session cookie in place of the token.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qs, urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "jobctl_session"
PRE_COOKIE = "jobctl_signin"  # the sign-in form's CSRF nonce, before a session exists
CSRF_FIELD = "csrf"
MAX_FORM_BYTES = 256 * 1024

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
API_PREFIXES = ("/api/", "/metrics")  # their own answers: JSON, no dashboard headers


class NotSignedIn(Exception):
    """No session cookie: the page sends the browser to the sign-in form."""


class Refused(Exception):
    """A POST without a valid CSRF field or from another origin (403)."""


def csrf_for(request: Request, token: str) -> str:
    """The CSRF field of the forms of token's session (or the sign-in form's nonce): under the app's key."""
    secret: bytes = request.app.state.dashboard_secret
    return hmac.new(secret, b"jobctl-dashboard-csrf:" + token.encode(), hashlib.sha256).hexdigest()


def session_token(request: Request) -> str:
    token = request.cookies.get(COOKIE, "")
    if not token:
        raise NotSignedIn()
    return token


def same_origin(request: Request) -> bool:
    """Whether the request names this origin: its Origin header, else its Referer, must be the
    scheme, host and port the request came to."""
    own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
    origin = request.headers.get("origin")
    if origin is None:  # no Referer: "://", never this origin
        parts = urlsplit(request.headers.get("referer", ""))
        origin = f"{parts.scheme}://{parts.netloc}"
    return origin.lower() == own


async def read_form(request: Request) -> dict[str, list[str]]:
    """An urlencoded form body (the dashboard's only kind), each field's values in order."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise Refused("not a form")
    raw = await request.body()
    if len(raw) > MAX_FORM_BYTES:
        raise Refused("form too large")
    return parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)


async def checked_form(request: Request, token: str | None = None) -> dict[str, list[str]]:
    """The POST's form; Refused unless its CSRF field is the token's (default: the session's; no session:
    NotSignedIn) and the request is same-origin."""
    form = await read_form(request)
    sent = (form.get(CSRF_FIELD) or [""])[0]
    expected = csrf_for(request, session_token(request) if token is None else token)
    if not same_origin(request) or not hmac.compare_digest(sent, expected):
        raise Refused("CSRF check failed")
    return form


class SecurityHeaders:
    """Adds the dashboard's headers (CSP, frame denial, nosniff, referrer policy, no-store) to every
    response outside the API's paths."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).startswith(API_PREFIXES):
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.update(HEADERS)
                if static:
                    headers["cache-control"] = "public, max-age=300"
            await send(message)

        await self.app(scope, receive, with_headers)
