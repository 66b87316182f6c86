"""Fixtures for tests against the real local cluster (`make db`) or JOBCTL_DSN."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from jobctl import db
from psycopg.conninfo import conninfo_to_dict, make_conninfo


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


@pytest.fixture
def scratch_dsn(dsn: str) -> Iterator[str]:
    """A new, empty database on the same cluster (no pg_cron there: the manual-mode install)."""
    dbname = "jobctl_scratch_" + uuid.uuid4().hex[:8]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'create database "{dbname}"')
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    try:
        yield make_conninfo(**params)
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'drop database "{dbname}" with (force)')
