"""Fixtures for tests against the real local cluster (`make db`) or JOBCTL_DSN."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from jobctl import db


@pytest.fixture(scope="session")
def dsn() -> str:
    try:
        return db.dsn()
    except db.NoDsnError as e:
        pytest.exit(str(e), returncode=2)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def name() -> str:
    """A prefix unique to this test, for its tenants and queues: tests share one database."""
    return "t" + uuid.uuid4().hex[:10]
