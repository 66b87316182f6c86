"""The dashboard's security model against a real API server process and the real database (no
browser): escaping, CSRF and same-origin checks, scopes, tenant isolation, headers and the cookie."""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from test_api import Server

Conn = psycopg.Connection[tuple[Any, ...]]
XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def server(dsn: str) -> Iterator[Server]:
    srv = Server(dsn)
    try:
        srv.wait_up()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def admin_db(dsn: str) -> Iterator[Conn]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture(scope="module")
def tenants(admin_db: Conn) -> Iterator[tuple[str, str]]:
    mine, theirs = f"dsec-{uuid.uuid4().hex[:8]}", f"dsec-{uuid.uuid4().hex[:8]}"
    for t in (mine, theirs):
        admin_db.execute("select jobctl.put_tenant(%s)", (t,))
    yield mine, theirs


@pytest.fixture(scope="module")
def tokens(admin_db: Conn, tenants: tuple[str, str]) -> Iterator[dict[str, str]]:
    mine, theirs = tenants
    made: dict[str, str] = {}
    for key, tenant, scopes in (
        ("operator", mine, None),
        ("reader", mine, ["jobs:read", "schedules:read"]),
        ("theirs", theirs, None),
    ):
        row = admin_db.execute(
            "select jobctl.create_api_token(%s, coalesce(%s::text[], jobctl._api_scopes()))", (tenant, scopes)
        ).fetchone()
        assert row is not None
        made[key] = str(row[0])
    yield made
    for token in made.values():
        admin_db.execute("select jobctl.revoke_api_token(%s)", (int(token.split("_")[1]),))


def session(server: Server, token: str) -> httpx.Client:
    """A client signed in through the form, as a browser is (cookie jar, same-origin headers)."""
    c = httpx.Client(base_url=server.url, timeout=10, headers={"Origin": server.url})
    form = c.get("/sign-in")
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', form.text)
    assert csrf is not None, form.text
    r = c.post("/sign-in", data={"csrf": csrf.group(1), "token": token, "next": "/jobs"})
    assert r.status_code == 303, r.text
    assert r.headers["location"] == "/jobs"
    return c


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert found is not None, html
    return found.group(1)


