"""The SQL functions fuzzed with generated input (hypothesis): every call either does what the
contract says or fails with a documented SQLSTATE (docs/errors.md: python/jobctl/errors.py's map),
and a call that fails writes nothing: no job, no tenant, no event. Never an internal error, a crash
or a half-written batch. Text never holds NUL (PostgreSQL's text cannot: the driver refuses it
before the server sees it); JSON may hold \\u0000, which jsonb refuses with 22P05."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobctl import errors
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[tuple[Any, ...]]
DOCUMENTED = set(errors.BY_SQLSTATE)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# no NUL (text cannot hold it) and no lone surrogate (not UTF-8: the driver cannot send it)
characters = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
text = st.text(alphabet=characters, max_size=220)
names = st.one_of(st.none(), text, st.sampled_from(["", "a" * 200, "a" * 201, "fuzz-q", " "]))
ints = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([-101, -100, 0, 100, 101, 1000, 1001]))
# ids and epochs no job has: far below or above what the sequences hand out (a real job must not be
# cancelled or retried by a fuzzed call)
bigints = st.one_of(st.integers(-(2**63), 0), st.integers(2**62, 2**63 - 1))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
intervals = st.one_of(st.none(), st.timedeltas(timedelta(days=-40), timedelta(days=40)))
moments = st.one_of(
    st.none(), st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31), timezones=st.just(UTC))
)
backoffs = st.one_of(
    st.none(),
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "strategy": st.sampled_from(["fixed", "linear", "exponential", "bogus"]) | text,
            "base": st.sampled_from(["1 second", "-1 second", "31 days", "x"]) | json_values,
            "max": st.sampled_from(["1 hour", "0 seconds", "forever"]) | json_values,
            "jitter": st.booleans() | json_values,
        },
    ),
)


def documented(e: psycopg.Error) -> None:
    assert e.sqlstate in DOCUMENTED, f"{e.sqlstate}: {e}"
    assert str(e).strip(), "an error without a message"


def footprint(conn: Conn, tenants: list[Any]) -> tuple[int, int, int]:
    """Jobs, tenant rows and events of these tenants: what a failed call must leave unchanged."""
    row = conn.execute(
        "select (select count(*) from jobctl.job where tenant_id = any(%(t)s)),"
        " (select count(*) from jobctl.tenant where tenant_id = any(%(t)s)),"
        " (select count(*) from jobctl._event as e join jobctl.job as j on j.job_id = e.job_id"
        "  where j.tenant_id = any(%(t)s))",
        # a string holding NUL cannot be a PostgreSQL text value, so no such tenant can exist
        {"t": [t for t in tenants if isinstance(t, str) and "\x00" not in t]},
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


@FUZZ
@given(
    tenant=names,
    queue=names,
    payload=json_values,
    priority=ints,
    run_at=moments,
    dedup_key=names,
    max_attempts=st.one_of(st.none(), ints),
    backoff=backoffs,
    timeout=intervals,
)
def test_submit_job_succeeds_or_fails_cleanly(conn: Conn, **job: Any) -> None:
    before = footprint(conn, [job["tenant"]])
    try:
        row = conn.execute(
            "select job_id, duplicate from jobctl.submit_job(%(tenant)s, %(queue)s, %(payload)s,"
            " %(priority)s::integer, %(run_at)s, %(dedup_key)s, %(max_attempts)s::integer, %(backoff)s,"
            " %(timeout)s)",
            {
                **job,
                "payload": Jsonb(job["payload"]),
                "backoff": None if job["backoff"] is None else Jsonb(job["backoff"]),
            },
        ).fetchone()
    except psycopg.Error as e:
        documented(e)
        assert footprint(conn, [job["tenant"]]) == before, "a failed submit wrote something"
        return
    assert row is not None
    got = conn.execute(
        "select tenant_id, queue, priority, state from jobctl.get_job(%s)", (row[0],)
    ).fetchone()
    assert got is not None and got[0] == job["tenant"], (job, got)
    if not row[1]:  # a new job, not a dedup hit on an earlier example's
        assert got[1:] == (job["queue"], job["priority"], "pending" if job["run_at"] is None else got[3]), got


@FUZZ
@given(
    jobs=st.lists(
        st.dictionaries(
            st.sampled_from(
                [
                    "tenant_id",
                    "queue",
                    "payload",
                    "priority",
                    "run_at",
                    "dedup_key",
                    "max_attempts",
                    "backoff",
                    "timeout",
                    "bogus",
                ]
            ),
            json_values,
        ),
        min_size=1,
        max_size=5,
    ),
    good=st.booleans(),
)
def test_submit_jobs_is_all_or_nothing(conn: Conn, jobs: list[dict[str, Any]], good: bool) -> None:
    if good:  # one well-formed job first: a later bad one must take it back with it
        jobs = [{"tenant_id": "fuzz-t", "queue": "fuzz-q", "payload": {"n": 1}}, *jobs]
    tenants = [j.get("tenant_id") for j in jobs]
    before = footprint(conn, tenants)
    try:
        rows = conn.execute("select job_id from jobctl.submit_jobs(%s)", (Jsonb(jobs),)).fetchall()
    except psycopg.Error as e:
        documented(e)
        assert footprint(conn, tenants) == before, "a failed batch wrote part of itself"
        return
    assert len(rows) == len(jobs)


@FUZZ
@given(
    job_id=bigints, epoch=bigints, extend=intervals, result=json_values, error=text, retryable=st.booleans()
)
def test_a_worker_call_with_any_ids_is_fenced_or_refused(
    conn: Conn, job_id: int, epoch: int, extend: timedelta | None, result: Any, error: str, retryable: bool
) -> None:
    """Made-up ids and epochs never match a lease (the sequence is far from them): heartbeat (with or
    without progress) answers lost, complete_job false, fail_job NULL, or the call is refused with a
    documented code."""
    calls: list[tuple[str, tuple[Any, ...], Any]] = [
        (
            "select jobctl.heartbeat(%s, %s, coalesce(%s, interval '30 seconds'))",
            (job_id, epoch, extend),
            "lost",
        ),
        (  # with any progress
            "select jobctl.heartbeat(%s, %s, coalesce(%s, interval '30 seconds'), %s)",
            (job_id, epoch, extend, Jsonb(result)),
            "lost",
        ),
        ("select jobctl.complete_job(%s, %s, %s)", (job_id, epoch, Jsonb(result)), False),
        ("select jobctl.fail_job(%s, %s, %s, %s)", (job_id, epoch, error, retryable), None),
    ]
    for query, args, fenced in calls:
        try:
            row = conn.execute(query, args).fetchone()
        except psycopg.Error as e:
            documented(e)
            continue
        assert row is not None and row[0] == fenced, (query, args, row)


@FUZZ
@given(
    job_id=bigints,
    tenant=names,
    state=names,
    queue=names,
    before_id=st.one_of(st.none(), bigints),
    max_rows=st.one_of(st.none(), ints),
)
def test_operator_calls_with_any_input_answer_or_refuse(
    conn: Conn, job_id: int, tenant: Any, state: Any, queue: Any, before_id: Any, max_rows: Any
) -> None:
    calls = [
        ("select count(*) from jobctl.get_job(%s)", (job_id,)),
        ("select count(*) from jobctl.job_history(%s)", (job_id,)),
        ("select jobctl.cancel_job(%s)", (job_id,)),
        ("select jobctl.retry_job(%s)", (job_id,)),
        (
            "select count(*) from jobctl.list_jobs(%s, %s, %s, %s, coalesce(%s::integer, 100))",
            (tenant, state, queue, before_id, max_rows),
        ),
        ("select count(*) from jobctl.stats(%s, %s)", (tenant, queue)),
    ]
    for query, args in calls:
        try:
            conn.execute(query, args).fetchall()
        except psycopg.Error as e:
            documented(e)


@FUZZ
@given(
    worker=names,
    queues=st.lists(text.map(lambda q: "fuzz-none-" + q), max_size=3),
    max_jobs=ints,
    lease=intervals,
)
def test_claim_job_with_any_input_claims_nothing_here_or_refuses(
    conn: Conn, worker: Any, queues: list[str], max_jobs: int, lease: timedelta | None
) -> None:
    """Queues no job is in (a prefix of their own): the answer is no job, or a documented refusal."""
    try:
        rows = conn.execute(
            "select * from jobctl.claim_job(%s, %s, %s::integer, coalesce(%s, interval '30 seconds'))",
            (worker, queues, max_jobs, lease),
        ).fetchall()
    except psycopg.Error as e:
        documented(e)
        return
    assert rows == []


cron_parts = st.sampled_from(
    ["*", "*/5", "0", "59", "60", "1-5", "5-1", "mon", "jan", "1,2,3", "?", "L", "-1", "*/0"]
)


@FUZZ
@given(
    cron=st.one_of(
        text,
        st.lists(cron_parts, min_size=1, max_size=7).map(" ".join),
        st.sampled_from(["@every 5 seconds", "@every 0 seconds", "@every -1 minute", "@hourly", "@every"]),
    ),
    after=st.datetimes(datetime(1, 1, 2), datetime(9999, 12, 30), timezones=st.just(UTC)),
)
def test_cron_next_answers_a_later_time_or_refuses(conn: Conn, cron: str, after: datetime) -> None:
    try:
        row = conn.execute("select jobctl.cron_next(%s, %s)", (cron, after)).fetchone()
    except psycopg.Error as e:
        documented(e)
        return
    assert row is not None
    assert row[0] is None or row[0] > after, (cron, after, row)


@pytest.fixture(autouse=True)
def statement_timeout(conn: Conn) -> None:
    """A call that runs away fails the test (57014 is not a documented code) instead of hanging it."""
    conn.execute("set statement_timeout = '10s'")
