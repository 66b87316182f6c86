"""The HTTP API against hostile clients: real `jobctl serve` processes on loopback, real
sockets, the real database. Held locks and slow statements answer 503 within the API's timeouts;
made-up methods and paths cannot grow /metrics; slowloris sockets are closed within the head
timeout while the API keeps answering; one tenant's burst of lists is capped (429) while another
tenant's reads go on; a body nested too deeply answers one 422 at every depth."""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest
from jobctl.api import create_app
from psycopg.conninfo import make_conninfo
from test_api import ALL_SCOPES, Server, auth

Conn = psycopg.Connection[tuple[object, ...]]
MakeToken = Callable[..., str]


@pytest.fixture(scope="module")
def admin_db(dsn: str) -> Iterator[Conn]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture(scope="module")
def make_token(admin_db: Conn) -> Iterator[MakeToken]:
    """make_token(tenant or None for admin) -> a bearer token with every scope; revoked at the end."""
    made: list[int] = []

    def make(tenant: str | None) -> str:
        row = admin_db.execute(
            "select jobctl.create_api_token(%s, %s::text[])", (tenant, ALL_SCOPES)
        ).fetchone()
        assert row is not None
        made.append(int(str(row[0]).split("_")[1]))
        return str(row[0])

    yield make
    for token_id in made:
        admin_db.execute("select jobctl.revoke_api_token(%s)", (token_id,))


def serve(dsn: str, *args: str) -> Server:
    srv = Server(dsn, *args)
    try:
        srv.wait_up()
    except BaseException:
        srv.stop()
        raise
    return srv


def submit(client: httpx.Client, token: str, **job: Any) -> httpx.Response:
    job.setdefault("queue", "q")
    job.setdefault("payload", {})
    return client.post("/api/v1/jobs", json=job, headers=auth(token))


# --- 1. statement_timeout and lock_timeout --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "bound", "sqlstate"),
    [
        ((), 1.0, "55P03"),  # the defaults: lock_timeout 1 s
        (
            ("--lock-timeout", "0", "--statement-timeout", "0.5"),
            0.5,
            "57014",
        ),  # no lock bound: the statement's
    ],
    ids=["lock_timeout", "statement_timeout"],
)
def test_a_held_lock_answers_503_within_the_timeout(
    dsn: str, make_token: MakeToken, name: str, args: tuple[str, ...], bound: float, sqlstate: str
) -> None:
    """A second session holds the job's row lock for 8 s (a row of the test's own job, not a table
    other tests use); cancelling the job must wait for it, and answers 503 after the bound, not
    after the hold."""
    srv = serve(dsn, *args)
    hold = 8.0
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c, psycopg.connect(dsn) as holder:
            token = make_token(name)
            job_id = submit(c, token).json()["job"]["job_id"]
            holder.execute("select 1 from jobctl.job where job_id = %s for update", (job_id,))
            start = time.monotonic()
            r = c.delete(f"/api/v1/jobs/{job_id}", headers=auth(token))
            took = time.monotonic() - start
            print(
                f"\n{sqlstate}: bound {bound} s, answered {r.status_code} in {took:.2f} s "
                f"(lock held {hold} s)"
            )
            assert r.status_code == 503, r.text
            assert r.json() == {
                "error": "busy",
                "message": r.json()["message"],
                "field": None,
                "sqlstate": sqlstate,
            }
            assert "try again" in r.json()["message"]
            assert int(r.headers["Retry-After"]) >= 1
            assert bound <= took < bound + 1.5 < hold
            holder.rollback()  # the lock is gone: the same request goes through
            assert c.delete(f"/api/v1/jobs/{job_id}", headers=auth(token)).status_code == 200
        assert "Traceback" not in srv.logs()
    finally:
        srv.stop()