def submit(admin_db: Conn, tenant: str, queue: str, payload: str) -> int:
    row = admin_db.execute(
        "select job_id from jobctl.submit_job(%s, %s, %s::jsonb)", (tenant, queue, payload)
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_the_cookie_and_the_headers(server: Server, tokens: dict[str, str]) -> None:
    c = httpx.Client(base_url=server.url, timeout=10, headers={"Origin": server.url})
    form = c.get("/sign-in")
    r = c.post("/sign-in", data={"csrf": csrf_of(form.text), "token": tokens["operator"], "next": "/"})
    cookie = next(
        v for k, v in r.headers.multi_items() if k == "set-cookie" and v.startswith("jobctl_session=")
    )
    attrs = {a.strip().lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "path=/", "samesite=strict"} <= attrs, cookie
    assert "secure" not in attrs  # plain http here; set over https
    for path in ("/", "/jobs", "/sign-in", "/static/dashboard.css", "/jobs/1"):
        h = c.get(path).headers
        csp = h["content-security-policy"]
        assert (
            "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp
        )
        assert h["x-frame-options"] == "DENY"
        assert h["x-content-type-options"] == "nosniff"
        assert h["referrer-policy"] == "same-origin"
    # the API keeps its own answers
    assert "content-security-policy" not in c.get("/api/v1/health").headers
    # sign-out clears the cookie
    page = c.get("/jobs")
    out = c.post("/sign-out", data={"csrf": csrf_of(page.text)})
    assert out.status_code == 303
    assert 'jobctl_session=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
    assert c.get("/jobs").status_code == 303  # back to the sign-in form


def test_a_bad_token_does_not_sign_in_and_no_session_sees_nothing(server: Server) -> None:
    c = httpx.Client(base_url=server.url, timeout=10, headers={"Origin": server.url})
    form = c.get("/sign-in")
    r = c.post("/sign-in", data={"csrf": csrf_of(form.text), "token": "jct_1_" + "0" * 64})
    assert r.status_code == 401 and "unknown or revoked" in r.text
    assert "jobctl_session" not in r.headers.get("set-cookie", "")
    r = httpx.get(f"{server.url}/jobs", cookies={"jobctl_session": "jct_1_" + "0" * 64})
    assert r.status_code == 303 and r.headers["location"].startswith("/sign-in?expired=1")


def test_a_payload_with_a_script_renders_inert(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    mine, _ = tenants
    job_id = submit(admin_db, mine, f"q{XSS}", f'{{"html": "{XSS}"}}')
    admin_db.execute("select jobctl.put_tenant(%s)", (mine,))
    c = session(server, tokens["operator"])
    for path in (f"/jobs/{job_id}", f"/jobs?tenant={mine}", "/"):
        html = c.get(path).text
        assert XSS not in html, path
        assert "<script>alert" not in html
    html = c.get(f"/jobs/{job_id}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # the only script element is the dashboard's own file
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/dashboard.js" defer>']


def test_posts_without_the_csrf_field_or_from_another_origin_are_refused(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    mine, _ = tenants
    job_id = submit(admin_db, mine, "csrf", "{}")
    c = session(server, tokens["operator"])
    csrf = csrf_of(c.get(f"/jobs/{job_id}").text)
    assert c.post(f"/jobs/{job_id}/cancel", data={}).status_code == 403
    assert c.post(f"/jobs/{job_id}/cancel", data={"csrf": "0" * 64}).status_code == 403
    foreign = {"Origin": "http://evil.example"}
    assert c.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf}, headers=foreign).status_code == 403
    # no Origin: the Referer decides
    bare = httpx.Client(base_url=server.url, timeout=10, cookies=c.cookies)
    assert bare.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf}).status_code == 403
    assert (
        bare.post(
            f"/jobs/{job_id}/cancel", data={"csrf": csrf}, headers={"Referer": "http://evil.example/x"}
        ).status_code
        == 403
    )
    # a CSRF field of another session is no good either
    other = session(server, tokens["reader"])
    other_csrf = csrf_of(other.get("/jobs").text)
    assert c.post(f"/jobs/{job_id}/cancel", data={"csrf": other_csrf}).status_code == 403
    state = admin_db.execute("select state from jobctl.job where job_id = %s", (job_id,)).fetchone()
    assert state == ("pending",)
    r = c.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf})
    assert r.status_code == 303
    state = admin_db.execute("select state from jobctl.job where job_id = %s", (job_id,)).fetchone()
    assert state == ("cancelled",)
    # the sign-in form has its own token too
    fresh = httpx.Client(base_url=server.url, timeout=10, headers={"Origin": server.url})
    fresh.get("/sign-in")
    assert fresh.post("/sign-in", data={"token": tokens["operator"]}).status_code == 403


def test_a_read_only_token_cannot_act(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    mine, _ = tenants
    job_id = submit(admin_db, mine, "ro", "{}")
    c = session(server, tokens["reader"])
    page = c.get(f"/jobs/{job_id}").text
    assert "read-only" in page
    assert f'action="/jobs/{job_id}/cancel"' not in page
    listing = c.get(f"/jobs?tenant={mine}").text
    assert 'name="do"' not in listing and 'name="job_id"' not in listing
    csrf = csrf_of(page)
    assert c.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf}).status_code == 403
    r = c.post("/jobs/bulk", data={"csrf": csrf, "do": "cancel-all", "tenant": mine})
    assert r.status_code == 403
    r = c.post(
        "/jobs/bulk/run", data={"csrf": csrf, "verb": "cancel", "filter": f'{{"tenant_id": "{mine}"}}'}
    )
    assert r.status_code == 403
    assert c.post("/queues/pause", data={"csrf": csrf, "queue": "ro"}).status_code == 403
    state = admin_db.execute("select state from jobctl.job where job_id = %s", (job_id,)).fetchone()
    assert state == ("pending",)
    # pages this token's scopes do not cover say so
    r = c.get("/queues")
    assert r.status_code == 403 and "Not for this token" in r.text


def test_another_tenants_job_is_invisible(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    mine, theirs = tenants
    job_id = submit(admin_db, theirs, "hidden", '{"secret": "theirs"}')
    c = session(server, tokens["operator"])
    r = c.get(f"/jobs/{job_id}")
    assert r.status_code == 404 and "theirs" not in r.text
    assert c.get(f"/jobs/{job_id + 10**12}").status_code == 404  # as an unknown id answers
    # lists: by id, by the other tenant's name (the SQL refuses), the overview
    assert f'href="/jobs/{job_id}"' not in c.get(f"/jobs?job={job_id}").text
    r = c.get(f"/jobs?tenant={theirs}")
    assert r.status_code == 403 and f'href="/jobs/{job_id}"' not in r.text
    assert theirs not in c.get("/").text
    # and it cannot act on it
    csrf = csrf_of(c.get("/jobs").text)
    assert c.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf}).status_code == 404
    r = c.post("/jobs/bulk", data={"csrf": csrf, "do": "cancel-selected", "job_id": str(job_id)})
    assert r.status_code == 200 and "Cancel 0 jobs?" in r.text
    state = admin_db.execute("select state from jobctl.job where job_id = %s", (job_id,)).fetchone()
    assert state == ("pending",)


