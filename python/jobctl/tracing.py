"""OpenTelemetry spans for jobctl, optional: `pip install jobctl[otel]`, and a tracer provider set up
by the application (the SDK's, or `opentelemetry-instrument`). Without the opentelemetry package
every function here is a no-op, and the worker's per-job hooks are a None check (`TRACER is None`).

A job carries its trace across processes as a W3C traceparent stored with it (jobctl.submit_job's
`traceparent`, a `submit_jobs` key; claim_job returns it):

- `jobctl submit` (client and API, kind PRODUCER): a child of the traceparent given to the submit
  call, else of the current span; the job stores this span's context. A batch submit is one span,
  and its jobs store the same context.
- `jobctl claim` (worker, CONSUMER): one claim_job call that brought jobs (empty polls make no
  span). It belongs to no job's trace, since one claim takes jobs of many traces: it links to each
  job's submit context instead (OpenTelemetry's rule for batch receives).
- `jobctl run` (worker, CONSUMER): one attempt's handler. Its parent is the job's traceparent, so a
  job's submit, runs and completion are one tree in one trace; it links to its claim. The handler
  runs with it as the current span, so the handler's own spans nest under it.
- `jobctl complete` / `jobctl fail`: the report of the attempt, a child of its run (a batched
  complete_jobs call gives each of its jobs a span of the batch's duration); `jobctl.completed`
  false marks a fenced report.

The worker's spans are made after the fact with the measured start and end (a claim's jobs are
only known once it answers). Without a tracer provider (the API package alone) the spans do not
record and a submit stores only a traceparent it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from jobctl.worker.job import Job

try:
    from opentelemetry import trace as _trace
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the extra is not installed: every call is a no-op
    _trace = None  # type: ignore[assignment]

T = TypeVar("T")

TRACER: Any = None if _trace is None else _trace.get_tracer("jobctl")  # follows the provider once set
_PROPAGATOR: Any = None if _trace is None else TraceContextTextMapPropagator()


def recording() -> bool:
    """True when the worker's spans would be recorded: the opentelemetry package is there and the
    application has set a tracer provider. Before one is set, the API hands out a proxy whose spans
    record nothing, yet cost several microseconds a job; the worker asks once a claim."""
    if _trace is None:
        return False
    provider = _trace.get_tracer_provider()
    return not isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider))


def _parent(traceparent: str | None) -> Any:
    """The context a traceparent names, or None (absent or malformed)."""
    if not traceparent:
        return None
    context = _PROPAGATOR.extract({"traceparent": traceparent})
    return context if _trace.get_current_span(context).get_span_context().is_valid else None


@contextmanager
def submitting(
    traceparent: str | None, jobs: int, tenant_id: str | None = None, queue: str | None = None
) -> Iterator[str | None]:
    """Around a submit: yields the traceparent the jobs store. With OpenTelemetry, a `jobctl submit`
    span (a child of `traceparent`, else of the current span) whose context it yields; without it,
    or for a malformed traceparent (which the SQL then refuses, JC001), `traceparent` as given."""
    parent = None if TRACER is None else _parent(traceparent)
    if TRACER is None or (traceparent and parent is None):
        yield traceparent
        return
    given = {"jobctl.jobs": jobs, "jobctl.tenant_id": tenant_id, "jobctl.queue": queue}
    attributes = {k: v for k, v in given.items() if v is not None}
    with TRACER.start_as_current_span(
        "jobctl submit", context=parent, kind=SpanKind.PRODUCER, attributes=attributes
    ):
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)  # the current context: the span's (none for an invalid one)
        yield carrier.get("traceparent") or traceparent


# --- the worker's spans (called only when recording())


def claimed(
    started_ns: int, ended_ns: int, worker_id: str, asked: int, traceparents: Sequence[str | None]
) -> Any:
    """The `jobctl claim` span of a claim that brought jobs; returns its context for the runs' links."""
    parents = [p for p in map(_parent, traceparents) if p is not None]
    links = [Link(_trace.get_current_span(p).get_span_context()) for p in parents]
    span = TRACER.start_span(
        "jobctl claim",
        kind=SpanKind.CONSUMER,
        links=links,
        start_time=started_ns,
        attributes={
            "jobctl.worker_id": worker_id,
            "jobctl.max_jobs": asked,
            "jobctl.jobs": len(traceparents),
        },
    )
    span.end(end_time=ended_ns)
    return span.get_span_context()


def start_run(job: Job, claim: Any) -> Any:
    """The `jobctl run` span of one attempt, a child of the job's traceparent, linked to its claim."""
    return TRACER.start_span(
        "jobctl run",
        context=_parent(job.traceparent),
        kind=SpanKind.CONSUMER,
        links=[Link(claim)] if claim is not None else None,
        attributes={
            "jobctl.job_id": job.job_id,
            "jobctl.tenant_id": job.tenant_id,
            "jobctl.queue": job.queue,
            "jobctl.attempt": job.attempt,
            "jobctl.lease_epoch": job.lease_epoch,
        },
    )


def end_run(span: Any, outcome: str, error: BaseException | None) -> None:
    span.set_attribute("jobctl.outcome", outcome)
    if outcome != "ok":
        if error is not None:
            span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, outcome))
    span.end()


def reported(name: str, run: Any, started_ns: int, ended_ns: int, accepted: bool, **attributes: Any) -> None:
    """A `jobctl complete` or `jobctl fail` span, a child of the attempt's run span; `accepted`
    false: the report was fenced (a stale lease epoch)."""
    span = TRACER.start_span(
        name,
        context=_trace.set_span_in_context(run),
        start_time=started_ns,
        attributes={
            "jobctl.completed" if name == "jobctl complete" else "jobctl.accepted": accepted,
            **attributes,
        },
    )
    if not accepted:
        span.set_status(Status(StatusCode.ERROR, "fenced"))
    span.end(end_time=ended_ns)


@contextmanager
def current(span: Any) -> Iterator[None]:
    """Make the run span current for an async handler (its task's context)."""
    with _trace.use_span(span, end_on_exit=False):
        yield


def in_span(span: Any, fn: Callable[[Any], T]) -> Callable[[Any], T]:
    """`fn` run with `span` current: for a sync handler's thread, which does not inherit the loop's
    context."""

    def run(arg: Any) -> T:
        with _trace.use_span(span, end_on_exit=False):
            return fn(arg)

    return run
