"""Prometheus metrics, in a registry of the app's own: requests by method, route template and status,
their latency, and the connection pool's gauges (read from pool.get_stats() at scrape time). Every
label takes a bounded set of values, so no client can grow the series."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "<unmatched>"
# Label values are bounded, whatever clients send: a method outside these (h11 passes any token,
# 8 KB long too) counts as "other", a path no route matches as UNMATCHED
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
OTHER_METHOD = "other"


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


class Metrics:
    def __init__(self, pool_stats: Callable[[], dict[str, int] | None]) -> None:
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

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


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
            self.metrics.observe(method, template, status, time.perf_counter() - start)


def install(app: FastAPI, pool_stats: Callable[[], dict[str, int] | None]) -> Metrics:
    metrics = Metrics(pool_stats)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_api_route("/metrics", metrics.endpoint, methods=["GET"], include_in_schema=False)
    return metrics
