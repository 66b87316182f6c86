"""The HTTP API against a real server (uvicorn in a subprocess, on loopback) and the real database."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from jobctl import contract, errors
from jobctl.api import create_app, error_handlers
from psycopg.conninfo import make_conninfo

Conn = psycopg.Connection[tuple[object, ...]]
ALL_SCOPES = list(contract.SCOPES)
MakeToken = Callable[..., str]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, dsn: str, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(prefix="jobctl-api-", suffix=".log")[1])
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from jobctl.api import serve_command; serve_command()"]
                + ["--port", str(self.port), *args],
                env={**os.environ, "JOBCTL_DSN": dsn},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_up(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"server exited:\n{self.logs()}"
            try:
                httpx.get(f"{self.url}/api/v1/health", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError(f"server did not start:\n{self.logs()}")

    def logs(self) -> str:
        return self.log.read_text()

    def records(self) -> list[dict[str, Any]]:
        """The log lines, for a server started with --log-format json."""
        return [json.loads(line) for line in self.logs().splitlines() if line.startswith("{")]

    def audit(self, job_id: int) -> list[tuple[str, int, str, int]]:
        """(action, status, tenant, token_id) of every audit line about this job."""
        return [
            (r["action"], r["status"], r["tenant"], r["token_id"])
            for r in self.records()
            if r["logger"] == "jobctl.api.audit" and r["job_id"] == job_id
        ]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def app_name() -> str:
    """The server's application_name: lets a test find (and kill) this server's sessions only."""
    return f"jobctl-api-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def server(dsn: str, app_name: str) -> Iterator[Server]:
    srv = Server(make_conninfo(dsn, application_name=app_name), "--log-format", "json")
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
def token_ids() -> list[int]:
    return []


@pytest.fixture(scope="module")
def make_token(admin_db: Conn, token_ids: list[int]) -> Iterator[MakeToken]:
    """make_token(tenant or None for admin, scopes=ALL_SCOPES) -> a bearer token; all revoked at the end."""

    def make(tenant: str | None, scopes: list[str] = ALL_SCOPES) -> str:
        row = admin_db.execute("select jobctl.create_api_token(%s, %s::text[])", (tenant, scopes)).fetchone()
        assert row is not None
        token = str(row[0])
        token_ids.append(int(token.split("_")[1]))
        return token

    yield make
    for token_id in token_ids:
        admin_db.execute("select jobctl.revoke_api_token(%s)", (token_id,))


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def submit(client: httpx.Client, token: str, **job: Any) -> httpx.Response:
    job.setdefault("queue", "q")
    job.setdefault("payload", {})
    return client.post("/api/v1/jobs", json=job, headers=auth(token))


def job_id_of(response: httpx.Response) -> int:
    assert response.status_code in (200, 201), response.text
    return int(response.json()["job"]["job_id"])


def assert_error(
    r: httpx.Response, status: int, error: str, field: str | None = None, sqlstate: str | None = None
) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json", r.headers
    body = r.json()
    # every field docs/api.md documents, always present; `errors` with request validation only
    assert set(body) - {"errors"} == {"error", "message", "field", "sqlstate"}, body
    assert body["error"] == error, body
    assert body["message"] and "\n" not in body["message"], body
    assert body["field"] == field, body
    assert body["sqlstate"] == sqlstate, body


def complete_one(db: Conn, queue: str) -> int:
    row = db.execute(
        "select job_id, lease_epoch from jobctl.claim_job('api-test', array[%s])", (queue,)
    ).fetchone()
    assert row is not None
    done = db.execute("select jobctl.complete_job(%s, %s)", row).fetchone()
    assert done == (True,)
    return int(str(row[0]))


# --- operations -------------------------------------------------------------------------------------


def test_health_openapi_and_docs(client: httpx.Client) -> None:
    r = client.get("/api/v1/health")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})

    doc = client.get("/api/v1/openapi.json").json()
    paths = doc["paths"]
    assert set(paths["/api/v1/jobs"]) == {"get", "post"}
    assert set(paths["/api/v1/jobs/{id}"]) == {"get", "delete"}
    assert set(paths["/api/v1/jobs/{id}/retry"]) == {"post"}
    assert "/api/v1/health" in paths
    assert "another tenant" in paths["/api/v1/jobs/{id}"]["get"]["responses"]["404"]["description"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert paths["/api/v1/jobs"]["post"]["security"] == [{"bearer": []}]
    assert doc["components"]["schemas"]["JobSubmit"]["additionalProperties"] is False


ASSET_TYPES = {
    ".css": {"text/css"},
    ".js": {"text/javascript", "application/javascript"},
    ".png": {"image/png"},
}


def test_docs_page_loads_nothing_from_outside(client: httpx.Client) -> None:
    """The Swagger UI page names only paths of this server (no CDN: it works offline), and each of them
    answers with its asset."""
    r = client.get("/api/v1/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), r.text
    assert "://" not in r.text, r.text  # no address with a scheme, anywhere in the page
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", r.text)
    # the page's script, style sheet and icon; then the OpenAPI document the script loads
    assert len(urls) == 3, urls
    urls += re.findall(r"""url:\s*'([^']*)'""", r.text)
    assert urls[-1] == "/api/v1/openapi.json", r.text
    for url in urls:
        assert not url.startswith("//"), url  # a path of this server, not //host/...
        assert url.startswith("/api/v1/docs/assets/") or url == "/api/v1/openapi.json", url
        asset = client.get(url)
        assert asset.status_code == 200, (url, asset.text[:200])
        kind = asset.headers["content-type"].split(";")[0]
        assert kind in ASSET_TYPES.get(Path(url).suffix, {"application/json"}), (url, kind)
        assert len(asset.content) > 1000, url
    assert "SwaggerUIBundle" in client.get("/api/v1/docs/assets/swagger-ui-bundle.js").text
    assert "content-security-policy" not in r.headers  # none sent, so none to widen for local assets
    assert_error(client.get("/api/v1/docs/assets/nothing.js"), 404, "not_found")


