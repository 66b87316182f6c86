"""jobctl's locks: one tenant's open transaction holds up only its own
tenant's work. Each test keeps a transaction of tenant A open, holding the locks its work took, and
times tenant B's work of the same kind in another session; B's names are chosen to share A's hash
bucket, so a lock shared by bucket across tenants (as the advisory locks were) would stall B. The
advisory-lock keys any login could take: tests/test_hostile.py."""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg

Conn = psycopg.Connection[tuple[object, ...]]
BOUND = 1.0  # seconds: B's call must not wait for A's transaction


def _same_bucket(conn: Conn, name: str, key: str, mask: int) -> str:
    """A string other than `key` whose hashtext falls in the same bucket (hashtext & mask)."""
    row = conn.execute(
        "select 'b' || g from generate_series(1, 200000) as g"
        " where hashtext(%s || g) & %s = hashtext(%s) & %s limit 1",
        (name + "_b", mask, key, mask),
    ).fetchone()
    assert row is not None
    return name + "_" + str(row[0])


def _timed(dsn: str, work: Callable[[Conn], object]) -> float:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("set statement_timeout = '10s'")
        started = time.monotonic()
        work(c)
        return time.monotonic() - started


def test_an_open_dedup_submit_holds_up_no_other_tenant(conn: Conn, dsn: str, name: str) -> None:
    """A's open transaction has submitted jobs with 3,000 dedup keys (every one of 256 buckets a
    shared lock would have); B's dedup submit goes through at once."""
    tenant_a, tenant_b = name + "_a", name + "_b"
    with psycopg.connect(dsn) as holder:
        holder.execute(
            "select count(*) from jobctl.submit_jobs((select jsonb_agg(jsonb_build_object("
            " 'tenant_id', %s::text, 'queue', 'q', 'payload', '{}'::jsonb, 'dedup_key', 'k' || g))"
            " from generate_series(1, 3000) as g))",
            (tenant_a,),
        )
        took = _timed(
            dsn,
            lambda c: c.execute("select jobctl.submit_job(%s, 'q', '{}', dedup_key => 'k1')", (tenant_b,)),
        )
        assert took < BOUND, f"B's dedup submit waited {took:.2f} s for A's open transaction"
        holder.rollback()


def test_an_open_keyed_submit_holds_up_no_other_tenant(conn: Conn, dsn: str, name: str) -> None:
    """A's open transaction admitted a job of concurrency key k; B's job of a key in the same bucket
    is admitted at once (the bucket of 'tenant + key' for a shared lock)."""
    tenant_a = name + "_a"
    tenant_b = _same_bucket(conn, name, tenant_a + chr(31) + "k", 16383)
    with psycopg.connect(dsn) as holder:
        holder.execute("select jobctl.submit_job(%s, 'q', '{}', concurrency_key => 'k')", (tenant_a,))
        took = _timed(
            dsn,
            lambda c: c.execute(
                "select jobctl.submit_job(%s, 'q', '{}', concurrency_key => 'k')", (tenant_b,)
            ),
        )
        assert took < BOUND, f"B's keyed submit waited {took:.2f} s for A's open transaction"
        holder.rollback()


def test_an_open_claim_of_a_limited_tenant_holds_up_no_other_tenant(conn: Conn, dsn: str, name: str) -> None:
    """A's worker holds a claim open (its tenant has max_running, so the claim took the tenant's
    lock); B, also limited and in A's bucket of a shared lock, still gets its job."""
    tenant_a = name + "_a"
    tenant_b = _same_bucket(conn, name, tenant_a, 4095)
    for t in (tenant_a, tenant_b):
        conn.execute("select jobctl.put_tenant(%s, max_running => 5)", (t,))
        conn.execute("select jobctl.submit_job(%s, %s, '{}') from generate_series(1, 3)", (t, t + "_q"))
    with psycopg.connect(dsn) as holder:
        got = holder.execute(
            "select count(*) from jobctl.claim_job('wa', %s, 1)", ([tenant_a + "_q"],)
        ).fetchone()
        assert got == (1,)
        claimed: list[object] = []
        took = _timed(
            dsn,
            lambda c: claimed.extend(
                c.execute(
                    "select tenant_id from jobctl.claim_job('wb', %s, 5)", ([tenant_b + "_q"],)
                ).fetchall()
            ),
        )
        holder.rollback()
    assert took < BOUND
    assert (tenant_b,) in claimed, f"B got none of its jobs while A's claim was open: {claimed}"
