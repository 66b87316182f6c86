"""The job series of the API's /metrics against a real server and the real database: jobs submitted
(through the API), claimed, completed, failed for good and for a retry, and a fenced ack (a
completion with a stale lease_epoch), then the scraped values equal what happened; a tenant token
sees only its tenant's series, an admin token every tenant's, no token none; every body parses
(prometheus_client's parser) and its histograms are cumulative."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from jobctl.api.metrics import JOB_SERIES_TTL, render_job_series
from prometheus_client.parser import text_string_to_metric_families
from test_api import Server

Conn = psycopg.Connection[tuple[object, ...]]
SLOW_RETRY = {"strategy": "fixed", "base": "1 hour", "max": "1 hour", "jitter": False}
BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]


@pytest.fixture(scope="module")
def server(dsn: str) -> Iterator[Server]:
    srv = Server(dsn)
    try:
        srv.wait_up()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def db(dsn: str) -> Iterator[Conn]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def token(db: Conn) -> Iterator[Any]:
    made: list[int] = []

    def make(tenant: str | None, scopes: list[str]) -> str:
        row = db.execute("select jobctl.create_api_token(%s, %s::text[])", (tenant, scopes)).fetchone()
        assert row is not None
        made.append(int(str(row[0]).split("_")[1]))
        return str(row[0])

    yield make
    for token_id in made:
        db.execute("select jobctl.revoke_api_token(%s)", (token_id,))


def scrape(server: Server, bearer: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    return httpx.get(f"{server.url}/metrics", headers=headers, timeout=30)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample by (name, labels); checks that the body parses and its histograms are cumulative."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    families = list(text_string_to_metric_families(text))
    for family in families:
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
        if family.type == "histogram":
            series: dict[frozenset[tuple[str, str]], list[tuple[float, float]]] = {}
            for s in family.samples:
                if s.name.endswith("_bucket"):
                    key = frozenset((k, v) for k, v in s.labels.items() if k != "le")
                    series.setdefault(key, []).append((float(s.labels["le"]), s.value))
            for key, buckets in series.items():
                counts = [n for _, n in sorted(buckets)]
                assert counts == sorted(counts), (family.name, key, counts)
                assert buckets[-1][0] == float("inf")
                assert out[(f"{family.name}_count", key)] == counts[-1]
    return out


def of(values: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return values[(name, frozenset(labels.items()))]


def tenants_in(values: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> set[str]:
    return {dict(labels)["tenant"] for _, labels in values if "tenant" in dict(labels)}


def claim(db: Conn, queue: str, n: int) -> list[tuple[int, int]]:
    rows = db.execute(
        "select job_id, lease_epoch from jobctl.claim_job('metrics-test', array[%s], %s)", (queue, n)
    ).fetchall()
    assert len(rows) == n, rows
    return [(int(str(j)), int(str(e))) for j, e in rows]


def test_scraped_job_series_equal_what_happened(server: Server, db: Conn, token: Any, name: str) -> None:
    a, b = f"{name}-a", f'{name}-b"\\'  # a quote and a backslash: escaped in the labels
    qa, qb = f"{name}-qa", f"{name}-qb"
    submit_a = token(a, ["jobs:submit"])
    with httpx.Client(base_url=server.url, timeout=10) as http:
        for i in range(6):
            job = {"queue": qa, "payload": {"i": i}, "backoff": SLOW_RETRY}
            r = http.post("/api/v1/jobs", json=job, headers={"Authorization": f"Bearer {submit_a}"})
            assert r.status_code == 201, r.text
        delayed = {"queue": qa, "payload": {}, "run_at": "2030-01-01T00:00:00Z"}
        r = http.post("/api/v1/jobs", json=delayed, headers={"Authorization": f"Bearer {submit_a}"})
        assert r.status_code == 201, r.text
    jobs_b = [{"tenant_id": b, "queue": qb, "payload": {}}] * 2
    db.execute("select jobctl.submit_jobs(%s::jsonb)", (json.dumps(jobs_b),))
    (c1, c2, dead, retried, fenced) = claim(db, qa, 5)
    for job in (c1, c2):
        assert db.execute("select jobctl.complete_job(%s, %s)", job).fetchone() == (True,)
    assert db.execute("select jobctl.fail_job(%s, %s, 'boom', false)", dead).fetchone() == ("dead",)
    assert db.execute("select jobctl.fail_job(%s, %s, 'again', true)", retried).fetchone() == ("failed",)
    stale = (fenced[0], fenced[1] - 1)
    assert db.execute("select jobctl.complete_job(%s, %s)", stale).fetchone() == (False,)

    read_a, read_b, admin = token(a, ["jobs:read"]), token(b, ["jobs:read"]), token(None, ["jobs:read"])
    r = scrape(server, read_a)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=")
    got = samples(r.text)
    assert tenants_in(got) == {a}
    labels = {"tenant": a, "queue": qa}
    states = {s: of(got, "jobctl_jobs", **labels, state=s) for s in
              ("pending", "delayed", "retrying", "running", "dead", "completed", "cancelled")}  # fmt: skip
    assert states == {
        "pending": 1, "delayed": 1, "retrying": 1, "running": 1, "dead": 1, "completed": 2, "cancelled": 0,
    }  # fmt: skip
    events = {n: of(got, f"jobctl_{n}_total", **labels) for n in
              ("jobs_submitted", "jobs_claimed", "jobs_completed", "jobs_failed", "jobs_dead", "acks_fenced",
               "jobs_cancelled", "jobs_retried")}  # fmt: skip
    assert events == {
        "jobs_submitted": 7, "jobs_claimed": 5, "jobs_completed": 2, "jobs_failed": 2, "jobs_dead": 1,
        "acks_fenced": 1, "jobs_cancelled": 0, "jobs_retried": 0,
    }  # fmt: skip
    assert of(got, "jobctl_job_wait_seconds_count", **labels) == 5  # every claim
    assert of(got, "jobctl_job_run_seconds_count", **labels) == 4  # completions and failed attempts
    assert 0 <= of(got, "jobctl_job_wait_seconds_sum", **labels) < 60
    assert 0 <= of(got, "jobctl_job_run_seconds_sum", **labels) < 60
    assert 0 < of(got, "jobctl_oldest_due_age_seconds", **labels) < 60  # the one pending job
    assert of(got, "jobctl_job_wait_seconds_bucket", **labels, le="+Inf") == 5

    got_b = samples(scrape(server, read_b).text)
    assert tenants_in(got_b) == {b}
    assert of(got_b, "jobctl_jobs", tenant=b, queue=qb, state="pending") == 2
    assert of(got_b, "jobctl_jobs_submitted_total", tenant=b, queue=qb) == 2
    assert of(got_b, "jobctl_oldest_due_age_seconds", tenant=b, queue=qb) > 0

    everyone = samples(scrape(server, admin).text)
    assert {a, b} <= tenants_in(everyone)
    assert of(everyone, "jobctl_acks_fenced_total", tenant=a, queue=qa) == 1

    # a body is kept for JOB_SERIES_TTL per tenant set; after it, a new submit shows
    db.execute("select jobctl.submit_job(%s, %s, '{}')", (a, qa))
    time.sleep(JOB_SERIES_TTL + 0.1)
    again = samples(scrape(server, read_a).text)
    assert of(again, "jobctl_jobs_submitted_total", **labels) == 8
    assert of(again, "jobctl_jobs", **labels, state="pending") == 2


def test_without_a_token_only_the_process_series(server: Server, db: Conn, token: Any, name: str) -> None:
    db.execute("select jobctl.submit_job(%s, 'q', '{}')", (name,))
    r = scrape(server)
    assert r.status_code == 200
    got = samples(r.text)
    assert not tenants_in(got)
    names = {family.name for family in text_string_to_metric_families(r.text)}
    assert "jobctl_api_requests" in names and "jobctl_api_pool_size" in names
    assert not {n for n in names if n.startswith("jobctl_job") or n == "jobctl_acks_fenced"}


def test_a_token_without_jobs_read_or_a_bad_one_is_refused(server: Server, token: Any, name: str) -> None:
    r = scrape(server, token(name, ["jobs:submit", "schedules:read"]))
    assert r.status_code == 403, r.text
    assert r.json()["error"] and "jobs_submitted" not in r.text
    r = scrape(server, "jct_1_notatoken")
    assert r.status_code == 401, r.text
    r = httpx.get(f"{server.url}/metrics", headers={"Authorization": "Basic abc"})
    assert r.status_code == 401, r.text


def test_rendering_parses_and_escapes_labels() -> None:
    buckets = [1] * (len(BOUNDS) + 1)
    row = ('a"b\\c', "q", 1, 2, 3, 4, 5, 6, 7, 0.25, 8, 9, 10, 11, 12, 13, 14, 15, buckets, 1.5, buckets, 2.5)
    text = render_job_series([row], BOUNDS).decode()
    got = samples(text)
    assert tenants_in(got) == {'a"b\\c'}
    assert of(got, "jobctl_job_run_seconds_bucket", tenant='a"b\\c', queue="q", le="1.0") == 8
    assert of(got, "jobctl_job_run_seconds_count", tenant='a"b\\c', queue="q") == len(buckets)
    assert render_job_series([], BOUNDS) == b""