def test_metrics(client: httpx.Client) -> None:
    client.get("/api/v1/health")
    client.get("/api/v1/jobs/1")  # 401
    client.get("/nowhere")
    text = client.get("/metrics").text
    assert 'jobctl_api_requests_total{method="GET",route="/api/v1/health",status="200"}' in text
    assert 'jobctl_api_requests_total{method="GET",route="/api/v1/jobs/{id}",status="401"}' in text
    assert 'route="<unmatched>",status="404"' in text
    assert "jobctl_api_request_duration_seconds_bucket{" in text
    for gauge in ("size", "available", "waiting"):
        assert f"jobctl_api_pool_{gauge} " in text


def test_dropped_connections_are_replaced(client: httpx.Client, admin_db: Conn, app_name: str) -> None:
    client.get("/api/v1/health")
    # the server's sessions first, then terminate exactly those (a filter beside pg_terminate_backend
    # in one WHERE may be evaluated after it, for every session)
    rows = admin_db.execute("select pid from pg_stat_activity where application_name = %s", (app_name,))
    pids = [int(str(r[0])) for r in rows.fetchall()]
    assert pids
    admin_db.execute("select pg_terminate_backend(p) from unnest(%s::int[]) as p", (pids,))
    for _ in range(3):
        assert client.get("/api/v1/health").status_code == 200


def jobctl_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "JOBCTL_DSN"}
    return subprocess.run(
        [sys.executable, "-m", "jobctl.cli", *args], env=env, capture_output=True, text=True, timeout=30
    )


def test_serve_help_and_bad_dsn() -> None:
    listed = jobctl_cli("--help")
    assert listed.returncode == 0, listed.stderr
    assert "  serve     Serve the HTTP API (/api/v1).\n" in listed.stdout  # whole, not cut off with ...
    for dsn, why in (("nonsense===", 'invalid connection option "nonsense"'), ("host='x", "unterminated")):
        run = jobctl_cli("--dsn", dsn, "serve", "--port", str(free_port()))
        assert run.returncode == 1, run.stderr
        assert run.stderr.startswith("jobctl: invalid DSN: ") and why in run.stderr, run.stderr
        assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr


def test_database_down_is_503(dsn: str, make_token: MakeToken, name: str) -> None:
    token = make_token(name)
    nowhere = make_conninfo(dsn, host="127.0.0.1", port=str(free_port()), connect_timeout="1")
    srv = Server(nowhere, "--pool-timeout", "0.3")
    try:
        srv.wait_up()
        with httpx.Client(base_url=srv.url, timeout=10) as c:
            r = c.get("/api/v1/health")
            assert (r.status_code, r.json()) == (503, {"status": "unavailable"})
            r = c.get("/api/v1/jobs", headers=auth(token))
            assert_error(r, 503, "unavailable", sqlstate="08006")  # no server sent a code of its own
            assert int(r.headers["Retry-After"]) >= 1
            # no header: 401 without touching the database, with the code it gives an unknown token
            assert_error(c.get("/api/v1/jobs"), 401, "unauthorized", sqlstate="JC020")
    finally:
        srv.stop()


def test_connection_is_released_before_the_response_is_sent(
    dsn: str, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    """An ASGI server's `send` may wait for the client (backpressure: hypercorn awaits the socket's
    drain; uvicorn buffers a body unread instead). While one answer's body waits so, its pooled
    connection must already be back: with a pool of one, another request is answered meanwhile.

    Driven in-process, as an ASGI server would, so that the first `send` can be held at will."""
    token = make_token(name, ["jobs:read"])
    rows = admin_db.execute(
        "select job_id from jobctl.submit_jobs(%s::jsonb)",
        (json.dumps([{"tenant_id": name, "queue": "q", "payload": {"i": i}} for i in range(3)]),),
    ).fetchall()
    job_id = int(str(rows[0][0]))
    app = create_app(dsn, pool_min=1, pool_max=1, pool_timeout=1)

    async def get(path: str, started: asyncio.Event, hold: asyncio.Event) -> tuple[int, Any]:
        """GET path as a client that reads the body once hold is set; started: the answer has begun."""
        status, body, requested = 0, b"", False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if requested:
                await asyncio.Event().wait()  # the client stays connected
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, body
            if message["type"] == "http.response.start":
                status = message["status"]
                started.set()
            elif message["type"] == "http.response.body":
                await hold.wait()
                body += message.get("body", b"")

        path, _, query = path.partition("?")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(b"host", b"test"), (b"authorization", f"Bearer {token}".encode())],
            "client": ("127.0.0.1", 50000),
            "server": ("test", 80),
            "state": {},
        }
        await app(scope, receive, send)
        return status, json.loads(body)

    async def scenario() -> None:
        async with app.router.lifespan_context(app):
            started, hold, now = asyncio.Event(), asyncio.Event(), asyncio.Event()
            now.set()
            slow = asyncio.create_task(get("/api/v1/jobs?limit=10", started, hold))
            await asyncio.wait_for(started.wait(), 5)  # its page is fetched; its body waits for the client
            status, out = await asyncio.wait_for(get(f"/api/v1/jobs/{job_id}", asyncio.Event(), now), 5)
            assert status == 200, out  # with the connection still lent to the slow answer: 503
            assert out["job"]["job_id"] == job_id
            assert not slow.done()
            assert app.state.pool.get_stats()["pool_available"] == 1
            hold.set()
            status, out = await asyncio.wait_for(slow, 5)
            assert (status, len(out["jobs"])) == (200, 3), out

    asyncio.run(scenario())


