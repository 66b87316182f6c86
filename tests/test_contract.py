"""The Python copies of contract names agree with the database."""

from __future__ import annotations

import re

import psycopg
from jobctl import contract


def test_scopes_match_the_sql_list(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = conn.execute("select jobctl._api_scopes()").fetchone()
    assert row is not None
    assert sorted(contract.SCOPES) == sorted(row[0])  # type: ignore[arg-type]


def test_states_match_the_check_constraint(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = conn.execute(
        "select pg_get_constraintdef(oid) from pg_constraint where conname = 'job_state_check' limit 1"
    ).fetchone()
    assert row is not None
    for state in contract.STATES:
        assert f"'{state}'" in str(row[0])


def test_a_created_token_has_the_documented_shape(
    conn: psycopg.Connection[tuple[object, ...]], name: str
) -> None:
    row = conn.execute("select jobctl.create_api_token(%s, %s)", (name, list(contract.SCOPES))).fetchone()
    assert row is not None
    m = contract.TOKEN_RE.match(str(row[0]))
    assert m is not None
    conn.execute("select jobctl.revoke_api_token(%s)", (int(m.group(1)),))


def test_job_states_are_the_check_constraints(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Every state the constraint allows is in STATES (waiting among them), and no other one."""
    row = conn.execute(
        "select pg_get_constraintdef(oid) from pg_constraint where conname = 'job_state_check' limit 1"
    ).fetchone()
    assert row is not None
    assert sorted(re.findall(r"'(\w+)'::text", str(row[0]))) == sorted(contract.STATES)
