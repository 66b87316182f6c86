"""The HTTP API fuzzed from its own OpenAPI document (schemathesis) against a real server: every
operation, with generated requests that follow the document and requests that break it, by a token
with every scope for a tenant of its own (other tests' jobs answer 404 to it, so the fuzzing cannot
cancel or retry them). No answer may be a 5xx, and every answer must be one the document declares,
in the declared shape."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from test_api import ALL_SCOPES, Server

# per operation, in make test: 50 positive (about 20 s in all) and 20 negative requests (slower to
# generate and answer: every bad query parameter a 422 of its own; about 35 s); make fuzz sends 300 of each
EXAMPLES = {"positive": int(os.environ.get("JOBCTL_FUZZ_EXAMPLES", "50"))}
EXAMPLES["negative"] = int(os.environ.get("JOBCTL_FUZZ_EXAMPLES", "20"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def api(dsn: str) -> Iterator[tuple[Any, str]]:
    """The served API's schema, loaded from the server, and a token of a new tenant with every scope."""
    with psycopg.connect(dsn, autocommit=True) as c:
        tenant = f"fuzz-{uuid.uuid4().hex[:8]}"
        row = c.execute("select jobctl.create_api_token(%s, %s, 'fuzz')", (tenant, ALL_SCOPES)).fetchone()
    assert row is not None
    server = Server(dsn)
    try:
        server.wait_up()
        yield schemathesis.openapi.from_url(f"{server.url}/api/v1/openapi.json"), f"Bearer {row[0]}"
    finally:
        server.stop()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_operation_answers_generated_requests_as_declared_and_never_5xx(
    api: tuple[Any, str], mode: GenerationMode
) -> None:
    """Valid requests (positive) and requests that break the document's rules (negative)."""
    schema, auth = api
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9, [op.label for op in operations]
    fuzzed = []
    for op in operations:

        @given(case=op.as_strategy(generation_mode=mode, headers={"Authorization": auth}))
        @settings(max_examples=EXAMPLES[mode.value], deadline=None, suppress_health_check=list(HealthCheck))
        def answers(case: Any) -> None:
            case.call_and_validate(checks=CHECKS)

        try:
            answers()
        except Unsatisfiable:
            # an operation without parameters or body (GET /health) has no invalid request to make
            assert mode is GenerationMode.NEGATIVE, op.label
            continue
        fuzzed.append(op.label)
    assert len(fuzzed) >= 8, fuzzed