def test_over_limit_answer_has_retry_after(admin_db: Conn) -> None:
    # JC004/JC005 are raised by SQL once tenant quotas land, with the wait in the DETAIL as
    # `retry_after: <seconds>`; here such an error comes from the real server, raised by hand
    with pytest.raises(psycopg.Error) as raised:
        admin_db.execute(
            "do $$ begin raise exception 'tenant t is over its submit rate' using errcode = 'JC005', "
            "detail = 'retry_after: 2.5', hint = 'Slow down; try again in 9 seconds.'; end $$"
        )
    err = error_handlers.from_db(raised.value)
    assert isinstance(err, errors.OverLimit)
    r = error_handlers.error_response(err, raised.value.diag.message_detail)
    assert r.status_code == 429
    assert r.headers["Retry-After"] == "3"  # from the DETAIL, rounded up; the hint's 9 is not read
    assert json.loads(bytes(r.body))["error"] == "rate_limited"

    # only a `retry_after: N` line of the DETAIL counts; no such line: 1
    r = error_handlers.error_response(errors.OverLimit("over", sqlstate="JC004", hint="Retry in 30 seconds."))
    assert r.headers["Retry-After"] == "1"
    assert error_handlers.retry_after(None) == 1
    assert error_handlers.retry_after("wait 5 seconds") == 1
    assert error_handlers.retry_after("retry_after: 0") == 1
    assert error_handlers.retry_after("retry_after: 12") == 12
    assert error_handlers.retry_after("pending: 100\nretry_after: 0.2") == 1
    assert error_handlers.retry_after("pending: 100\nretry_after: 7.01\n") == 8


# --- authentication and tenants ---------------------------------------------------------------------


def test_missing_and_malformed_authorization(client: httpx.Client, server: Server) -> None:
    r = client.get("/api/v1/jobs")
    assert_error(r, 401, "unauthorized", sqlstate="JC020")
    assert r.headers["WWW-Authenticate"] == "Bearer"  # no credentials: no error code (RFC 6750, 3.1)
    for header in ("Basic dXNlcjpwdw==", "Bearer", "Bearer a b", "jct_1_abc"):
        r = client.get("/api/v1/jobs/1", headers={"Authorization": header})
        assert_error(r, 401, "unauthorized", sqlstate="JC020")
        assert "malformed" in r.json()["message"]
    failures = [r for r in server.records() if r["msg"].startswith("authentication failed")]
    assert failures and all(
        r["level"] == "warning" and r["path"].startswith("/api/v1/jobs") for r in failures
    )


def test_wrong_and_revoked_tokens(
    client: httpx.Client, server: Server, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    r = client.get("/api/v1/jobs", headers=auth("jct_1_" + "0" * 64))
    assert_error(r, 401, "invalid_token", sqlstate="JC020")
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]

    token = make_token(name)
    assert client.get("/api/v1/jobs", headers=auth(token)).status_code == 200
    admin_db.execute("select jobctl.revoke_api_token(%s)", (int(token.split("_")[1]),))
    assert_error(client.get("/api/v1/jobs", headers=auth(token)), 401, "invalid_token", sqlstate="JC020")
    failures = [r for r in server.records() if r["msg"].startswith("authentication failed")]
    assert failures[-1]["token_id"] == int(token.split("_")[1])
    assert token not in server.logs()


