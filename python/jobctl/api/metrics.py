"""Prometheus metrics, in a registry of the app's own: requests by method, route template and status,
their latency, and the connection pool's gauges (read from pool.get_stats() at scrape time). Every
label takes a bounded set of values, so no client can grow the series.

With a bearer token that holds jobs:read, /metrics also carries the job series of the token's tenants
(`JobSeries`: the counters of jobctl.job_series, per tenant and queue for the busiest
jobctl.metrics_queues tenant queues, default 200, and one series with tenant="" and queue="" summing
the others, so the body is bounded whatever the number of queues); without a token it carries the
process series only, so no login outside jobctl's roles can observe a tenant. The job series are
rendered as exposition text straight from the rows, one pass per family (a prometheus_client object
per sample costs seconds at 10,000 tenant-queue pairs), and the body is kept for JOB_SERIES_TTL per
tenant set (a tenant token: its tenant; an admin token: all), so that scrapers side by side cost one
read; every scrape still authenticates its token.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobctl import queries

UNMATCHED = "<unmatched>"
# Label values are bounded, whatever clients send: a method outside these (h11 passes any token,
# 8 KB long too) counts as "other", a path no route matches as UNMATCHED
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
OTHER_METHOD = "other"

# How long a rendered body of job series serves the scrapes of the same tenant set (seconds)
JOB_SERIES_TTL = 1.0


class PoolCollector(Collector):
    def __init__(self, stats: Callable[[], dict[str, int] | None]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        if stats is None:
            return
        for key, name, doc in (
            ("pool_size", "size", "Connections the pool holds, busy or idle."),
            ("pool_available", "available", "Idle connections ready for a request."),
            ("requests_waiting", "waiting", "Requests waiting for a connection."),
            ("pool_max", "max", "The most connections the pool may open."),
        ):
            yield GaugeMetricFamily(f"jobctl_api_pool_{name}", doc, value=stats.get(key, 0))


# --- the job series: metrics.METRICS_JOB_COUNTS's columns, by position

STATES = ("pending", "delayed", "retrying", "running", "dead", "completed", "cancelled")
(TENANT, QUEUE, *_STATE_COLUMNS, AGE, SUBMITTED, CLAIMED, SUCCEEDED, FAILED, DIED, WITHDRAWN, RETRIED,
 FENCED, WAIT_BUCKETS, WAIT_SECONDS, RUN_BUCKETS, RUN_SECONDS) = range(22)  # fmt: skip
STATE_COLUMNS = tuple(_STATE_COLUMNS)
# (column, sample name, help)
COUNTERS = (
    (SUBMITTED, "jobctl_jobs_submitted_total", "Jobs submitted (dedup repeats not counted)."),
    (CLAIMED, "jobctl_jobs_claimed_total", "Attempts started: jobs claimed by a worker."),
    (SUCCEEDED, "jobctl_jobs_completed_total", "Jobs completed."),
    (FAILED, "jobctl_jobs_failed_total", "Failed attempts, retried or not (timeouts and reaped leases too)."),
    (DIED, "jobctl_jobs_dead_total", "Attempts that made their job dead (no retry left, or permanent)."),
    (WITHDRAWN, "jobctl_jobs_cancelled_total", "Jobs cancelled."),
    (RETRIED, "jobctl_jobs_retried_total", "Dead or cancelled jobs made due again by hand (retry_job)."),
    (FENCED, "jobctl_acks_fenced_total", "Completions and failures refused for a stale lease epoch."),
)
HISTOGRAMS = (
    (WAIT_BUCKETS, WAIT_SECONDS, "jobctl_job_wait_seconds", "Time from due (run_at) to claimed."),
    (RUN_BUCKETS, RUN_SECONDS, "jobctl_job_run_seconds", "Time from claimed to completed or failed."),
)


def escape_label(value: str) -> str:
    """A label value as the text format writes it (the SQL refuses control characters in tenant
    ids and queue names, so only a backslash and a double quote ever need it)."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def _lines(prefix: str, middle: str, labels: Sequence[str], values: Sequence[Any]) -> str:
    """One line per row, `<prefix><labels[i]><middle><values[i]>`: an f-string per line is the fastest
    way CPython has (a `%` template costs half as much again, a prometheus_client sample ten times)."""
    return "".join([f"{prefix}{lab}{middle}{value}\n" for lab, value in zip(labels, values, strict=True)])


