"""OpenTelemetry spans linked across processes by the traceparent stored with a job, against the real
database: in this process with the SDK's InMemorySpanExporter (the client's submit, then a Worker
run here), and across processes (a real API server and a real worker process, each writing its
spans to a file: tests/otel_file.py): one trace from the API's submit to the worker's completion."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from jobctl import Client, errors, tracing
from jobctl.worker import Job, Worker
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_api import free_port
from test_worker import TESTS, WorkerProcess, spawn, wait_for

Conn = psycopg.Connection[tuple[object, ...]]
_ = spawn  # the fixture
GIVEN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    """The process's tracer provider (set once per process), exporting to memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    return memory


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    yield exporter
    exporter.clear()


def stored(conn: Conn, job_id: int) -> str | None:
    row = conn.execute("select traceparent from jobctl.get_job(%s)", (job_id,)).fetchone()
    assert row is not None
    return None if row[0] is None else str(row[0])


def traceparent(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_the_clients_submit_span_is_stored_with_the_job(conn: Conn, name: str, spans: Any) -> None:
    with Client() as client:
        plain = client.submit(name, "q", {})
        (submit,) = named(spans, "jobctl submit")
        assert stored(conn, plain.job_id) == traceparent(submit)
        assert submit.kind == trace.SpanKind.PRODUCER
        assert submit.attributes is not None and submit.attributes["jobctl.tenant_id"] == name

        spans.clear()
        child = client.submit(name, "q", {}, traceparent=GIVEN)  # the caller's trace: continued
        (submit,) = named(spans, "jobctl submit")
        assert submit.parent is not None and f"{submit.parent.span_id:016x}" == GIVEN[36:52]
        tp = stored(conn, child.job_id)
        assert tp == traceparent(submit) and tp[3:35] == GIVEN[3:35]

        spans.clear()
        batch = client.submit_many([{"tenant_id": name, "queue": "q", "payload": {}}] * 3)
        (submit,) = named(spans, "jobctl submit")
        assert {stored(conn, b.job_id) for b in batch} == {traceparent(submit)}

        with pytest.raises(errors.InvalidInput):  # the SQL validates the format
            client.submit(name, "q", {}, traceparent="00-nothex-01")


def test_without_opentelemetry_a_given_traceparent_is_stored_as_is(
    conn: Conn, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tracing, "TRACER", None)
    with Client() as client:
        assert stored(conn, client.submit(name, "q", {}, traceparent=GIVEN).job_id) == GIVEN
        assert stored(conn, client.submit(name, "q", {}).job_id) is None


def test_an_in_process_worker_continues_the_submits_trace(
    dsn: str, conn: Conn, name: str, spans: Any
) -> None:
    seen: list[Any] = []

    async def handler(job: Job) -> Any:
        seen.append(trace.get_current_span().get_span_context())  # the run span is current
        return {"ok": True}

    with Client() as client:
        job_ids = [client.submit(name, name, {"i": i}).job_id for i in range(3)]
    submits = {traceparent(s)[36:52]: s for s in named(spans, "jobctl submit")}

    async def run() -> None:
        worker = Worker(handler, dsn=dsn, queues=[name], handle_signals=False, poll_interval=0.1)
        task = asyncio.create_task(worker.run())
        for _ in range(200):
            if worker.stats.completed == len(job_ids):
                break
            await asyncio.sleep(0.05)
        worker.request_stop()
        await task

    asyncio.run(run())
    runs = named(spans, "jobctl run")
    completes = named(spans, "jobctl complete")
    claims = named(spans, "jobctl claim")
    assert len(runs) == len(completes) == len(job_ids), [s.name for s in spans.get_finished_spans()]
    assert claims and sum(len(c.links) for c in claims) == len(job_ids)
    for run_span in runs:
        assert run_span.parent is not None
        submit = submits[f"{run_span.parent.span_id:016x}"]  # the job's submit span is its parent
        assert run_span.context.trace_id == submit.context.trace_id
        assert run_span.links and run_span.links[0].context.span_id in {c.context.span_id for c in claims}
        (complete,) = [c for c in completes if c.parent and c.parent.span_id == run_span.context.span_id]
        assert complete.context.trace_id == submit.context.trace_id
        assert complete.attributes is not None and complete.attributes["jobctl.completed"] is True
    assert {ctx.span_id for ctx in seen} == {r.context.span_id for r in runs}


def read_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_one_trace_from_the_api_submit_to_the_workers_completion(
    dsn: str, conn: Conn, name: str, tmp_path: Path, spawn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    api_spans, worker_spans = tmp_path / "api.jsonl", tmp_path / "worker.jsonl"
    port = free_port()
    api_log = tmp_path / "api.log"
    with api_log.open("wb") as out:
        api = subprocess.Popen(
            [sys.executable, "-c", "import otel_file; from jobctl.api import serve_command; serve_command()",
             "--port", str(port)],
            cwd=TESTS,
            env={**os.environ, "JOBCTL_DSN": dsn, "JOBCTL_TEST_SPANS": str(api_spans)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    monkeypatch.setenv("JOBCTL_TEST_SPANS", str(worker_spans))  # the worker process inherits it
    worker: WorkerProcess = spawn(
        "--handler", "traced_handlers:handle", "--queue", name, "--poll-interval", "0.2"
    )
    try:
        made = "select jobctl.create_api_token(%s, array['jobs:submit', 'jobs:read'])"
        row = conn.execute(made, (name,)).fetchone()
        assert row is not None
        token = str(row[0])
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/api/v1/health", timeout=1)
                break
            except httpx.TransportError:
                assert api.poll() is None and time.monotonic() < deadline, api_log.read_text()
                time.sleep(0.05)
        r = httpx.post(
            f"{url}/api/v1/jobs",
            json={"queue": name, "payload": {}, "traceparent": GIVEN},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 201, r.text
        job = r.json()["job"]
        assert job["traceparent"][3:35] == GIVEN[3:35]  # get_job shows it: the caller's trace

        def completed() -> bool:
            row = conn.execute("select state from jobctl.job where job_id = %s", (job["job_id"],)).fetchone()
            return row == ("completed",)

        wait_for(completed, 20, "the job to complete")
        assert worker.stop() == 0, worker.log[-3000:]
    finally:
        api.terminate()
        api.wait(10)
    (submit,) = [s for s in read_spans(api_spans) if s["name"] == "jobctl submit"]
    mine = read_spans(worker_spans)
    by_name = {s["name"]: s for s in mine}
    trace_id = "0x" + GIVEN[3:35]
    assert submit["context"]["trace_id"] == trace_id
    assert submit["parent_id"] == "0x" + GIVEN[36:52]
    run, complete, work = by_name["jobctl run"], by_name["jobctl complete"], by_name["handler work"]
    assert (
        run["context"]["trace_id"]
        == complete["context"]["trace_id"]
        == work["context"]["trace_id"]
        == trace_id
    )
    assert run["parent_id"] == submit["context"]["span_id"]  # across processes, through the database
    assert complete["parent_id"] == work["parent_id"] == run["context"]["span_id"]
    claim = by_name["jobctl claim"]
    assert claim["context"]["trace_id"] != trace_id  # a claim is in no job's trace: it links
    assert [link["context"]["span_id"] for link in claim["links"]] == [submit["context"]["span_id"]]


def test_without_a_tracer_provider_the_worker_makes_no_spans() -> None:
    """The opentelemetry package alone (no provider set) records nothing: the worker asks once a claim
    and skips every per-job span (their no-op spans cost more than the rest of a job's Python)."""
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from jobctl import tracing\n"
        "assert not tracing.recording()\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "assert tracing.recording()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