def test_duplicate_shows_the_job_only_to_readers(
    client: httpx.Client, make_token: MakeToken, server: Server, name: str
) -> None:
    submitter = make_token(name, ["jobs:submit"])
    other_submitter = make_token(name, ["jobs:submit", "jobs:cancel"])
    reader = make_token(name, ["jobs:submit", "jobs:read"])
    admin_submitter = make_token(None, ["jobs:submit"])
    fields = {"queue": f"{name}-q", "payload": {"secret": "s3"}, "dedup_key": "order-1"}
    first = submit(client, submitter, **fields)
    assert first.status_code == 201, first.text
    assert first.json()["job"]["payload"] == {"secret": "s3"}  # its own new job: in full
    job_id = job_id_of(first)

    # a submit-only token learns the first job's id, tenant and state from a dedup hit, nothing more
    for token, extra in ((submitter, {}), (other_submitter, {}), (admin_submitter, {"tenant_id": name})):
        r = submit(client, token, **fields, **extra)
        assert r.status_code == 200, r.text
        assert r.json() == {
            "job": {"job_id": job_id, "tenant_id": name, "state": "pending"},
            "duplicate": True,
        }
    # with jobs:read too: the job in full
    r = submit(client, reader, **{**fields, "payload": {}})
    assert r.status_code == 200, r.text
    assert r.json()["duplicate"] is True
    assert r.json()["job"]["job_id"] == job_id and r.json()["job"]["payload"] == {"secret": "s3"}
    assert [status for _, status, _, _ in server.audit(job_id)] == [201, 200, 200, 200, 200]

    doc = client.get("/api/v1/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert schemas["JobRef"]["required"] == ["job_id", "tenant_id", "state"]
    assert {s["$ref"] for s in schemas["Submitted"]["properties"]["job"]["anyOf"]} == {
        "#/components/schemas/Job",
        "#/components/schemas/JobRef",
    }
    assert "jobs:read" in doc["paths"]["/api/v1/jobs"]["post"]["responses"]["200"]["description"]
    assert schemas["Job"]["properties"]["state"]["enum"] == list(contract.STATES)


def test_scopes(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    reader = make_token(name, ["jobs:read"])
    writer = make_token(name, ["jobs:submit"])
    job = job_id_of(submit(client, writer))
    assert_error(submit(client, reader), 403, "insufficient_scope", sqlstate="JC021")
    assert_error(
        client.get(f"/api/v1/jobs/{job}", headers=auth(writer)), 403, "insufficient_scope", sqlstate="JC021"
    )
    assert_error(
        client.get("/api/v1/jobs", headers=auth(writer)), 403, "insufficient_scope", sqlstate="JC021"
    )
    assert_error(
        client.delete(f"/api/v1/jobs/{job}", headers=auth(reader)),
        403,
        "insufficient_scope",
        sqlstate="JC021",
    )
    r = client.post(f"/api/v1/jobs/{job}/retry", headers=auth(reader))
    assert_error(r, 403, "insufficient_scope", sqlstate="JC021")
    assert client.get(f"/api/v1/jobs/{job}", headers=auth(reader)).status_code == 200


def test_another_tenants_job_is_invisible(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    mine, theirs = make_token(f"{name}a"), make_token(f"{name}b")
    job = job_id_of(submit(client, mine))
    assert_error(client.get(f"/api/v1/jobs/{job}", headers=auth(theirs)), 404, "not_found", "id", "P0002")
    # cancel_job and retry_job answer another tenant's job as they answer an unknown id
    for r in (
        client.delete(f"/api/v1/jobs/{job}", headers=auth(theirs)),
        client.post(f"/api/v1/jobs/{job}/retry", headers=auth(theirs)),
    ):
        assert_error(r, 404, "not_found", "id", "P0002")
    assert_error(submit(client, theirs, tenant_id=f"{name}a"), 403, "forbidden", "tenant_id", "42501")
    r = client.get("/api/v1/jobs", params={"tenant": f"{name}a"}, headers=auth(theirs))
    assert_error(r, 403, "forbidden", "tenant", "42501")
    # the job is untouched, and its own tenant may name itself
    r = client.get(f"/api/v1/jobs/{job}", headers=auth(mine))
    assert r.json()["job"]["state"] == "pending"
    assert submit(client, mine, tenant_id=f"{name}a").status_code == 201
    r = client.get("/api/v1/jobs", params={"tenant": f"{name}a"}, headers=auth(mine))
    assert len(r.json()["jobs"]) == 2


def test_admin_token_spans_tenants(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    admin = make_token(None)
    job = job_id_of(submit(client, make_token(name)))
    assert client.get(f"/api/v1/jobs/{job}", headers=auth(admin)).json()["job"]["tenant_id"] == name
    r = client.get("/api/v1/jobs", params={"tenant": name}, headers=auth(admin))
    assert [j["job_id"] for j in r.json()["jobs"]] == [job]
    r = client.get("/api/v1/jobs", headers=auth(admin))
    assert_error(r, 422, "invalid_request", "tenant", "JC001")
    assert r.json()["message"] == "tenant is required with an admin token"
    assert_error(submit(client, admin), 422, "invalid_request", "tenant_id", "JC001")
    other = submit(client, admin, tenant_id=f"{name}x")
    assert other.status_code == 201 and other.json()["job"]["tenant_id"] == f"{name}x"
    r = client.delete(f"/api/v1/jobs/{job}", headers=auth(admin))
    assert r.status_code == 200 and r.json()["job"]["state"] == "cancelled"
    assert client.post(f"/api/v1/jobs/{job}/retry", headers=auth(admin)).json()["job"]["state"] == "pending"


# --- submitting -------------------------------------------------------------------------------------


def test_submit_with_every_field(
    client: httpx.Client, make_token: MakeToken, server: Server, name: str
) -> None:
    token = make_token(name)
    fields = {
        "queue": f"{name}-emails",
        "payload": {"to": "ada@example.com", "n": [1, 2.5, None, True]},
        "priority": 7,
        "run_at": "2031-05-01T09:30:00+02:00",
        "dedup_key": "welcome-ada",
        "max_attempts": 5,
        "backoff": {"strategy": "linear", "base": "10 seconds", "max": "2 minutes", "jitter": False},
        "timeout": 90.5,
    }
    r = submit(client, token, **fields)
    assert r.status_code == 201, r.text
    assert r.json()["duplicate"] is False
    job = r.json()["job"]
    assert job["tenant_id"] == name
    for key in ("queue", "payload", "priority", "dedup_key", "max_attempts"):
        assert job[key] == fields[key], key
    assert job["run_at"] == "2031-05-01T07:30:00Z"
    assert job["timeout"] == 90.5
    assert job["backoff"] == {"strategy": "linear", "base": "00:00:10", "max": "00:02:00", "jitter": False}
    assert job["state"] == "pending" and job["attempt"] == 0
    assert job["created_at"].endswith("Z") and job["finished_at"] is None

    again = submit(client, token, **{**fields, "payload": {"other": 1}})
    assert again.status_code == 200, again.text
    assert again.json()["duplicate"] is True
    assert again.json()["job"]["job_id"] == job["job_id"]
    assert again.json()["job"]["payload"] == fields["payload"]

    token_id = int(token.split("_")[1])
    assert server.audit(job["job_id"]) == [("submit", 201, name, token_id), ("submit", 200, name, token_id)]


def test_submit_defaults_come_from_sql(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    job = submit(client, make_token(name), queue="q", payload=[]).json()["job"]
    assert (job["priority"], job["max_attempts"], job["timeout"], job["payload"]) == (0, 3, None, [])
    assert (job["dedup_key"], job["backoff"], job["state"]) == (None, None, "pending")


@pytest.mark.parametrize(
    ("job", "field", "sqlstate"),
    [
        ({"colour": "red"}, "colour", "JC001"),
        ({"priority": "high"}, "priority", "JC001"),
        ({"priority": 1.5}, "priority", "JC001"),
        ({"priority": 500}, "priority", "JC001"),
        ({"priority": 2**40}, "priority", "JC001"),
        ({"max_attempts": 0}, "max_attempts", "JC001"),
        ({"run_at": "next tuesday"}, "run_at", "JC001"),
        ({"run_at": "2031-05-01T09:30:00"}, "run_at", "JC001"),  # no time zone
        ({"run_at": 1900000000}, "run_at", "JC001"),
        ({"timeout": "30"}, "timeout", "JC001"),
        ({"timeout": 0}, "timeout", "JC001"),
        ({"timeout": 10**9}, "timeout", "JC001"),
        ({"queue": ""}, "queue", "JC001"),
        ({"queue": 5}, "queue", "JC001"),
        ({"dedup_key": ""}, "dedup_key", "JC001"),
        ({"backoff": {"strategy": "random"}}, "backoff.strategy", "JC003"),
        ({"backoff": "fast"}, "backoff", "JC003"),  # refused by pydantic, with the database's code
        ({"payload": {"s": "nul \u0000"}}, None, "22P05"),  # jsonb takes no NUL
    ],
)
def test_submit_invalid(
    client: httpx.Client,
    make_token: MakeToken,
    name: str,
    job: dict[str, Any],
    field: str | None,
    sqlstate: str | None,
) -> None:
    r = submit(client, make_token(name), **job)
    code = "invalid_backoff" if sqlstate == "JC003" else "invalid_request"
    assert_error(r, 422, code, field, sqlstate)
    assert not r.json()["message"].startswith("jobs[0]")
    assert field is None or r.json()["message"].startswith(field)  # the field as the body names it
    if "errors" in r.json():  # refused before the database
        assert r.json()["errors"][0]["field"] == field


def test_submit_missing_fields_and_bad_bodies(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token = make_token(name)
    r = client.post("/api/v1/jobs", json={"queue": "q"}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "payload", "JC001")
    assert r.json()["errors"] == [{"field": "payload", "reason": "required"}]
    r = client.post("/api/v1/jobs", json={}, headers=auth(token))
    assert {e["field"] for e in r.json()["errors"]} == {"queue", "payload"}
    r = client.post(
        "/api/v1/jobs", content=b'{"queue": "q",', headers=auth(token) | {"content-type": "application/json"}
    )
    assert_error(r, 400, "invalid_json", "body", "22P02")  # the database's code for JSON that does not parse
    r = client.post("/api/v1/jobs", json=[1], headers=auth(token))
    assert_error(r, 422, "invalid_request", "body", "JC001")


def test_payload_limits(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token = make_token(name)
    r = submit(client, token, payload={"s": "x" * 70_000})
    assert_error(r, 413, "payload_too_large", "payload", "JC002")
    r = submit(client, token, payload={"s": "x" * (1024 * 1024)})
    assert_error(r, 413, "payload_too_large", "body", "JC002")
    # refused before the token is even looked at
    big = json.dumps({"queue": "q", "payload": "x" * (1024 * 1024)}).encode()
    r = client.post("/api/v1/jobs", content=big, headers={"content-type": "application/json"})
    assert_error(r, 413, "payload_too_large", "body", "JC002")
    # a chunked body (no Content-Length) is cut off once it passes the limit
    chunks = (big[i : i + 65536] for i in range(0, len(big), 65536))
    r = client.post(
        "/api/v1/jobs", content=chunks, headers=auth(token) | {"content-type": "application/json"}
    )
    assert_error(r, 413, "payload_too_large", "body", "JC002")


# --- reading, cancelling, retrying ------------------------------------------------------------------


def test_get_cancel_retry(
    client: httpx.Client, make_token: MakeToken, admin_db: Conn, server: Server, name: str
) -> None:
    token = make_token(name)
    job = job_id_of(submit(client, token, queue=f"{name}-q", payload={"k": 1}))
    r = client.get(f"/api/v1/jobs/{job}", headers=auth(token))
    assert r.status_code == 200 and r.json()["job"]["payload"] == {"k": 1}

    assert_error(
        client.post(f"/api/v1/jobs/{job}/retry", headers=auth(token)),
        409,
        "illegal_transition",
        "id",
        "JC010",
    )
    r = client.delete(f"/api/v1/jobs/{job}", headers=auth(token))
    assert r.status_code == 200, r.text
    assert r.json()["job"]["state"] == "cancelled" and r.json()["job"]["finished_at"]
    assert_error(
        client.delete(f"/api/v1/jobs/{job}", headers=auth(token)), 409, "illegal_transition", "id", "JC010"
    )
    r = client.post(f"/api/v1/jobs/{job}/retry", headers=auth(token))
    assert r.status_code == 200, r.text
    assert r.json()["job"]["state"] == "pending" and r.json()["job"]["finished_at"] is None

    done = job_id_of(submit(client, token, queue=f"{name}-done"))
    assert complete_one(admin_db, f"{name}-done") == done
    assert_error(
        client.delete(f"/api/v1/jobs/{done}", headers=auth(token)), 409, "illegal_transition", "id", "JC010"
    )
    assert_error(
        client.post(f"/api/v1/jobs/{done}/retry", headers=auth(token)),
        409,
        "illegal_transition",
        "id",
        "JC010",
    )

    token_id = int(token.split("_")[1])
    assert server.audit(job) == [
        ("submit", 201, name, token_id),
        ("retry", 409, name, token_id),
        ("cancel", 200, name, token_id),
        ("cancel", 409, name, token_id),
        ("retry", 200, name, token_id),
    ]


def test_unknown_and_malformed_ids(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token = make_token(name)
    for path in ("/api/v1/jobs/{}", "/api/v1/jobs/{}/retry"):
        method = "GET" if not path.endswith("retry") else "POST"
        # get_job answers no row, retry_job (and cancel_job) raise P0002: the same 404, P0002 both
        assert_error(
            client.request(method, path.format(2**62), headers=auth(token)), 404, "not_found", "id", "P0002"
        )
        for bad in ("abc", "0", "-3", "1.5", str(2**63)):
            r = client.request(method, path.format(bad), headers=auth(token))
            assert_error(r, 422, "invalid_request", "id", "JC001")
    assert_error(client.delete(f"/api/v1/jobs/{2**62}", headers=auth(token)), 404, "not_found", "id", "P0002")
    assert_error(
        client.delete("/api/v1/jobs/abc", headers=auth(token)), 422, "invalid_request", "id", "JC001"
    )
    assert_error(client.put("/api/v1/jobs/1", headers=auth(token)), 405, "method_not_allowed")


# --- listing ----------------------------------------------------------------------------------------


def test_pagination(client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str) -> None:
    token = make_token(name)
    jobs = [{"tenant_id": name, "queue": f"{name}-{i % 2}", "payload": {"i": i}} for i in range(25)]
    rows = admin_db.execute(
        "select job_id from jobctl.submit_jobs(%s::jsonb)", (json.dumps(jobs),)
    ).fetchall()
    ids = [int(str(r[0])) for r in rows]

    seen: list[int] = []
    pages: list[int] = []
    params: dict[str, Any] = {"limit": 10}
    while True:
        r = client.get("/api/v1/jobs", params=params, headers=auth(token))
        assert r.status_code == 200, r.text
        page = r.json()
        pages.append(len(page["jobs"]))
        seen += [j["job_id"] for j in page["jobs"]]
        if page["next"] is None:
            break
        assert page["next"] == seen[-1]
        params["before"] = page["next"]
    assert pages == [10, 10, 5]
    assert seen == sorted(ids, reverse=True)

    r = client.get("/api/v1/jobs", params={"queue": f"{name}-1", "status": "pending"}, headers=auth(token))
    assert [j["job_id"] for j in r.json()["jobs"]] == sorted(ids[1::2], reverse=True)
    assert r.json()["next"] is None
    r = client.get("/api/v1/jobs", params={"status": "completed"}, headers=auth(token))
    assert r.json() == {"jobs": [], "next": None}
    r = client.get("/api/v1/jobs", params={"limit": 25}, headers=auth(token))
    assert len(r.json()["jobs"]) == 25 and r.json()["next"] is None


def test_list_invalid(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token = make_token(name)
    r = client.get("/api/v1/jobs", params={"status": "sleeping"}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "status", sqlstate="JC001")
    # list_jobs names its parameter `state`; the client sent `status`
    assert r.json()["message"].startswith("status must be one of pending, running"), r.json()
    for limit in ("0", "1001", "ten"):
        r = client.get("/api/v1/jobs", params={"limit": limit}, headers=auth(token))
        assert_error(r, 422, "invalid_request", "limit", "JC001")
    # psycopg will not send text with a NUL: answered as the database answers a control character
    r = client.get("/api/v1/jobs", params={"queue": "nul \u0000"}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "queue", "JC001")
    assert r.json()["message"] == "queue must not contain a NUL character"
    r = client.get("/api/v1/jobs", params={"status": "nul \u0000"}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "status", "JC001")
    assert r.json()["message"] == "status must not contain a NUL character"
    assert_error(
        client.get("/api/v1/jobs", params={"before": "x"}, headers=auth(token)),
        422,
        "invalid_request",
        "before",
        "JC001",
    )


def test_fields_are_named_as_the_client_sent_them(
    client: httpx.Client, make_token: MakeToken, name: str
) -> None:
    """Each field at fault is named, in `field` and in the message, by the query parameter, path
    parameter or JSON key the request used, never by the SQL function's parameter name."""
    admin, token = make_token(None), make_token(name)
    nul = "a\u0000b"
    for path in ("/api/v1/jobs", "/api/v1/schedules"):  # list_jobs' and list_schedules' tenant_id
        r = client.get(path, params={"tenant": nul}, headers=auth(admin))
        assert_error(r, 422, "invalid_request", "tenant", "JC001")
        assert r.json()["message"] == "tenant must not contain a NUL character"
    r = client.delete("/api/v1/schedules/x", params={"tenant": nul}, headers=auth(admin))
    assert_error(r, 422, "invalid_request", "tenant", "JC001")
    # the path's {queue} and {name}; the body's keys
    r = client.post("/api/v1/queues/a%00b/pause", headers=auth(admin))
    assert_error(r, 422, "invalid_request", "queue", "JC001")
    r = client.put(
        "/api/v1/schedules/a%00b", json={"cron": "@hourly", "queue": "q", "payload": {}}, headers=auth(token)
    )
    assert_error(r, 422, "invalid_request", "name", "JC001")
    r = submit(client, token, backoff={"strategy": "random"})
    assert_error(r, 422, "invalid_backoff", "backoff.strategy", "JC003")
    assert r.json()["message"].startswith("backoff.strategy must be"), r.json()
    r = client.put(f"/api/v1/queues/{name}", json={"max_running": -1}, headers=auth(admin))
    assert_error(r, 422, "invalid_request", "max_running", "JC001")
    r = client.put("/api/v1/queues/" + "q" * 201, json={}, headers=auth(admin))
    assert_error(r, 422, "invalid_request", "queue", "JC001")  # the path parameter is {queue}
    doc = client.get("/api/v1/openapi.json").json()
    assert "/api/v1/queues/{queue}" in doc["paths"] and "/api/v1/queues/{name}" not in doc["paths"]


def test_schedules_put_list_drop(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token, other = make_token(name), make_token(f"{name}x")
    body = {"cron": "@every 15 seconds", "queue": "pings", "payload": {"p": 1}}
    r = client.put("/api/v1/schedules/ping", json=body, headers=auth(token))
    assert r.status_code == 200, r.text
    saved = r.json()["schedule"]
    assert (saved["tenant_id"], saved["priority"], saved["catch_up"], saved["skip_overlap"]) == (
        name,
        0,
        1,
        False,
    )
    r = client.put("/api/v1/schedules/ping", json=body | {"catch_up": 5}, headers=auth(token))
    assert (
        r.json()["schedule"]["catch_up"] == 5
        and r.json()["schedule"]["next_fire_at"] == saved["next_fire_at"]
    )
    listed = client.get("/api/v1/schedules", headers=auth(token)).json()["schedules"]
    assert [s["name"] for s in listed] == ["ping"]
    assert client.get("/api/v1/schedules", headers=auth(other)).json()["schedules"] == []

    bad = client.put("/api/v1/schedules/x", json=body | {"cron": "* * * * mon-"}, headers=auth(token))
    assert_error(bad, 422, "invalid_request", "cron", "JC001")
    assert "day-of-week" in bad.json()["message"]
    assert_error(
        client.put("/api/v1/schedules/x", json=body | {"tenant_id": f"{name}x"}, headers=auth(token)),
        403,
        "forbidden",
        "tenant_id",
        "42501",
    )
    reader = make_token(name, ["schedules:read"])
    r = client.delete("/api/v1/schedules/ping", headers=auth(reader))
    assert_error(r, 403, "insufficient_scope", sqlstate="JC021")
    assert client.delete("/api/v1/schedules/ping", headers=auth(token)).json() == {"dropped": True}
    r = client.delete("/api/v1/schedules/ping", headers=auth(token))
    assert_error(r, 404, "not_found", "name", "P0002")


def test_schedules_in_a_time_zone_and_their_runs(
    client: httpx.Client, make_token: MakeToken, name: str
) -> None:
    token = make_token(name)
    body = {"cron": "0 9 * * *", "queue": "reports", "payload": {}, "time_zone": "Australia/Adelaide"}
    r = client.put("/api/v1/schedules/nine", json=body, headers=auth(token))
    assert r.status_code == 200, r.text
    saved = r.json()["schedule"]
    assert saved["time_zone"] == "Australia/Adelaide"
    assert client.get("/api/v1/schedules", headers=auth(token)).json()["schedules"][0]["time_zone"] == (
        "Australia/Adelaide"
    )
    bad = client.put("/api/v1/schedules/x", json=body | {"time_zone": "Mars/Olympus"}, headers=auth(token))
    assert_error(bad, 422, "invalid_request", "time_zone", "JC001")

    job_ids = [
        client.post("/api/v1/schedules/nine/run", headers=auth(token)).json()["job_id"] for _ in range(3)
    ]
    r = client.get("/api/v1/schedules/nine/runs", params={"limit": 2}, headers=auth(token))
    assert r.status_code == 200, r.text
    page = r.json()
    assert [x["job_id"] for x in page["runs"]] == job_ids[:0:-1] and page["next"] == job_ids[1]
    assert page["runs"][0]["state"] == "pending" and page["runs"][0]["fire_time"]
    r = client.get("/api/v1/schedules/nine/runs", params={"before": page["next"]}, headers=auth(token))
    assert [x["job_id"] for x in r.json()["runs"]] == [job_ids[0]] and r.json()["next"] is None
    job = client.get(f"/api/v1/jobs/{job_ids[0]}", headers=auth(token)).json()["job"]
    assert job["schedule_name"] == "nine" and job["fire_time"] == r.json()["runs"][0]["fire_time"]
    r = client.get("/api/v1/schedules/nine/runs", params={"limit": 0}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "limit", "JC001")
    other = make_token(f"{name}x")
    r = client.get("/api/v1/schedules/nine/runs", params={"tenant": name}, headers=auth(other))
    assert_error(r, 403, "forbidden", "tenant", "42501")
    sched_only = make_token(name, ["schedules:read"])
    assert client.get("/api/v1/schedules/nine/runs", headers=auth(sched_only)).status_code == 403


def test_queues_put_pause_resume_and_list_with_an_admin_token_only(
    client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    admin, tenant = make_token(None), make_token(name)
    queue = name + "_q"
    r = client.put(f"/api/v1/queues/{queue}", json={"max_running": 5, "claim_rate": 20}, headers=auth(admin))
    assert r.status_code == 200, r.text
    assert r.json()["queue"] | {"updated_at": None} == {
        "queue": queue, "paused": False, "max_running": 5, "claim_rate": 20.0, "claim_burst": None,
        "due": 0, "running": 0, "updated_at": None,
    }  # fmt: skip
    r = client.post(f"/api/v1/queues/{queue}/pause", headers=auth(admin))
    assert r.status_code == 200 and r.json()["queue"]["paused"] is True
    assert submit(client, tenant, queue=queue, payload={}).status_code == 201  # submits go on
    assert admin_db.execute("select count(*) from jobctl.claim_job('w', array[%s])", (queue,)).fetchone() == (
        0,
    )
    r = client.get("/api/v1/queues", headers=auth(admin))
    mine = [q for q in r.json()["queues"] if q["queue"] == queue]
    assert mine and mine[0]["paused"] is True and mine[0]["due"] == 1
    r = client.post(f"/api/v1/queues/{queue}/resume", headers=auth(admin))
    assert r.status_code == 200 and r.json()["queue"]["paused"] is False
    assert admin_db.execute("select count(*) from jobctl.claim_job('w', array[%s])", (queue,)).fetchone() == (
        1,
    )
    # bad input and a tenant's token
    r = client.put(f"/api/v1/queues/{queue}", json={"max_running": -1}, headers=auth(admin))
    assert r.status_code == 422 and r.json()["field"] == "max_running", r.text
    r = client.put(f"/api/v1/queues/{queue}", json={"claim_burst": 3}, headers=auth(admin))
    assert r.status_code == 422 and r.json()["sqlstate"] == "JC001", r.text
    for r in (
        client.post(f"/api/v1/queues/{queue}/pause", headers=auth(tenant)),
        client.get("/api/v1/queues", headers=auth(tenant)),
    ):
        assert r.status_code == 403 and r.json()["sqlstate"] == "42501", r.text
    assert admin_db.execute("select paused from jobctl.queue where queue = %s", (queue,)).fetchone() == (
        False,
    )


def test_names_with_a_slash_reach_their_routes(
    client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    """A schedule, tenant or queue name holding "/" answered 404 on its path
    routes. Names are path segments that may hold "/" ({...:path}); the routes with an action after
    the name are tried first (docs/api.md)."""
    tenant = f"{name}/eu"
    admin_db.execute("select jobctl.put_tenant(%s)", (tenant,))
    token, admin = make_token(tenant), make_token(None)
    body = {"cron": "@every 15 seconds", "queue": "team/pings", "payload": {}}
    r = client.put("/api/v1/schedules/team/nightly", json=body, headers=auth(token))
    assert r.status_code == 200 and r.json()["schedule"]["name"] == "team/nightly", r.text
    r = client.post("/api/v1/schedules/team/nightly/pause", headers=auth(token))
    assert r.status_code == 200 and r.json()["schedule"]["paused"] is True, r.text
    r = client.get("/api/v1/schedules/team/nightly/runs", headers=auth(token))
    assert r.status_code == 200, r.text
    r = client.get(f"/api/v1/tenants/{tenant}", headers=auth(token))
    assert r.status_code == 200 and r.json()["tenant"]["tenant_id"] == tenant, r.text
    r = client.get(f"/api/v1/tenants/{tenant}/tokens", headers=auth(token))
    assert r.status_code == 200 and "tokens" in r.json(), r.text
    r = client.post(f"/api/v1/tenants/{tenant}/pause", headers=auth(token))
    assert r.status_code == 200 and r.json()["tenant"]["paused"] is True, r.text
    r = client.put("/api/v1/queues/team/pings", json={"max_running": 5}, headers=auth(admin))
    assert r.status_code == 200 and r.json()["queue"]["queue"] == "team/pings", r.text
    r = client.post("/api/v1/queues/team/pings/pause", headers=auth(admin))
    assert r.status_code == 200 and r.json()["queue"]["paused"] is True, r.text
    assert client.delete("/api/v1/schedules/team/nightly", headers=auth(token)).json() == {"dropped": True}
    admin_db.execute("delete from jobctl.queue where queue = 'team/pings'")
