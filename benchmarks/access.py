"""What the tenant rule costs on the hot path: claim_job + complete_job one job at a time, by callers
that the rule treats differently, side by side in one run on the benchmark cluster (fresh database).

- superuser: acts for every tenant after one catalog lookup;
- worker_all: a login in jobctl_worker granted every tenant (jobctl.grant_tenant(role, NULL));
- worker_one: a login in jobctl_worker granted one of the TENANTS tenants, which claims from the
  shared lane list with the other tenants' lanes taken out of play.
Before each caller's turn (the order rotating each round) J jobs of t0 and J of the other tenants
are submitted to the one queue; the caller then claims and completes J jobs one by one. Per caller:
the median microseconds of a claim and of a complete, and their ratio to the superuser's.
Prints JSON lines and a table; a full run also writes benchmarks/results/access.jsonl.

    .venv/bin/python benchmarks/access.py            # 7 rounds of 300 jobs, 10 tenants
    .venv/bin/python benchmarks/access.py --small    # 2 rounds of 50
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

TENANTS = 10
QUEUE = "q"


def drain(c: psycopg.Connection[Any], jobs: int) -> tuple[list[float], list[float]]:
    claims, completes = [], []
    for _ in range(jobs):
        t0 = time.perf_counter()
        row = c.execute("select job_id, lease_epoch from jobctl.claim_job('w', array['q'], 1)").fetchone()
        t1 = time.perf_counter()
        assert row is not None, "a claim found no job"
        c.execute("select jobctl.complete_job(%s, %s)", row)
        claims.append((t1 - t0) * 1e6)
        completes.append((time.perf_counter() - t1) * 1e6)
    return claims, completes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="2 rounds of 50 jobs")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    rounds, jobs = (2, 50) if args.small else (7, 300)
    base = args.url or cluster_url("postgres")
    dsn = fresh_database(base, "jobctl_access")
    tag = uuid.uuid4().hex[:8]
    roles = {"worker_all": f"bench_all_{tag}", "worker_one": f"bench_one_{tag}"}
    tenants = [f"t{i}" for i in range(TENANTS)]
    claims: dict[str, list[float]] = {k: [] for k in ("superuser", *roles)}
    completes: dict[str, list[float]] = {k: [] for k in claims}
    with psycopg.connect(dsn, autocommit=True) as admin:
        for role, grant in zip(roles.values(), (None, tenants[0]), strict=True):
            admin.execute(f'create role "{role}" login in role jobctl_worker')
            admin.execute("select jobctl.grant_tenant(%s, %s)", (role, grant))
        sessions = {"superuser": psycopg.connect(dsn, autocommit=True)} | {
            kind: psycopg.connect(make_conninfo(dsn, user=role), autocommit=True)
            for kind, role in roles.items()
        }
        try:
            for r in range(rounds):
                order = list(claims)[r % 3 :] + list(claims)[: r % 3]
                for kind in order:
                    # jobs of t0, which every caller may take, and as many of the other tenants in the
                    # same queue: lanes that worker_one must leave out of play
                    admin.execute(
                        "select jobctl.submit_jobs(%s)",
                        (
                            Jsonb(
                                [{"tenant_id": tenants[0], "queue": QUEUE, "payload": {}}] * jobs
                                + [
                                    {
                                        "tenant_id": tenants[1 + i % (TENANTS - 1)],
                                        "queue": QUEUE,
                                        "payload": {},
                                    }
                                    for i in range(jobs)
                                ]
                            ),
                        ),
                    )
                    c, d = drain(sessions[kind], jobs)
                    claims[kind] += c
                    completes[kind] += d
        finally:
            for s in sessions.values():
                s.close()
            for role in roles.values():
                admin.execute("delete from jobctl._role_tenant where role_oid = %s::regrole", (role,))
                admin.execute(f'drop role "{role}"')
    results = [
        {
            "caller": kind,
            "calls": len(claims[kind]),
            "claim_us_median": round(statistics.median(claims[kind]), 1),
            "complete_us_median": round(statistics.median(completes[kind]), 1),
        }
        for kind in claims
    ]
    su = results[0]
    for row in results:
        row["claim_vs_superuser"] = round(row["claim_us_median"] / su["claim_us_median"], 3)
        row["complete_vs_superuser"] = round(row["complete_us_median"] / su["complete_us_median"], 3)
        print(json.dumps(row), flush=True)
    finish(base, "jobctl_access", results, None if args.small else "access.jsonl")
    print(f"\n  {'caller':11} {'claim us':>9} {'x':>6} {'complete us':>12} {'x':>6}")
    for r in results:
        print(
            f"  {r['caller']:11} {r['claim_us_median']:>9} {r['claim_vs_superuser']:>6} "
            f"{r['complete_us_median']:>12} {r['complete_vs_superuser']:>6}"
        )


if __name__ == "__main__":
    main()
