"""Concurrency keys and paused queues at scale (two bars: drain and claim cost), on the benchmark cluster.

1. keys: one tenant whose keys have limit 1 (its default), N distinct keys with two jobs each (the
   second waits in _held and is admitted by the first's completion), then C claimers claiming B at
   a time and completing at once until none is left: drain jobs/s, and the claim p50/p99 of those
   calls. The same 2N jobs without keys, in the same run, as the reference.
2. paused: C claimers claiming one job at a time (each followed by its completion) from queue
   `other` with 10,000 jobs due over 100 tenants, first alone, then beside a paused queue holding
   M jobs of the same tenants: claim p50/p99 both times, and their ratio.

    .venv/bin/python benchmarks/limits.py                      # N 100,000, M 1,000,000 (make bench-limits)
    .venv/bin/python benchmarks/limits.py --keys 5000 --paused 20000 --small
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url

CLAIM = "select job_id, lease_epoch from jobctl.claim_job('bench', %s, %s)"
DONE = "select count(*) from jobctl.complete_jobs(%s, %s)"


def submit(dsn: str, tenant_of: Any, queue: str, n: int, keys: int | None) -> None:
    """n jobs in batches of 10,000, job g with key k<g mod keys> (keys None: none); generate_series in
    SQL: the load is not what is measured."""
    with psycopg.connect(dsn, autocommit=True) as c:
        for start in range(0, n, 10000):
            c.execute(
                """select count(*) from jobctl.submit_jobs((
                       select jsonb_agg(
                           jsonb_build_object(
                               'tenant_id', %s::text || (g %% %s), 'queue', %s::text, 'payload', '{}'::jsonb
                           ) || case when %s::int is not null
                               then jsonb_build_object('concurrency_key', 'k' || (g %% %s::int))
                               else '{}'::jsonb end)
                       from generate_series(%s::int, %s::int) as g))""",
                (tenant_of[0], tenant_of[1], queue, keys, keys, start, min(start + 10000, n) - 1),
            )


def _drainer(dsn: str, queue: str, batch: int, barrier: Any, out: Any) -> None:
    lat: list[float] = []
    done = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        empty = 0
        while empty < 3:
            t = time.perf_counter()
            rows = c.execute(CLAIM, ([queue], batch)).fetchall()
            lat.append(time.perf_counter() - t)
            if not rows:
                empty += 1
                time.sleep(0.01)
                continue
            empty = 0
            c.execute(DONE, ([r[0] for r in rows], [r[1] for r in rows]))
            done += len(rows)
    out.put((lat, done))


def drain(dsn: str, queue: str, claimers: int, batch: int) -> dict[str, Any]:
    barrier = mp.Barrier(claimers + 1)
    out: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    procs = [mp.Process(target=_drainer, args=(dsn, queue, batch, barrier, out)) for _ in range(claimers)]
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    got = [out.get() for _ in procs]
    seconds = time.perf_counter() - t0 - 0.03  # the last three empty claims' sleeps
    for p in procs:
        p.join()
    lat = sorted(x for lats, _ in got for x in lats)
    done = sum(n for _, n in got)
    return {
        "jobs": done,
        "jobs_per_s": round(done / seconds),
        "claim_p50_ms": round(1000 * statistics.median(lat), 2),
        "claim_p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2),
    }


def _single(dsn: str, calls: int, barrier: Any, out: Any) -> None:
    lat: list[float] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        for _ in range(calls):
            t = time.perf_counter()
            rows = c.execute(CLAIM, (["other"], 1)).fetchall()
            lat.append(time.perf_counter() - t)
            c.execute(DONE, ([r[0] for r in rows], [r[1] for r in rows]))
    out.put(lat)


def single_claims(dsn: str, claimers: int, calls: int) -> dict[str, float]:
    barrier = mp.Barrier(claimers)
    out: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    procs = [mp.Process(target=_single, args=(dsn, calls, barrier, out)) for _ in range(claimers)]
    for p in procs:
        p.start()
    lat = sorted(x for _ in procs for x in out.get())
    for p in procs:
        p.join()
    return {
        "claim_p50_ms": round(1000 * statistics.median(lat), 2),
        "claim_p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=100_000, help="jobs, each with its own key at limit 1")
    ap.add_argument("--paused", type=int, default=1_000_000, help="jobs in the paused queue")
    ap.add_argument("--claimers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=100, help="jobs a drain claim asks for")
    ap.add_argument("--calls", type=int, default=300, help="single claims per claimer, paused scenario")
    ap.add_argument("--small", action="store_true", help="a scaled-down run: nothing is kept")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    a = ap.parse_args()
    base = a.url or cluster_url("postgres")
    rows: list[dict[str, Any]] = []

    for keyed in (False, True):
        dsn = fresh_database(base, "jobctl_limits")
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("select jobctl.put_tenant('kt')")
            c.execute("select jobctl.put_concurrency_limit('kt', null, 1)")
        submit(dsn, ("kt", 1), "keys", 2 * a.keys, a.keys if keyed else None)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("vacuum analyze")
        row = {"scenario": "keys" if keyed else "no keys", "keys": a.keys if keyed else 0}
        row |= drain(dsn, "keys", a.claimers, a.batch)
        print(json.dumps(row), flush=True)
        rows.append(row)

    dsn = fresh_database(base, "jobctl_limits")
    submit(dsn, ("t", 100), "other", 10000 + a.claimers * a.calls * 2, None)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("vacuum analyze")
    alone = single_claims(dsn, a.claimers, a.calls)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select jobctl.pause_queue('big')")
    submit(dsn, ("t", 100), "big", a.paused, None)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("vacuum analyze")
    beside = single_claims(dsn, a.claimers, a.calls)
    row = {
        "scenario": "paused queue",
        "paused_jobs": a.paused,
        "alone": alone,
        "beside_paused": beside,
        "p99_ratio": round(beside["claim_p99_ms"] / alone["claim_p99_ms"], 2),
    }
    print(json.dumps(row), flush=True)
    rows.append(row)
    finish(base, "jobctl_limits", rows, None if a.small else "limits.jsonl")

    k, plain = (next(r for r in rows if r["scenario"] == s) for s in ("keys", "no keys"))
    print(
        f"\nkeys: {a.keys:,} keys at limit 1, two jobs each: {k['jobs_per_s']:,} jobs/s, claim p50/p99 "
        f"{k['claim_p50_ms']} / {k['claim_p99_ms']} ms; without keys {plain['jobs_per_s']:,} jobs/s, "
        f"{plain['claim_p50_ms']} / {plain['claim_p99_ms']} ms"
    )
    print(
        f"paused queue of {a.paused:,} jobs: other queue's single claims p50/p99 {alone['claim_p50_ms']} / "
        f"{alone['claim_p99_ms']} ms alone, {beside['claim_p50_ms']} / {beside['claim_p99_ms']} ms beside it "
        f"({row['p99_ratio']}x)"
    )


if __name__ == "__main__":
    main()
