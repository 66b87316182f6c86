"""What payload encryption costs: a tenant that encrypts its payloads beside one that does not, on
the benchmark cluster, in a fresh database, in one run.

Rounds alternate the two tenants (which goes first too): submit_jobs of B jobs (the same payload of
about 400 bytes), then claim_job of B from that tenant's queue (again for the rest if it comes
short). Per tenant: the median time of a submit batch and of a claim batch, the ratios encrypted /
plain, the bytes stored per payload, and the transaction IDs a claim batch took (the median: the
count is cluster-wide). jobctl._unseal opens each payload inside an exception block, a
subtransaction, which must not take an XID of its own. Prints JSON lines and a table; a full run
also writes benchmarks/results/sealing.jsonl.

    .venv/bin/python benchmarks/sealing.py            # 15 rounds of 200 jobs
    .venv/bin/python benchmarks/sealing.py --small    # 3 rounds of 50
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import time
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from psycopg.types.json import Jsonb

PAYLOAD = {"user": "ada@example.com", "items": list(range(40)), "note": "x" * 200}
TENANTS = {"encrypted": "t_sealed", "plain": "t_plain"}


def xid_now(c: psycopg.Connection[Any]) -> int:
    row = c.execute("select txid_snapshot_xmax(txid_current_snapshot())").fetchone()
    assert row is not None
    return int(row[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="3 rounds of 50 jobs")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    rounds, batch = (3, 50) if args.small else (15, 200)
    base = args.url or cluster_url("postgres")
    dsn = fresh_database(base, "jobctl_sealing")
    submit_ms: dict[str, list[float]] = {k: [] for k in TENANTS}
    claim_ms: dict[str, list[float]] = {k: [] for k in TENANTS}
    claim_xids: dict[str, list[int]] = {k: [] for k in TENANTS}
    with psycopg.connect(dsn, autocommit=True) as c:
        keys = {TENANTS["encrypted"]: secrets.token_hex(32)}
        c.execute("select set_config('jobctl.payload_keys', %s, false)", (json.dumps(keys),))
        c.execute("select jobctl.put_tenant(%s, encrypt_payloads => true)", (TENANTS["encrypted"],))
        c.execute("select jobctl.put_tenant(%s)", (TENANTS["plain"],))
        for r in range(rounds):
            for kind in list(TENANTS) if r % 2 else list(reversed(TENANTS)):
                tenant = TENANTS[kind]
                jobs = Jsonb([{"tenant_id": tenant, "queue": tenant, "payload": PAYLOAD}] * batch)
                t0 = time.perf_counter()
                c.execute("select jobctl.submit_jobs(%s)", (jobs,))
                submit_ms[kind].append((time.perf_counter() - t0) * 1000)
                x0 = xid_now(c)
                t0 = time.perf_counter()
                got: list[Any] = []
                for _ in range(10):  # a claim may come back short (a slot rotation between its rounds)
                    got += c.execute(
                        "select payload from jobctl.claim_job('w', %s, %s)", ([tenant], batch - len(got))
                    ).fetchall()
                    if len(got) == batch:
                        break
                claim_ms[kind].append((time.perf_counter() - t0) * 1000)
                claim_xids[kind].append(xid_now(c) - x0)
                assert len(got) == batch and all(p == PAYLOAD for (p,) in got), (
                    "a claim did not open its payloads"
                )
        stored = {
            kind: c.execute(
                "select avg(octet_length(payload::text))::int from jobctl.job where tenant_id = %s", (t,)
            ).fetchone()
            for kind, t in TENANTS.items()
        }
    results = []
    for kind in TENANTS:
        row = {
            "tenant": kind,
            "rounds": rounds,
            "batch": batch,
            "submit_ms_median": round(statistics.median(submit_ms[kind]), 2),
            "claim_ms_median": round(statistics.median(claim_ms[kind]), 2),
            "stored_bytes": (stored[kind] or [0])[0],
            "claim_xids_median": statistics.median(claim_xids[kind]),
        }
        results.append(row)
    enc, plain = results
    ratios = {
        "ratio": "encrypted/plain",
        "submit": round(enc["submit_ms_median"] / plain["submit_ms_median"], 2),
        "claim": round(enc["claim_ms_median"] / plain["claim_ms_median"], 2),
        "submit_us_per_job_extra": round(
            (enc["submit_ms_median"] - plain["submit_ms_median"]) * 1000 / batch, 1
        ),
        "claim_us_per_job_extra": round(
            (enc["claim_ms_median"] - plain["claim_ms_median"]) * 1000 / batch, 1
        ),
    }
    results.append(ratios)
    for row in results:
        print(json.dumps(row), flush=True)
    finish(base, "jobctl_sealing", results, None if args.small else "sealing.jsonl")
    print(f"\n  {'tenant':10} {'submit ms':>10} {'claim ms':>9} {'bytes':>6} {'claim XIDs':>11}", end="")
    print(f"   (batches of {batch})")
    for r in (enc, plain):
        times = f"{r['submit_ms_median']:>10} {r['claim_ms_median']:>9}"
        print(f"  {r['tenant']:10} {times} {r['stored_bytes']:>6} {r['claim_xids_median']:>11}")
    print(
        f"  encrypted/plain: submit {ratios['submit']}x (+{ratios['submit_us_per_job_extra']} us a job), "
        f"claim {ratios['claim']}x (+{ratios['claim_us_per_job_extra']} us a job)"
    )


if __name__ == "__main__":
    main()