def render_job_series(rows: Sequence[Sequence[Any]], bounds: Sequence[float]) -> bytes:
    """The job series of METRICS_JOB_COUNTS's rows as Prometheus text (format 0.0.4, which 1.0.0
    keeps for these names): each family's HELP and TYPE, then its samples, one column at a time (the
    rows are transposed once, and the histograms' buckets summed into cumulative columns with C-level
    adds)."""
    if not rows:
        return b""
    cols = list(zip(*rows, strict=True))
    tenants, queues = map(escape_label, cols[TENANT]), map(escape_label, cols[QUEUE])
    labels = [f'tenant="{t}",queue="{q}"' for t, q in zip(tenants, queues, strict=True)]
    out = [
        "# HELP jobctl_jobs Jobs by state now (dead, completed and cancelled: in hot storage).\n",
        "# TYPE jobctl_jobs gauge\n",
    ]
    for state, column in zip(STATES, STATE_COLUMNS, strict=True):
        out.append(_lines("jobctl_jobs{", f',state="{state}"}} ', labels, cols[column]))
    out.append("# HELP jobctl_oldest_due_age_seconds Age of the oldest due job (0: none is due).\n")
    out.append("# TYPE jobctl_oldest_due_age_seconds gauge\n")
    out.append(_lines("jobctl_oldest_due_age_seconds{", "} ", labels, cols[AGE]))
    for column, name, doc in COUNTERS:
        out.append(f"# HELP {name} {doc}\n# TYPE {name} counter\n")
        out.append(_lines(f"{name}{{", "} ", labels, cols[column]))
    les = [repr(float(b)) for b in bounds] + ["+Inf"]  # as prometheus_client writes `le`: 1.0, 0.005
    for buckets_column, seconds_column, name, doc in HISTOGRAMS:
        out.append(f"# HELP {name} {doc}\n# TYPE {name} histogram\n")
        per_bucket = list(zip(*cols[buckets_column], strict=True))  # one tuple per bucket, across rows
        if len(per_bucket) != len(les):
            raise ValueError(f"{name}: {len(per_bucket)} buckets for {len(les)} bounds")
        cumulative: Sequence[int] = per_bucket[0]
        for k, le in enumerate(les):
            if k:
                cumulative = list(map(operator.add, cumulative, per_bucket[k]))
            out.append(_lines(f"{name}_bucket{{", f',le="{le}"}} ', labels, cumulative))
        out.append(_lines(f"{name}_count{{", "} ", labels, cumulative))
        out.append(_lines(f"{name}_sum{{", "} ", labels, [float(s) for s in cols[seconds_column]]))
    return "".join(out).encode()


@dataclass
class _Rendered:
    expires: float = float("inf")  # time.monotonic(): the body's TTL counts from when it is ready
    body: asyncio.Future[bytes] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class JobSeries:
    """The job series for a request with a bearer token holding jobs:read, through the API's own
    authentication (auth.token_sessions: 401 and 403 as every endpoint answers them); the body is kept
    for `ttl` seconds per tenant set. The rows are read in the token's transaction, so the SQL
    returns only the token's tenants."""

    def __init__(self, ttl: float = JOB_SERIES_TTL) -> None:
        self.ttl = ttl
        self._rendered: dict[str | None, _Rendered] = {}

    async def body(self, request: Request) -> bytes:
        from jobctl.api.auth import token_sessions  # auth imports the client, which app.py loads first

        owner: _Rendered | None = None
        async with token_sessions(request, "jobs:read").open() as caller:
            key = caller.tenant_id  # the tenant set: the token's tenant, or None for all
            now = time.monotonic()
            entry = self._rendered.get(key)
            if entry is None or entry.expires <= now:
                for stale in [k for k, e in self._rendered.items() if e.expires <= now]:
                    del self._rendered[stale]
                entry = owner = self._rendered[key] = _Rendered()
                try:
                    cur = await caller.conn.execute(queries.HISTOGRAM_BOUNDS)
                    bounds_row = await cur.fetchone()
                    cur = await caller.conn.execute(queries.METRICS_JOB_COUNTS)
                    rows = await cur.fetchall()
                except BaseException as e:
                    self._fail(key, owner, e)
                    raise
        if owner is None:
            return await asyncio.shield(entry.body)  # another scrape reads and renders it
        try:
            assert bounds_row is not None
            body = await asyncio.to_thread(render_job_series, rows, bounds_row[0])
        except BaseException as e:
            self._fail(key, owner, e)
            raise
        owner.body.set_result(body)
        owner.expires = time.monotonic() + self.ttl
        return body

    def _fail(self, key: str | None, entry: _Rendered, error: BaseException) -> None:
        if self._rendered.get(key) is entry:
            del self._rendered[key]
        if not entry.body.done():
            entry.body.set_exception(error)
            entry.body.exception()  # retrieved: no warning when no other scrape waited for it


class Metrics:
    def __init__(
        self, pool_stats: Callable[[], dict[str, int] | None], job_series_ttl: float = JOB_SERIES_TTL
    ) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "jobctl_api_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "jobctl_api_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=self.registry,
        )
        self.registry.register(PoolCollector(pool_stats))
        self.jobs = JobSeries(job_series_ttl)

    async def endpoint(self, request: Request) -> Response:
        """The process series; with a token (jobs:read), the job series of its tenants first."""
        jobs = await self.jobs.body(request) if "authorization" in request.headers else b""
        return Response(jobs + generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class MetricsMiddleware:
    """Times every HTTP request and counts it under its route template (never the raw path)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route: Any = scope.get("route")
            template = getattr(route, "path", None) or UNMATCHED  # a route template, never the raw path
            method = scope["method"] if scope["method"] in METHODS else OTHER_METHOD
            self.metrics.requests.labels(method, template, str(status)).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - start)


def install(
    app: FastAPI, pool_stats: Callable[[], dict[str, int] | None], job_series_ttl: float = JOB_SERIES_TTL
) -> Metrics:
    metrics = Metrics(pool_stats, job_series_ttl)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_api_route("/metrics", metrics.endpoint, methods=["GET"], include_in_schema=False)
    return metrics
