"""The tenant administration, worker, audit, health and schedule-control endpoints against a real
server logged in as a member of jobctl_api (so the grants of sql/grants.sql are what is tested, not a
superuser's), with tokens of two tenants and admin tokens."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from test_api import Server, auth

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture(scope="module")
def db(dsn: str) -> Iterator[Conn]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture(scope="module")
def prefix() -> str:
    return "adm" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def api_login(db: Conn, prefix: str) -> Iterator[str]:
    """A login role that is a member of jobctl_api only, as a deployment's API login is."""
    role = f"{prefix}_api"
    db.execute(f'create role "{role}" login')
    db.execute(f'grant jobctl_api to "{role}"')
    yield role
    db.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (role,))
    db.execute(f'drop role "{role}"')


@pytest.fixture(scope="module")
def server(dsn: str, api_login: str) -> Iterator[Server]:
    srv = Server(make_conninfo(dsn, user=api_login, application_name=f"{api_login}-server"))
    try:
        srv.wait_up()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def tenants(db: Conn, prefix: str) -> tuple[str, str]:
    a, b = f"{prefix}a", f"{prefix}b"
    for t in (a, b):
        db.execute("select jobctl.put_tenant(%s)", (t,))
    return a, b


@pytest.fixture(scope="module")
def made(db: Conn) -> Iterator[list[int]]:
    ids: list[int] = []
    yield ids
    for token_id in ids:
        db.execute("select jobctl.revoke_api_token(%s)", (token_id,))


def token(db: Conn, made: list[int], tenant: str | None, *scopes: str, label: str = "admin-api") -> str:
    row = db.execute(
        "select jobctl.create_api_token(%s, %s::text[], %s)", (tenant, list(scopes), label)
    ).fetchone()
    assert row is not None
    secret = str(row[0])
    made.append(int(secret.split("_")[1]))
    return secret


def token_id(secret: str) -> int:
    return int(secret.split("_")[1])


