"""Fixtures for tests against the real test cluster: the database `make test-db` makes afresh on
.test-pg/ (or JOBCTL_TEST_DSN), never the one `make db` gives the user."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from jobctl import db
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# the cluster bin/db keeps for the tests (Makefile: TEST_ENV); what the tests start (bin/demo, the CLI,
# workers) inherits it, so nothing they run reaches the user's database
TEST_CLUSTER = {"JOBCTL_PGNAME": ".test-pg", "JOBCTL_PG_DB": "jobctl_test", "JOBCTL_PG_PORT": "55442"}


def find_test_dsn() -> str:
    given = os.environ.get("JOBCTL_TEST_DSN")
    if given:
        return given
    path = db.ROOT / ".test-pg" / "dsn"
    if not path.is_file():
        pytest.exit("no test database: run `make test-db` (or set JOBCTL_TEST_DSN)", returncode=2)
    return path.read_text().strip()


def _unprepared_test_connections() -> None:
    """Behind a transaction pooler (benchmarks/drills/pooler.py runs the suites so), the tests' own
    connections prepare no statement either: psycopg.connect and AsyncConnection.connect called from
    a file under tests/ without prepare_threshold get None. jobctl's own connections are left as
    jobctl makes them, so that a missing setting there still fails."""
    tests = str(Path(__file__).resolve().parent)
    for cls in (psycopg.Connection, psycopg.AsyncConnection):
        original = cls.connect.__func__  # type: ignore[attr-defined]

        def connect(klass: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            if "prepare_threshold" not in kwargs and sys._getframe(1).f_code.co_filename.startswith(tests):
                kwargs["prepare_threshold"] = None
            return __original(klass, *args, **kwargs)

        cls.connect = classmethod(connect)  # type: ignore[method-assign,assignment]
    psycopg.connect = psycopg.Connection.connect  # the module's alias was bound at import


def pytest_configure(config: pytest.Config) -> None:
    if db.pooled():
        _unprepared_test_connections()
    value = find_test_dsn()
    user = db.ROOT / ".pg" / "dsn"
    if user.is_file() and user.read_text().strip() == value:
        pytest.exit("the test database is the one `make db` gives the user: refusing", returncode=2)
    os.environ["JOBCTL_DSN"] = value
    # the test cluster's port is the one its dsn names (make test-db TEST_PG_PORT=N)
    os.environ.update(
        TEST_CLUSTER, JOBCTL_PG_PORT=conninfo_to_dict(value).get("port") or TEST_CLUSTER["JOBCTL_PG_PORT"]
    )


@pytest.fixture(scope="session")
def dsn() -> str:
    return os.environ["JOBCTL_DSN"]


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    # prepare_threshold None behind a transaction pooler (benchmarks/drills/pooler.py runs the suites so)
    with psycopg.connect(dsn, autocommit=True, **db.pooler_kwargs()) as c:
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