def test_bulk_delete_of_a_finished_job_through_its_confirmation(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    mine, _ = tenants
    done = submit(admin_db, mine, "del", "{}")
    admin_db.execute("select jobctl.cancel_job(%s)", (done,))
    alive = submit(admin_db, mine, "del", "{}")
    c = session(server, tokens["operator"])
    csrf = csrf_of(c.get(f"/jobs?tenant={mine}&queue=del").text)
    confirm = c.post(
        "/jobs/bulk", data={"csrf": csrf, "do": "delete-selected", "job_id": [str(done), str(alive)]}
    )
    assert confirm.status_code == 200, confirm.text
    assert "Delete 1 job?" in confirm.text  # the pending one is not the delete's to take
    hidden = re.search(r'name="filter" value="([^"]+)"', confirm.text)
    assert hidden is not None
    ran = c.post(
        "/jobs/bulk/run", data={"csrf": csrf, "verb": "delete", "filter": html.unescape(hidden.group(1))}
    )
    assert ran.status_code == 200 and "Deleted 1 job" in ran.text, ran.text
    rows = admin_db.execute(
        "select job_id from jobctl.job where job_id = any(%s)", ([done, alive],)
    ).fetchall()
    assert rows == [(alive,)]
    # a read-only token may not
    reader = session(server, tokens["reader"])
    reader_csrf = csrf_of(reader.get("/jobs").text)
    r = reader.post("/jobs/bulk", data={"csrf": reader_csrf, "do": "delete-all", "tenant": mine})
    assert r.status_code == 403


def test_sign_in_sends_only_to_this_site(server: Server, tokens: dict[str, str]) -> None:
    cases = [("/jobs?x=1", "/jobs?x=1"), ("//evil.example/", "/"), ("https://evil.example", "/"),
             ("/\t/evil.example", "/"), ("/\\evil.example", "/")]  # fmt: skip
    for target, landing in cases:
        c = httpx.Client(base_url=server.url, timeout=10, headers={"Origin": server.url})
        form = c.get("/sign-in")
        r = c.post("/sign-in", data={"csrf": csrf_of(form.text), "token": tokens["reader"], "next": target})
        assert (r.status_code, r.headers["location"]) == (303, landing), target


def test_a_sealed_payload_shows_its_envelope_with_a_badge(server: Server, admin_db: Conn, dsn: str) -> None:
    tenant = f"dsec-sealed-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(dsn, autocommit=True) as keyed:
        keyed.execute("select set_config('jobctl.payload_keys', %s, false)", (json.dumps({tenant: "k-1"}),))
        keyed.execute("select jobctl.put_tenant(%s, encrypt_payloads => true)", (tenant,))
        row = keyed.execute(
            "select job_id from jobctl.submit_job(%s, 'q', '{\"card\": \"4111\"}')", (tenant,)
        ).fetchone()
        assert row is not None
        token = keyed.execute("select jobctl.create_api_token(%s, array['jobs:read'])", (tenant,)).fetchone()
        assert token is not None
    c = session(server, str(token[0]))
    page = c.get(f"/jobs/{row[0]}").text  # the server holds no key: the stored envelope comes back
    assert 'class="badge sealed"' in page and "$jobctl_sealed" in page and "4111" not in page


def test_a_token_that_may_cancel_may_not_delete(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    """Deleting needs jobs:delete: jobs:read with jobs:cancel cancels but has no
    delete buttons, and its bulk delete is refused by delete_jobs itself, whatever the form says."""
    mine, _ = tenants
    row = admin_db.execute(
        "select jobctl.create_api_token(%s, array['jobs:read', 'jobs:cancel'])", (mine,)
    ).fetchone()
    assert row is not None
    token = str(row[0])
    try:
        done = submit(admin_db, mine, "nodel", "{}")
        admin_db.execute("select jobctl.cancel_job(%s)", (done,))
        c = session(server, token)
        listing = c.get(f"/jobs?tenant={mine}&queue=nodel").text
        assert 'value="cancel-selected"' in listing and 'value="delete-selected"' not in listing
        csrf = csrf_of(listing)
        r = c.post("/jobs/bulk", data={"csrf": csrf, "do": "delete-selected", "job_id": str(done)})
        assert r.status_code == 403, r.text
        r = c.post(
            "/jobs/bulk/run", data={"csrf": csrf, "verb": "delete", "filter": f'{{"job_ids": [{done}]}}'}
        )
        assert r.status_code == 403, r.text
        assert admin_db.execute("select state from jobctl.job where job_id = %s", (done,)).fetchone() == (
            "cancelled",
        )
        # the operator's token (every scope) may
        op = session(server, tokens["operator"])
        ran = op.post(
            "/jobs/bulk/run",
            data={
                "csrf": csrf_of(op.get("/jobs").text),
                "verb": "delete",
                "filter": f'{{"job_ids": [{done}]}}',
            },
        )
        assert ran.status_code == 200 and "Deleted 1 job" in ran.text, ran.text
    finally:
        admin_db.execute("select jobctl.revoke_api_token(%s)", (int(token.split("_")[1]),))


def _tabs(page: str) -> set[str]:
    nav = re.search(r"<nav>(.*?)</nav>", page, re.S)
    assert nav is not None, page
    return set(re.findall(r'<a href="(/[a-z]*)"', nav.group(1)))


def test_tabs_follow_what_the_database_lets_the_token_see(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    """A tenant's token, whatever its scopes, has no Queues or Workers tab (they are
    shared by every tenant: jobctl.caller_access says so); its 403 there names what is missing, acting
    for every tenant, not queues:read, which it holds. A reader's token has the tabs of its scopes; an
    admin token every tab."""
    mine, _ = tenants
    operator = session(server, tokens["operator"])
    assert _tabs(operator.get("/jobs").text) == {"/", "/jobs", "/tenants", "/schedules"}
    for path, what in (("/queues", "the list of queues"), ("/workers", "the list of workers")):
        r = operator.get(path)
        assert r.status_code == 403
        found = re.search(r'<section class="card problem">\s*<h1>[^<]*</h1>\s*<p>([^<]*)</p>', r.text)
        assert found is not None, r.text
        text = html.unescape(found.group(1))
        assert f"{what} is shared by every tenant: only a caller acting for every tenant" in text, text
        assert (
            f"acts for tenant {mine} only" in text
            and "queues:read" not in text
            and "workers:read" not in text
        )
        assert _tabs(r.text) == {"/", "/jobs", "/tenants", "/schedules"}
    reader = session(server, tokens["reader"])
    assert _tabs(reader.get("/jobs").text) == {"/", "/jobs", "/schedules"}
    row = admin_db.execute("select jobctl.create_api_token(null, jobctl._api_scopes())").fetchone()
    assert row is not None
    try:
        admin = session(server, str(row[0]))
        assert _tabs(admin.get("/jobs").text) == {
            "/",
            "/jobs",
            "/queues",
            "/tenants",
            "/schedules",
            "/workers",
        }
        assert admin.get("/queues").status_code == 200
    finally:
        admin_db.execute("select jobctl.revoke_api_token(%s)", (int(str(row[0]).split("_")[1]),))


def test_a_jobs_page_offers_the_actions_its_state_allows(
    server: Server, tokens: dict[str, str], tenants: tuple[str, str], admin_db: Conn
) -> None:
    """The Retry and Cancel buttons are those jobctl.job_actions gives the job's state (the states
    retry_job and cancel_job act on), for a pending, a dead and a completed job."""
    mine, _ = tenants
    queue = f"acts-{uuid.uuid4().hex[:8]}"
    pending = submit(admin_db, mine, queue + "-p", "{}")
    dead, completed = submit(admin_db, mine, queue + "-d", "{}"), submit(admin_db, mine, queue + "-c", "{}")
    for job_id, end in ((dead, "fail_job(%s, %s, 'boom', false)"), (completed, "complete_job(%s, %s)")):
        row = admin_db.execute(
            "select job_id, lease_epoch from jobctl.claim_job('acts', array[%s])",
            (queue + ("-d" if job_id == dead else "-c"),),
        ).fetchone()
        assert row is not None and row[0] == job_id
        admin_db.execute("select jobctl." + end, row)
    c = session(server, tokens["operator"])
    offered = {}
    for job_id in (pending, dead, completed):
        page = c.get(f"/jobs/{job_id}").text
        offered[job_id] = {a for a in ("retry", "cancel") if f'action="/jobs/{job_id}/{a}"' in page}
    assert offered == {pending: {"cancel"}, dead: {"retry"}, completed: set()}, offered