def refused(r: httpx.Response, status: int, sqlstate: str | None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert set(body) >= {"error", "message", "field", "sqlstate"}
    assert body["sqlstate"] == sqlstate, body
    return body


def test_a_tenant_token_reads_and_pauses_its_own_tenant_only(
    client: httpx.Client, db: Conn, made: list[int], tenants: tuple[str, str]
) -> None:
    a, b = tenants
    mine = auth(token(db, made, a, "tenants:read", "tenants:write"))
    r = client.get("/api/v1/tenants", headers=mine)
    assert r.status_code == 200, r.text
    assert [t["tenant_id"] for t in r.json()["tenants"]] == [a]
    r = client.get(f"/api/v1/tenants/{a}", headers=mine)
    assert r.status_code == 200 and r.json()["tenant"]["paused"] is False
    refused(client.get(f"/api/v1/tenants/{b}", headers=mine), 403, "42501")

    r = client.post(f"/api/v1/tenants/{a}/pause", headers=mine)
    assert r.status_code == 200 and r.json()["tenant"]["paused"] is True, r.text
    paused = db.execute("select paused from jobctl.tenant where tenant_id = %s", (a,)).fetchone()
    assert paused == (True,)
    # the tenant may stop itself, but only an operator lifts a pause (it may be the operator's)
    refused(client.post(f"/api/v1/tenants/{a}/resume", headers=mine), 403, "42501")
    operator = auth(token(db, made, None, "tenants:write"))
    r = client.post(f"/api/v1/tenants/{a}/resume", headers=operator)
    assert r.status_code == 200 and r.json()["tenant"]["paused"] is False
    body = refused(client.post(f"/api/v1/tenants/{b}/pause", headers=mine), 403, "42501")
    assert body["field"] == "tenant"
    assert db.execute("select paused from jobctl.tenant where tenant_id = %s", (b,)).fetchone() == (False,)

    # tenants:read alone may not pause; no tenants scope at all may not read
    reader = auth(token(db, made, a, "tenants:read"))
    refused(client.post(f"/api/v1/tenants/{a}/pause", headers=reader), 403, "JC021")
    jobs_only = auth(token(db, made, a, "jobs:read"))
    refused(client.get("/api/v1/tenants", headers=jobs_only), 403, "JC021")


def test_tokens_and_grants_of_a_tenant_never_show_a_secret(
    client: httpx.Client, db: Conn, made: list[int], tenants: tuple[str, str], prefix: str
) -> None:
    a, b = tenants
    mine = token(db, made, a, "tenants:read", label="mine")
    token(db, made, b, "jobs:read", label="theirs")
    admin = token(db, made, None, "tenants:read", label="admin")
    r = client.get(f"/api/v1/tenants/{a}/tokens", headers=auth(mine))
    assert r.status_code == 200, r.text
    tokens = r.json()["tokens"]
    assert token_id(mine) in [t["token_id"] for t in tokens]
    assert {t["tenant_id"] for t in tokens} == {a}
    assert not re.search(r"jct_\d+_[0-9a-f]{64}", r.text)
    assert set(tokens[0]) == {"token_id", "tenant_id", "scopes", "label", "created_at", "revoked_at"}
    refused(client.get(f"/api/v1/tenants/{b}/tokens", headers=auth(mine)), 403, "42501")
    # an admin token lists any tenant's
    r = client.get(f"/api/v1/tenants/{b}/tokens", headers=auth(admin))
    assert r.status_code == 200 and {t["label"] for t in r.json()["tokens"]} == {"theirs"}

    role = f"{prefix}_svc"
    db.execute(f'create role "{role}"')
    try:
        db.execute("select jobctl.grant_tenant(%s, %s)", (role, a))
        db.execute("select jobctl.grant_tenant(%s, %s)", (role, b))
        r = client.get(f"/api/v1/tenants/{a}/grants", headers=auth(mine))
        assert r.status_code == 200, r.text
        assert [(g["role_name"], g["tenant_id"]) for g in r.json()["grants"]] == [(role, a)]
        refused(client.get(f"/api/v1/tenants/{b}/grants", headers=auth(mine)), 403, "42501")
    finally:
        db.execute("delete from jobctl._role_tenant where role_oid = %s::regrole", (role,))
        db.execute(f'drop role "{role}"')


def test_an_admin_token_sees_every_tenant_and_unknown_ones_are_404(
    client: httpx.Client, db: Conn, made: list[int], tenants: tuple[str, str], prefix: str
) -> None:
    admin = auth(token(db, made, None, "tenants:read", "tenants:write"))
    r = client.get("/api/v1/tenants", headers=admin)
    assert r.status_code == 200
    assert set(tenants) <= {t["tenant_id"] for t in r.json()["tenants"]}
    refused(client.get(f"/api/v1/tenants/{prefix}nobody", headers=admin), 404, "P0002")
    body = refused(client.post(f"/api/v1/tenants/{prefix}nobody/pause", headers=admin), 404, "P0002")
    assert body["field"] == "tenant"


def test_workers_are_listed_for_admin_tokens_only(
    client: httpx.Client, db: Conn, made: list[int], tenants: tuple[str, str], prefix: str
) -> None:
    worker = f"{prefix}-w1"
    db.execute("select jobctl.worker_beat(%s, 'host-1', 42, array['q1'], 8, 3)", (worker,))
    try:
        admin = auth(token(db, made, None, "workers:read"))
        r = client.get("/api/v1/workers", headers=admin)
        assert r.status_code == 200, r.text
        [w] = [w for w in r.json()["workers"] if w["worker_id"] == worker]
        shown = (w["host"], w["pid"], w["queues"], w["concurrency"], w["in_flight"], w["alive"], w["running"])
        assert shown == ("host-1", 42, ["q1"], 8, 3, True, 0)
        db.execute(
            "update jobctl._worker set last_seen_at = now() - interval '2 minutes' where worker_id = %s",
            (worker,),
        )
        r = client.get("/api/v1/workers", params={"stale": 300}, headers=admin)
        assert [w["alive"] for w in r.json()["workers"] if w["worker_id"] == worker] == [True]
        r = client.get("/api/v1/workers", headers=admin)
        assert [w["alive"] for w in r.json()["workers"] if w["worker_id"] == worker] == [False]
        refused(client.get("/api/v1/workers", params={"stale": 0}, headers=admin), 422, "JC001")
        tenant_token = auth(token(db, made, tenants[0], "workers:read"))
        refused(client.get("/api/v1/workers", headers=tenant_token), 403, "42501")
    finally:
        db.execute("select jobctl.worker_gone(%s)", (worker,))


def test_audit_log_pages_and_tenants(
    client: httpx.Client, db: Conn, made: list[int], tenants: tuple[str, str], prefix: str
) -> None:
    a, b = tenants
    writer = token(db, made, None, "tenants:write")  # an operator's: a tenant may not resume itself
    reader = auth(token(db, made, a, "audit:read"))  # (made first: a token's creation is audited too)
    for _ in range(3):
        assert client.post(f"/api/v1/tenants/{a}/pause", headers=auth(writer)).status_code == 200
        assert client.post(f"/api/v1/tenants/{a}/resume", headers=auth(writer)).status_code == 200
    db.execute("select jobctl.pause_queue(%s)", (f"{prefix}q",))  # an entry with no tenant
    r = client.get("/api/v1/audit", params={"limit": 4}, headers=reader)
    assert r.status_code == 200, r.text
    page = r.json()
    assert len(page["entries"]) == 4 and page["next"] == page["entries"][-1]["audit_id"]
    ids = [e["audit_id"] for e in page["entries"]]
    assert ids == sorted(ids, reverse=True)
    first = page["entries"][0]
    assert (first["action"], first["tenant_id"], first["token_id"]) == ("pause_tenant", a, token_id(writer))
    assert first["detail"] == {"paused": False}
    # follow the pages to the end: the tenant's entries only, none twice
    seen, before = ids, page["next"]
    while before is not None:
        r = client.get("/api/v1/audit", params={"limit": 4, "before": before}, headers=reader)
        page = r.json()
        seen += [e["audit_id"] for e in page["entries"]]
        assert {e["tenant_id"] for e in page["entries"]} <= {a}
        before = page["next"]
    assert len(seen) == len(set(seen)) >= 7  # put_tenant, three pauses and three resumes (and tokens)
    refused(client.get("/api/v1/audit", params={"tenant": b}, headers=reader), 403, "42501")
    refused(client.get("/api/v1/audit", params={"limit": 0}, headers=reader), 422, "JC001")
    refused(client.get("/api/v1/audit", params={"limit": 1001}, headers=reader), 422, "JC001")
    admin = auth(token(db, made, None, "audit:read"))
    r = client.get("/api/v1/audit", params={"limit": 1000}, headers=admin)
    assert any(
        e["action"] == "pause_queue" and e["tenant_id"] is None and e["detail"]["queue"] == f"{prefix}q"
        for e in r.json()["entries"]
    )
    r = client.get("/api/v1/audit", params={"tenant": a, "limit": 1000}, headers=admin)
    assert {e["tenant_id"] for e in r.json()["entries"]} == {a}


def test_health_checks_for_admin_tokens_only(
    client: httpx.Client, db: Conn, made: list[int], tenants: tuple[str, str]
) -> None:
    admin = auth(token(db, made, None, "tenants:read"))
    r = client.get("/api/v1/health/checks", headers=admin)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["verdict"] in ("ok", "warn", "fail") and body["checks"]
    assert "reaper lag" in {c["check_name"] for c in body["checks"]}
    refused(
        client.get("/api/v1/health/checks", headers=auth(token(db, made, tenants[0], "tenants:read"))),
        403,
        "42501",
    )
    refused(client.get("/api/v1/health/checks"), 401, "JC020")
    assert client.get("/api/v1/health").json() == {"status": "ok"}  # the probe needs no token still


def test_schedules_pause_resume_and_run(
    client: httpx.Client, db: Conn, made: list[int], tenants: tuple[str, str]
) -> None:
    a, b = tenants
    mine = auth(token(db, made, a, "schedules:write"))
    body = {"cron": "@every 1 hour", "queue": "reports", "payload": {"r": 1}, "priority": 3}
    r = client.put("/api/v1/schedules/hourly", json=body, headers=mine)
    assert r.status_code == 200 and r.json()["schedule"]["paused"] is False, r.text
    r = client.post("/api/v1/schedules/hourly/pause", headers=mine)
    assert r.status_code == 200 and r.json()["schedule"]["paused"] is True, r.text

    r = client.post("/api/v1/schedules/hourly/run", headers=mine)
    assert r.status_code == 200, r.text
    ran = r.json()
    assert ran["schedule"]["last_job_id"] == ran["job_id"] and ran["schedule"]["paused"] is True
    row = db.execute(
        "select tenant_id, queue, payload, priority, state from jobctl.job where job_id = %s",
        (ran["job_id"],),
    ).fetchone()
    assert row == (a, "reports", {"r": 1}, 3, "pending")

    db.execute(
        "update jobctl.schedule set next_fire_at = now() - interval '5 hours'"
        " where tenant_id = %s and name = 'hourly'",
        (a,),
    )
    r = client.post("/api/v1/schedules/hourly/resume", headers=mine)
    assert r.status_code == 200, r.text
    resumed = r.json()["schedule"]
    assert resumed["paused"] is False
    now = db.execute("select now()").fetchone()
    assert now is not None
    assert datetime.fromisoformat(resumed["next_fire_at"]) > now[0]  # from now on: none of the 5 missed runs

    refused(client.post("/api/v1/schedules/nope/pause", headers=mine), 404, "P0002")
    refused(client.post("/api/v1/schedules/nope/run", headers=mine), 404, "P0002")
    theirs = auth(token(db, made, b, "schedules:write"))
    refused(client.post("/api/v1/schedules/hourly/pause", params={"tenant": a}, headers=theirs), 403, "42501")
    refused(
        client.post("/api/v1/schedules/hourly/run", headers=auth(token(db, made, a, "schedules:read"))),
        403,
        "JC021",
    )
    assert client.delete("/api/v1/schedules/hourly", headers=mine).status_code == 200


def test_openapi_lists_the_new_endpoints(client: httpx.Client) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    for path in (
        "/api/v1/tenants",
        "/api/v1/tenants/{tenant}",
        "/api/v1/tenants/{tenant}/pause",
        "/api/v1/tenants/{tenant}/resume",
        "/api/v1/tenants/{tenant}/tokens",
        "/api/v1/tenants/{tenant}/grants",
        "/api/v1/workers",
        "/api/v1/audit",
        "/api/v1/health/checks",
        "/api/v1/schedules/{name}/pause",
        "/api/v1/schedules/{name}/resume",
        "/api/v1/schedules/{name}/run",
    ):
        assert path in paths, path
