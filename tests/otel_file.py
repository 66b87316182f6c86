"""Imported by a process the tracing tests start (the API server, a worker's handler module): an
OpenTelemetry SDK tracer provider that writes every ended span, as one JSON line, to the file named
by JOBCTL_TEST_SPANS."""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

_out = open(os.environ["JOBCTL_TEST_SPANS"], "a", buffering=1)  # noqa: SIM115 - open for the process's life
_provider = TracerProvider()
_provider.add_span_processor(
    SimpleSpanProcessor(
        ConsoleSpanExporter(out=_out, formatter=lambda span: span.to_json(indent=None) + "\n")
    )
)
trace.set_tracer_provider(_provider)