def test_the_timeouts_are_settings_of_every_pooled_session(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's own pool, in-process: its sessions start with the timeouts (libpq options), beside
    the DSN's options and JOBCTL_PAYLOAD_KEYS."""
    monkeypatch.setenv("JOBCTL_PAYLOAD_KEYS", json.dumps({"some tenant": "k 1"}))
    conninfo = make_conninfo(dsn, options="-c work_mem=8MB")

    async def settings() -> tuple[Any, ...] | None:
        app = create_app(conninfo, statement_timeout=2.5, lock_timeout=0.25)
        async with app.router.lifespan_context(app), app.state.pool.connection() as conn:
            cur = await conn.execute(
                "select current_setting('statement_timeout'), current_setting('lock_timeout'), "
                "current_setting('work_mem'), current_setting('jobctl.payload_keys')"
            )
            return await cur.fetchone()

    assert asyncio.run(settings()) == ("2500ms", "250ms", "8MB", '{"some tenant":"k 1"}')


# --- 2. /metrics label values are bounded ---------------------------------------------------------


def series(text: str) -> set[str]:
    """The metric series of a Prometheus text page: each sample's name and labels, without its value."""
    return {line.rsplit(" ", 1)[0] for line in text.splitlines() if line and not line.startswith("#")}


def test_made_up_methods_and_paths_do_not_grow_metrics(dsn: str) -> None:
    srv = serve(dsn)
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            paths = ["/api/v1/health", "/api/v1/jobs", "/api/v1/jobs/1", "/nowhere"]
            for path in paths:  # the series a made-up method can ever make: one per route and status
                c.request("BREW", path)
                c.request("BREW", f"{path}/{uuid.uuid4().hex}")
            c.get("/metrics")  # its own series, counted from the second scrape on
            before = c.get("/metrics").text
            for i in range(1000):
                method = ("M" * 8192) if i % 50 == 0 else f"X-{uuid.uuid4().hex}"  # 20 of 8 KB
                path = paths[i % 4] if i % 2 else f"/{uuid.uuid4().hex}/{i}"
                assert c.request(method, path).status_code in (401, 404, 405), (method[:20], path)
            after = c.get("/metrics").text
        print(
            f"\n/metrics: {len(before)} -> {len(after)} bytes, {len(series(before))} -> {len(series(after))} "
            "series after 1,000 requests with distinct made-up methods (20 of 8 KB) and paths"
        )
        assert series(after) == series(before)
        assert len(after) - len(before) < 1000  # only counts grew, by a few digits
        assert 'method="other",route="/api/v1/health",status="405"' in after
        assert 'method="other",route="<unmatched>",status="404"' in after
        assert "X-" not in after and "MMMM" not in after
    finally:
        srv.stop()


# --- 3. slowloris: a request head must arrive within the head timeout -----------------------------

# 200 keep the test short; SLOW_SOCKETS=500 for the run docs/api.md reports
SLOW_SOCKETS = int(os.environ.get("SLOW_SOCKETS", "200"))


def test_slowloris_sockets_are_closed_and_the_api_keeps_answering(dsn: str) -> None:
    """200 sockets: a quarter send nothing, a quarter a request line a byte at a time, a quarter
    whole headers but the blank line, a quarter finish one request then trickle the next. Each must
    be closed by the server within the head timeout (2 s here) of its last response or opening,
    while /api/v1/health answers throughout."""
    head_timeout = 2.0
    srv = serve(dsn, "--header-timeout", str(head_timeout))
    request_line = b"GET /api/v1/health HTTP/1.1\r\n"
    headers = b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\n"
    whole = b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
    sel = selectors.DefaultSelector()
    # a new connection for each probe, as a load balancer's health check makes
    probe = httpx.Client(base_url=srv.url, timeout=5, headers={"Connection": "close"})
    socks: list[dict[str, Any]] = []
    try:
        start = time.monotonic()
        for i in range(SLOW_SOCKETS):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.setblocking(False)
            kind = ("silent", "line", "headers", "keepalive")[i % 4]
            sock = {"s": s, "kind": kind, "opened": time.monotonic(), "sent": 0, "data": b"", "closed": None}
            if kind == "headers":
                s.sendall(headers)
            elif kind == "keepalive":
                s.sendall(whole)
            socks.append(sock)
            sel.register(s, selectors.EVENT_READ, sock)
        opened = time.monotonic() - start
        health: list[float] = []
        trickled = time.monotonic()
        deadline = time.monotonic() + head_timeout + 4
        while time.monotonic() < deadline and any(k["closed"] is None for k in socks):
            for key, _ in sel.select(timeout=0.05):
                sock = key.data
                try:
                    chunk = sock["s"].recv(65536)
                except (ConnectionResetError, BlockingIOError):
                    chunk = b""
                sock["data"] += chunk
                if not chunk:
                    sock["closed"] = time.monotonic()
                    sel.unregister(sock["s"])
                elif sock["kind"] == "keepalive" and b"\r\n\r\n" in sock["data"] and "answered" not in sock:
                    sock["answered"] = time.monotonic()  # then the next request, never finished
                    sock["s"].sendall(b"GET /api/v1/he")
            if time.monotonic() - trickled > 0.25:  # one more byte of the request line each
                trickled = time.monotonic()
                for sock in socks:
                    if (
                        sock["kind"] == "line"
                        and sock["closed"] is None
                        and sock["sent"] < len(request_line) - 1
                    ):
                        try:
                            sock["s"].send(request_line[sock["sent"] : sock["sent"] + 1])
                            sock["sent"] += 1
                        except OSError:
                            pass
                t = time.monotonic()
                r = probe.get("/api/v1/health")
                health.append(time.monotonic() - t)
                assert r.status_code == 200, r.text
        open_left = [k for k in socks if k["closed"] is None]
        assert not open_left, f"{len(open_left)} sockets still open: {sorted({k['kind'] for k in open_left})}"
        held = {
            kind: max(k["closed"] - k.get("answered", k["opened"]) for k in socks if k["kind"] == kind)
            for kind in ("silent", "line", "headers", "keepalive")
        }
        print(
            f"\n{SLOW_SOCKETS} slow sockets (opened in {opened:.2f} s), head timeout {head_timeout} s: "
            + ", ".join(f"{kind} closed after at most {s:.2f} s" for kind, s in held.items())
            + f"; /api/v1/health meanwhile: {len(health)} answers, "
            f"median {statistics.median(health) * 1000:.1f} ms, "
            f"max {max(health) * 1000:.1f} ms"
        )
        for kind, s in held.items():
            assert head_timeout - 0.1 <= s < head_timeout + 1.5, (kind, s)
        assert len(health) >= 4 and max(health) < 1.0
        for k in socks:  # a client that began a request is told why; a silent one is just closed
            if k["kind"] == "silent":
                assert k["data"] == b""
            else:  # the 408 in the API's error shape, then the close
                answer = k["data"][k["data"].rindex(b"HTTP/1.1 408 Request Timeout\r\n") :]
                head, _, content = answer.partition(b"\r\n\r\n")
                assert b"\r\ncontent-type: application/json\r\n" in head, answer
                assert b"\r\nconnection: close" in head, answer
                assert json.loads(content) == {
                    "error": "request_timeout",
                    "message": "the request head was not received in time; the connection is closed",
                    "field": None,
                    "sqlstate": None,
                }
        assert "Traceback" not in srv.logs()
    finally:
        for k in socks:
            k["s"].close()
        sel.close()
        probe.close()
        srv.stop()


# --- 4. a per-tenant cap on concurrent lists ------------------------------------------------------


def test_one_tenants_list_burst_is_capped_while_another_tenant_reads(
    dsn: str, admin_db: Conn, make_token: MakeToken, name: str
) -> None:
    """Tenant A: 3,000 jobs, and 16 concurrent lists of 1,000 of them (filtered by state and queue),
    three rounds; the cap (4) answers the excess 429. Tenant B's GETs meanwhile answer 200."""
    srv = serve(dsn, "--pool-size", "20", "--list-concurrency", "4")
    tenant_a, tenant_b = f"{name}-a", f"{name}-b"
    admin_db.execute(
        "select jobctl.submit_jobs((select jsonb_agg(jsonb_build_object("
        "'tenant_id', %s::text, 'queue', %s::text, "
        "'payload', jsonb_build_object('i', i, 'pad', repeat('x', 200)))) "
        "from generate_series(1, 3000) as i))",
        (tenant_a, f"{name}-q"),
    )
    token_a, token_b = make_token(tenant_a), make_token(tenant_b)
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            job_b = submit(c, token_b, queue=f"{name}-q").json()["job"]["job_id"]
            baseline = []
            for _ in range(20):
                t = time.monotonic()
                assert c.get(f"/api/v1/jobs/{job_b}", headers=auth(token_b)).status_code == 200
                baseline.append(time.monotonic() - t)

        statuses: list[int] = []
        refusals: list[httpx.Response] = []
        b_latency: list[float] = []
        storm = threading.Event()

        def list_a(barrier: threading.Barrier) -> None:
            with httpx.Client(base_url=srv.url, timeout=30) as own:
                barrier.wait()
                r = own.get(
                    "/api/v1/jobs",
                    params={"status": "pending", "queue": f"{name}-q", "limit": 1000},
                    headers=auth(token_a),
                )
            statuses.append(r.status_code)
            if r.status_code == 429:
                refusals.append(r)
            else:
                assert r.status_code == 200 and len(r.json()["jobs"]) == 1000, r.text[:200]

        def read_b() -> None:
            with httpx.Client(base_url=srv.url, timeout=30) as own:
                while not storm.is_set():
                    t = time.monotonic()
                    r = own.get(f"/api/v1/jobs/{job_b}", headers=auth(token_b))
                    b_latency.append(time.monotonic() - t)
                    assert r.status_code == 200, r.text

        with ThreadPoolExecutor(17) as pool:
            reader = pool.submit(read_b)
            for _ in range(3):
                barrier = threading.Barrier(16)
                for f in [pool.submit(list_a, barrier) for _ in range(16)]:
                    f.result()
            storm.set()
            reader.result()
        print(
            f"\n48 lists of tenant A (16 at once, 3 rounds, cap 4): {statuses.count(200)} x 200, "
            f"{statuses.count(429)} x 429; tenant B's GET: baseline median "
            f"{statistics.median(baseline) * 1000:.1f} ms, during the bursts median "
            f"{statistics.median(b_latency) * 1000:.1f} ms, max {max(b_latency) * 1000:.1f} ms "
            f"({len(b_latency)} GETs)"
        )
        assert set(statuses) == {200, 429}
        for r in refusals:
            assert int(r.headers["Retry-After"]) >= 1
            body = r.json()
            assert (body["error"], body["field"], body["sqlstate"]) == ("over_limit", None, None), body
            assert "list requests running" in body["message"]
        assert b_latency and max(b_latency) < 1.0
        # the cap counts running requests: after the bursts every list is let in again
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/api/v1/jobs", params={"limit": 5}, headers=auth(token_a)).status_code == 200
    finally:
        srv.stop()


# --- 5. deep JSON: one answer at every depth ------------------------------------------------------

DEPTHS = [99, 100, 101, 254, 255, 256, 999, 1000, 5000]


@pytest.fixture(scope="module")
def api(dsn: str) -> Iterator[Server]:
    srv = serve(dsn, "--log-format", "json")
    try:
        yield srv
    finally:
        srv.stop()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deep_payloads_answer_one_422(api: Server, make_token: MakeToken, name: str) -> None:
    """Up to 100 levels the job is made; past them, whether the database (JC001) or the API's parsers
    (pydantic past 255 levels, Python's json near 1,000) refuse it, the answer is the same."""
    token = make_token(name)
    logged = len(api.logs())
    answers: dict[int, tuple[int, Any]] = {}
    with httpx.Client(base_url=api.url, timeout=30) as c:
        for depth in DEPTHS:
            r = c.post(
                "/api/v1/jobs",
                content=f'{{"queue": "q", "payload": {nested(depth)}}}',
                headers=auth(token) | {"content-type": "application/json"},
            )
            answers[depth] = (r.status_code, r.json())
        # the deep field named whichever it is, where the parser ran out of stack too
        deep_backoff = c.post(
            "/api/v1/jobs",
            content=f'{{"queue": "q", "payload": {{}}, "backoff": {{"a": {nested(3000)}}}}}',
            headers=auth(token) | {"content-type": "application/json"},
        )
    print("\n" + ", ".join(f"depth {d}: {s}" for d, (s, _) in answers.items()))
    refusal = {
        "error": "invalid_request",
        "message": "payload is nested more than 100 levels deep",
        "field": "payload",
        "sqlstate": "JC001",
    }
    for depth, (status, body) in answers.items():
        if depth <= 100:
            assert status == 201, (depth, body)
            assert json.dumps(body["job"]["payload"], separators=(",", ":")) == nested(depth)
        else:
            assert (status, body) == (422, refusal), depth
    assert deep_backoff.status_code == 422
    assert deep_backoff.json()["field"] == "backoff"
    assert "Traceback" not in api.logs()[logged:]


def test_a_stored_value_too_deep_to_serialize_answers_a_clear_500(
    api: Server, admin_db: Conn, make_token: MakeToken, name: str
) -> None:
    """A payload from before the database's bound, deeper than the serializer's 255 levels (written
    here by hand): its GET answers a 500 JSON body saying what failed, never a stack trace."""
    token = make_token(name)
    with httpx.Client(base_url=api.url, timeout=30) as c:
        job_id = submit(c, token).json()["job"]["job_id"]
        admin_db.execute("update jobctl.job set payload = %s::jsonb where job_id = %s", (nested(300), job_id))
        for r in (
            c.get(f"/api/v1/jobs/{job_id}", headers=auth(token)),
            c.get("/api/v1/jobs", headers=auth(token)),
        ):
            assert r.status_code == 500, r.text[:300]
            assert r.json() == {
                "error": "internal_error",
                "message": "the response could not be serialized: a stored value is nested too deeply "
                "or not valid JSON",
                "field": None,
                "sqlstate": None,
            }
        admin_db.execute("update jobctl.job set payload = '{}' where job_id = %s", (job_id,))
    logged = [r for r in api.records() if r["msg"].endswith("cannot serialize the response")]
    assert len(logged) == 2  # the server's log has the why


# --- 6. a single submit's errors name the field as sent -------------------------------------------


@pytest.mark.parametrize(
    ("backoff", "field", "message"),
    [
        ({"base": "1 minute", "max": "1 second"}, "backoff.max", "backoff.max must be at least the base"),
        ({"base": "soon"}, "backoff.base", "backoff.base must be an interval of at most 30 days"),
        ({"base": "-5 seconds"}, "backoff.base", "backoff.base must not be negative"),
    ],
)
def test_a_single_submit_names_no_batch_element(
    api: Server, make_token: MakeToken, name: str, backoff: dict[str, str], field: str, message: str
) -> None:
    with httpx.Client(base_url=api.url, timeout=30) as c:
        r = submit(c, make_token(name), backoff=backoff)
    assert r.status_code == 422, r.text
    body = r.json()
    assert (body["error"], body["field"], body["sqlstate"]) == ("invalid_backoff", field, "JC003"), body
    assert body["message"].startswith(message), body
    assert "jobs[" not in r.text


def test_a_payload_that_is_not_json_names_the_field(api: Server, make_token: MakeToken, name: str) -> None:
    """NaN and Infinity get past the request parser (Python's json takes them) but are not JSON: the
    client refuses them before the database, as the database would refuse the text (22P02), naming
    the field."""
    token = make_token(name)
    headers = auth(token) | {"content-type": "application/json"}
    with httpx.Client(base_url=api.url, timeout=30) as c:
        job = c.post("/api/v1/jobs", content='{"queue": "q", "payload": {"x": NaN}}', headers=headers)
        schedule = c.put(
            "/api/v1/schedules/nan",
            content='{"cron": "@daily", "queue": "q", "payload": [Infinity]}',
            headers=headers,
        )
    for r in (job, schedule):
        assert r.status_code == 422, r.text
        body = r.json()
        assert (body["error"], body["field"], body["sqlstate"]) == ("invalid_request", "payload", "22P02")
        assert "not JSON" in body["message"]
