"""The worker process's own Prometheus metrics (`jobctl worker --metrics-port N`), in a registry of
its own served by prometheus_client's start_http_server: jobs in flight, handler durations by queue
and outcome, the claim round trip, the counts of `Stats` (read at scrape time), and the process and
Python collectors. Without a port the worker makes none of this: its hooks are a None check.

Handler outcomes: `ok` (returned, or completed by its own transaction), `error` (raised: a retry),
`permanent` (PermanentError), `fenced` (its transaction's completion was refused), or the reason it
was stopped: `cancelled`, `lost`, `timed_out`, `shutdown`, `failed` (a worker error).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from jobctl.worker.outbox import Stats

# the same bounds as the database's wait and run histograms (jobctl.histogram_bounds)
HANDLER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
CLAIM_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Stats fields as counters: jobctl_worker_jobs_<field>_total
STAT_HELP = {
    "claimed": "Jobs this process claimed.",
    "completed": "Jobs this process completed.",
    "failed": "Attempts this process failed with a retry to come (timeouts included).",
    "dead": "Attempts this process failed that made their job dead.",
    "fenced": "Reports of this process refused for a stale lease (a lost lease).",
    "cancelled": "Jobs cancelled while this process ran them.",
    "timed_out": "Jobs that ran past their timeout here.",
    "released": "Jobs given back at shutdown.",
}


class _StatsCollector(Collector):
    def __init__(self, stats: Stats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        for f in fields(self.stats):
            doc = STAT_HELP.get(f.name)
            if doc is not None:
                count = getattr(self.stats, f.name)
                yield CounterMetricFamily(f"jobctl_worker_jobs_{f.name}", doc, value=count)


class WorkerMetrics:
    def __init__(self, stats: Stats, in_flight: Callable[[], int], concurrency: int, worker_id: str) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.registry.register(_StatsCollector(stats))
        flight = Gauge("jobctl_worker_jobs_in_flight", "Handlers running now.", registry=self.registry)
        flight.set_function(lambda: float(in_flight()))
        Gauge(
            "jobctl_worker_concurrency", "Handlers this process may run at once.", registry=self.registry
        ).set(concurrency)
        Gauge(
            "jobctl_worker_info", "This worker's id (the value is 1).", ["worker_id"], registry=self.registry
        ).labels(worker_id).set(1)
        self.handler = Histogram(
            "jobctl_worker_handler_duration_seconds",
            "Time a handler ran, by queue and outcome.",
            ["queue", "outcome"],
            buckets=HANDLER_BUCKETS,
            registry=self.registry,
        )
        self.claim = Histogram(
            "jobctl_worker_claim_duration_seconds",
            "Round trip of a claim_job call (retries included), empty claims too.",
            buckets=CLAIM_BUCKETS,
            registry=self.registry,
        )
        self._server: Any = None

    def serve(self, port: int, host: str) -> None:
        """Serve /metrics on host:port from a daemon thread (OSError: the port is taken)."""
        self._server, _ = start_http_server(port, addr=host, registry=self.registry)

    @property
    def port(self) -> int | None:
        return None if self._server is None else int(self._server.server_address[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
