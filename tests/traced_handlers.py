"""A handler for the tracing tests' worker process (`--handler traced_handlers:handle`): importing it
sets up the span file (otel_file); the handler makes a span of its own, which nests under the run."""

from __future__ import annotations

from typing import Any

import otel_file
from jobctl.worker import Job
from opentelemetry import trace

_ = otel_file


async def handle(job: Job) -> Any:
    with trace.get_tracer("traced_handlers").start_as_current_span("handler work"):
        return {"traceparent": job.traceparent}
