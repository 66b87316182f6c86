"""The worker process's own Prometheus metrics (`jobctl worker --metrics-port N`), in a registry of
its own served by prometheus_client's start_http_server: jobs in flight, handler durations by queue
and outcome, the claim round trip, the counts of `Stats` (read at scrape time), and the process and
Python collectors. Without a port the worker makes none of this: its hooks are a None check.

The handler histogram's queue label is bounded: at most `max_queues` queues (default 100,
`jobctl worker --metrics-queues`) have series of their own, first come; a queue with no handler
ending for IDLE_SECONDS gives its place up and its series are removed; the others are summed under
queue="other" (OTHER_QUEUE). A worker without --queue that ran jobs of 10,000 queues serves about
100 queues' worth (docs/operations.md, Metrics), not 18 MB.

Handler outcomes: `ok` (returned, or completed by its own transaction), `error` (raised: a retry),
`permanent` (PermanentError), `fenced` (its transaction's completion was refused), `suspended` (it gave
up its lease to sleep or to wait for an event: docs/durable.md), or the reason it
was stopped: `cancelled`, `lost`, `timed_out`, `shutdown`, `failed` (a worker error).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from jobctl.worker.runner import Worker

# the same bounds as the database's wait and run histograms (jobctl.histogram_bounds)
HANDLER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
CLAIM_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
OTHER_QUEUE = "other"  # the handler histogram's queue label for the queues past max_queues
IDLE_SECONDS = 600.0  # a queue with no handler ending this long loses its own series


class WorkerMetrics(Collector):
    """The registry, and its first collector: at each scrape it drops the idle queues' handler series
    (before the histogram is read), then gives the counts of `Stats`."""

    def __init__(self, worker: Worker, max_queues: int = 100) -> None:
        self.stats, self.max_queues = worker.stats, max_queues
        self._seen: dict[str, tuple[float, set[str]]] = {}  # queue -> (last ending, its outcomes)
        self._lock = threading.Lock()  # observe: the event loop; collect: the server's thread
        self.registry = CollectorRegistry()
        self.registry.register(self)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        flight = Gauge("jobctl_worker_jobs_in_flight", "Handlers running now.", registry=self.registry)
        flight.set_function(lambda: float(worker._running.busy))
        Gauge(
            "jobctl_worker_concurrency", "Handlers this process may run at once.", registry=self.registry
        ).set(worker.concurrency)
        Gauge(
            "jobctl_worker_info", "This worker's id (the value is 1).", ["worker_id"], registry=self.registry
        ).labels(worker.worker_id).set(1)
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

    def observe_handler(self, queue: str, outcome: str, seconds: float) -> None:
        """A handler's time under its queue's own label, or OTHER_QUEUE once max_queues queues have one."""
        now = time.monotonic()
        with self._lock:
            if queue not in self._seen:
                self._expire(now)
                if len(self._seen) >= self.max_queues or queue == OTHER_QUEUE:
                    self.handler.labels(OTHER_QUEUE, outcome).observe(seconds)
                    return
                self._seen[queue] = (now, set())
            outcomes = self._seen[queue][1]
            outcomes.add(outcome)
            self._seen[queue] = (now, outcomes)
            self.handler.labels(queue, outcome).observe(seconds)

    def _expire(self, now: float) -> None:
        """Remove the series of the queues idle for IDLE_SECONDS (the lock held)."""
        for queue, (last, outcomes) in list(self._seen.items()):
            if now - last >= IDLE_SECONDS:
                del self._seen[queue]
                for o in outcomes:
                    self.handler.remove(queue, o)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            self._expire(time.monotonic())
        for f in fields(self.stats):  # the counts (outbox.counter): jobctl_worker_jobs_<name>_total
            if "help" in f.metadata:
                count = getattr(self.stats, f.name)
                yield CounterMetricFamily(f"jobctl_worker_jobs_{f.name}", f.metadata["help"], value=count)

    def serve(self, port: int, host: str) -> None:
        """Serve /metrics on host:port from a daemon thread (OSError: the port is taken)."""
        self._server, _ = start_http_server(port, addr=host, registry=self.registry)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
