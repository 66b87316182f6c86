"""Tenant scenarios on the benchmark cluster: weighted shares, the noisy neighbour, an outage, a claim rate.

- weighted: three saturated tenants with weights 5:3:1 (backlogs in the same ratio), C claimers
  claiming B jobs a call and completing them, for S seconds: each tenant's share of the claims in
  the middle 80 % of the run against its weight's share (bar: within 5 %).
- noisy: tenant `big` submits J jobs at once; then 100 small tenants submit 10 jobs a second each
  while the C claimers run at full speed for S seconds: the small tenants' wait from submit to claim
  (bar: p99 under 1 s, whatever J is) and the claims the big tenant got meanwhile.
- outage: J jobs across T tenants (one in ten with a claim rate), all delayed to the same moment, as
  after an outage: from that moment the claimers catch up. Catch-up speed, how evenly the tenants
  finish (the spread of their last claims), and the rate-limited tenants' worst 1 s window; beside
  the same load claimed in steady state (all due as submitted), each in a fresh database.
- claim_rate: tenant `r` with claim rate 50/s and burst 10 beside tenant `u`'s backlog, 8 claimers
  for S seconds: `r`'s most claims in any 1 s and 10 s window against rate x window + burst.
Prints JSON lines and a table; a full run also writes benchmarks/results/tenants.jsonl.

    .venv/bin/python benchmarks/tenants.py            # 60 s of weights, 1,000,000 big jobs
    .venv/bin/python benchmarks/tenants.py --small    # scaled down (tests/test_bench_smoke.py)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from collections.abc import Callable
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from jobctl import queries
from jobctl.worker.heartbeats import TICK_EVERY
from psycopg.types.json import Jsonb

WEIGHTS = {"w5": 5, "w3": 3, "w1": 1}
SMALL_TENANTS = 100
SMALL_RATE = 10  # jobs a second per small tenant
RATE_CLAIMERS = 8
SIZES: dict[str, dict[str, Any]] = {
    # backlog: jobs per unit of weight, enough that no tenant runs dry at ~20,000 claims a second
    "full": {
        "seconds": 60,
        "backlog": 300_000,
        "big": 1_000_000,
        "noisy_seconds": 30,
        "outage": 1_000_000,
        "tenants": 1000,
        "rate_seconds": 60,
        "rate_windows": [1, 10],
    },
    "small": {
        "seconds": 3,
        "backlog": 12_000,
        "big": 20_000,
        "noisy_seconds": 3,
        "outage": 10_000,
        "tenants": 100,
        "rate_seconds": 4,
        "rate_windows": [1, 2],
    },
}


def submit(dsn: str, specs: list[dict[str, Any]]) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        for i in range(0, len(specs), 1000):
            c.execute("select count(*) from jobctl.submit_jobs(%s)", (Jsonb(specs[i : i + 1000]),))


def backlog(dsn: str, tenant: str, n: int) -> None:
    submit(dsn, [{"tenant_id": tenant, "queue": "q", "payload": {}} for _ in range(n)])


def claimer(
    dsn: str, batch: int, seconds: float, barrier: Any, calls: Any, until_empty: bool = False,
    idle: float = 0.01,
) -> None:  # fmt: skip
    """Claims and completes until the time is up (or, until_empty, no job waits any more), sleeping
    `idle` s after a claim that got nothing, and calls jobctl.tick(false) every TICK_EVERY s as the
    worker does; puts (epoch, round trip s, jobs) of each claim call that got jobs on `calls`, as one
    list. (benchmarks/held_snapshot.py runs it too.)"""
    made = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        end = time.monotonic() + seconds
        tick_at = time.monotonic()
        while time.monotonic() < end:
            if time.monotonic() >= tick_at:
                c.execute(queries.TICK)
                tick_at += TICK_EVERY
            started = time.perf_counter()
            rows = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job('bench', null, %s)", (batch,)
            ).fetchall()
            if rows:
                made.append((time.time(), time.perf_counter() - started, len(rows)))
                c.execute(
                    "select count(*) from jobctl.complete_jobs(%s, %s)",
                    ([r[0] for r in rows], [r[1] for r in rows]),
                )
                continue
            if until_empty and not jobs_waiting(c):
                break
            time.sleep(idle)
    calls.put(made)


def jobs_waiting(c: psycopg.Connection[Any]) -> bool:
    row = c.execute(
        "select exists (select from jobctl._ready) or exists (select from jobctl._delayed)"
    ).fetchone()
    return bool(row and row[0])


def small_producer(dsn: str, seconds: float, barrier: Any) -> None:
    """Every 1/SMALL_RATE s one job for each small tenant, on an absolute schedule."""
    specs = [{"tenant_id": f"s{i:03}", "queue": "q", "payload": {}} for i in range(SMALL_TENANTS)]
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        start = time.monotonic()
        for k in range(int(seconds * SMALL_RATE)):
            delay = start + k / SMALL_RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            c.execute("select count(*) from jobctl.submit_jobs(%s)", (Jsonb(specs),))


def run_claimers(
    dsn: str, claimers: int, batch: int, seconds: float, producer: bool = False, until_empty: bool = False
) -> tuple[float, dict[str, float]]:
    """Start the claimers (and the small tenants' producer) together; returns the start's epoch and
    the p50 / p99 in ms of the claim calls that got jobs (round trips from the claimer)."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(claimers + (1 if producer else 0) + 1)
    calls = ctx.Queue()
    procs = [
        ctx.Process(target=claimer, args=(dsn, batch, seconds, barrier, calls, until_empty))
        for _ in range(claimers)
    ]
    if producer:
        procs.append(ctx.Process(target=small_producer, args=(dsn, seconds, barrier)))
    for p in procs:
        p.start()
    barrier.wait()
    started = time.time()
    took = sorted(call[1] for _ in range(claimers) for call in calls.get(timeout=seconds + 120))
    for p in procs:
        p.join(timeout=seconds + 120)
        assert p.exitcode == 0, p.exitcode
    return started, {
        "claim_p50_ms": round(1000 * took[len(took) // 2], 2),
        "claim_p99_ms": round(1000 * took[99 * len(took) // 100], 2),
    }


def weighted(fresh: Callable[[], str], size: dict[str, Any], claimers: int, batch: int) -> dict[str, Any]:
    dsn = fresh()
    for tenant, weight in WEIGHTS.items():
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("select jobctl.put_tenant(%s, weight => %s)", (tenant, weight))
        backlog(dsn, tenant, size["backlog"] * weight)
    seconds = size["seconds"]
    t0, _ = run_claimers(dsn, claimers, batch, seconds)
    lo, hi = t0 + 0.1 * seconds, t0 + 0.9 * seconds  # the middle 80 %: every claimer running
    with psycopg.connect(dsn) as c:
        rows = c.execute(
            """select tenant_id, count(*) filter (where extract(epoch from started_at) between %s and %s),
                   count(*) filter (where state = 'pending')
               from jobctl.job where tenant_id = any(%s) group by 1""",
            (lo, hi, list(WEIGHTS)),
        ).fetchall()
    claimed = {str(r[0]): int(r[1]) for r in rows}
    left = {str(r[0]): int(r[2]) for r in rows}
    total = sum(claimed.values())
    total_weight = sum(WEIGHTS.values())
    shares = {t: {"claims": claimed[t], "share": round(claimed[t] / total, 4),
                  "expected": round(w / total_weight, 4),
                  "deviation_pct": round(100 * (claimed[t] / total / (w / total_weight) - 1), 2)}
              for t, w in WEIGHTS.items()}  # fmt: skip
    return {
        "scenario": "weighted",
        "seconds": seconds,
        "claimers": claimers,
        "batch": batch,
        "claims_per_s": round(total / (hi - lo)),
        "saturated": all(n > 0 for n in left.values()),
        "tenants": shares,
        "max_abs_deviation_pct": max(abs(s["deviation_pct"]) for s in shares.values()),
    }


def noisy(fresh: Callable[[], str], size: dict[str, Any], claimers: int, batch: int) -> dict[str, Any]:
    dsn = fresh()
    backlog(dsn, "big", size["big"])
    seconds = size["noisy_seconds"]
    t0, _ = run_claimers(dsn, claimers, batch, seconds, producer=True)
    with psycopg.connect(dsn) as c:
        waits = [
            float(r[0])  # type: ignore[arg-type]
            for r in c.execute(
                """select extract(epoch from started_at - created_at) from jobctl.job
                   where tenant_id <> 'big' and started_at is not null"""
            )
        ]
        row = c.execute(
            """select count(*) filter (where tenant_id <> 'big'),
                   count(*) filter (where tenant_id <> 'big' and started_at is null),
                   count(*) filter (
                       where tenant_id = 'big' and extract(epoch from started_at) between %s and %s
                   )
               from jobctl.job""",
            (t0, t0 + seconds),
        ).fetchone()
    assert row is not None
    small_jobs, small_unclaimed, big_claimed = (int(v) for v in row)  # type: ignore[call-overload]
    waits.sort()
    return {
        "scenario": "noisy",
        "seconds": seconds,
        "claimers": claimers,
        "batch": batch,
        "big_backlog": size["big"],
        "small_tenants": SMALL_TENANTS,
        "small_jobs": small_jobs,
        "small_unclaimed": small_unclaimed,
        "small_wait_p50_ms": round(1000 * statistics.median(waits), 1) if waits else None,
        "small_wait_p99_ms": round(1000 * waits[int(0.99 * (len(waits) - 1))], 1) if waits else None,
        "big_claims_per_s": round(big_claimed / seconds),
    }


def catch_up(dsn: str, size: dict[str, Any], claimers: int, batch: int, after_outage: bool) -> dict[str, Any]:
    """J jobs across T tenants, one in ten with claim rate 20/s, claimed until none is left: either
    due as they are submitted (the steady baseline) or all delayed to one moment (after an outage)."""
    tenants, per = size["tenants"], size["outage"] // size["tenants"]
    rated = [f"o{i:04}" for i in range(0, tenants, 10)]
    with psycopg.connect(dsn, autocommit=True) as c:
        for t in rated:
            c.execute("select jobctl.put_tenant(%s, claim_rate => 20, claim_burst => 5)", (t,))
        # due once every job is in: the load runs at ~40,000 jobs a second
        due = c.execute("select now() + make_interval(secs => %s)", (5 + size["outage"] / 20_000,)).fetchone()
    assert due is not None
    run_at = {"run_at": due[0].isoformat()} if after_outage else {}
    submit(dsn, [{"tenant_id": f"o{i:04}", "queue": "q", "payload": {}, **run_at}
                 for _ in range(per) for i in range(tenants)])  # fmt: skip
    if after_outage:
        with psycopg.connect(dsn) as c:
            wait = c.execute("select extract(epoch from %s - clock_timestamp())", (due[0],)).fetchone()
        assert wait is not None and float(wait[0]) > 0, "the load took longer than planned"  # type: ignore[arg-type]
        time.sleep(float(wait[0]))  # type: ignore[arg-type]
    # the claimers stop when no job is left (the rate-limited tenants' last at ~per / 20 s)
    t0, claims = run_claimers(dsn, claimers, batch, per / 20 + size["outage"] / 2_000 + 10, until_empty=True)
    with psycopg.connect(dsn) as c:
        rows = c.execute(
            """select extract(epoch from max(started_at)), count(started_at) from jobctl.job
               where tenant_id <> all(%s) group by tenant_id""",
            (rated,),
        ).fetchall()
        # each rate-limited tenant's most claims in any 1 s
        worst = c.execute(
            """select max(n) from (
                   select count(*) over (
                       partition by tenant_id order by started_at
                       range between interval '1 second' preceding and current row
                   ) as n
                   from jobctl.job where tenant_id = any(%s) and started_at is not null
               ) as w""",
            (rated,),
        ).fetchone()
    assert worst is not None
    done_at = sorted(float(r[0]) for r in rows if r[0] is not None)  # type: ignore[arg-type]
    claimed = sum(int(r[1]) for r in rows)  # type: ignore[call-overload]
    return {
        "unrated_claimed": claimed,
        "unrated_jobs": size["outage"] - len(rated) * per,
        "jobs_per_s": round(claimed / (done_at[-1] - t0)),
        # when the tenants without a rate finished: first to last, and p10 / p90 from the start
        "finish_spread_s": round(done_at[-1] - done_at[0], 2),
        "finish_p10_p90_s": [
            round(done_at[len(done_at) // 10] - t0, 2),
            round(done_at[9 * len(done_at) // 10] - t0, 2),
        ],
        "rated_tenants": len(rated),
        "rated_worst_1s": int(worst[0]),  # type: ignore[call-overload]
        **claims,
    }


def outage(fresh: Callable[[], str], size: dict[str, Any], claimers: int, batch: int) -> dict[str, Any]:
    """The outage's catch-up beside the same load claimed in steady state, each in a fresh database."""
    steady = catch_up(fresh(), size, claimers, batch, after_outage=False)
    row = catch_up(fresh(), size, claimers, batch, after_outage=True)
    return {
        "scenario": "outage",
        "jobs": size["outage"],
        "tenants": size["tenants"],
        "claimers": claimers,
        "batch": batch,
        **row,
        "steady_jobs_per_s": steady["jobs_per_s"],
        "steady_finish_spread_s": steady["finish_spread_s"],
        "speed_vs_steady": round(row["jobs_per_s"] / steady["jobs_per_s"], 2),
        "steady_claim_p50_ms": steady["claim_p50_ms"],
        "steady_claim_p99_ms": steady["claim_p99_ms"],
        "rated_bound_1s": 20 + 5,
    }


def claim_rate(fresh: Callable[[], str], size: dict[str, Any], claimers: int, batch: int) -> dict[str, Any]:
    """Tenant `r` (claim rate 50/s, burst 10) beside tenant `u` and its backlog, RATE_CLAIMERS claimers
    for S seconds: `r`'s most claims in any window of each length against rate x window + burst."""
    dsn = fresh()
    seconds = size["rate_seconds"]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select jobctl.put_tenant('r', claim_rate => 50, claim_burst => 10)")
    backlog(dsn, "r", 50 * seconds * 2)
    backlog(dsn, "u", size["backlog"])
    t0, _ = run_claimers(dsn, RATE_CLAIMERS, batch, seconds)
    worst = {}
    with psycopg.connect(dsn) as c:
        for window in size["rate_windows"]:
            row = c.execute(
                """select max(n) from (
                       select count(*) over (
                           order by started_at
                           range between make_interval(secs => %s) preceding and current row
                       ) as n
                       from jobctl.job where tenant_id = 'r' and started_at is not null
                   ) as w""",
                (window,),
            ).fetchone()
            assert row is not None
            worst[str(window)] = int(row[0])  # type: ignore[call-overload]
        row = c.execute(
            """select count(*) filter (where tenant_id = 'r' and started_at is not null),
                   count(*) filter (where tenant_id = 'u' and started_at is not null),
                   extract(epoch from max(started_at) filter (where tenant_id = 'u')) - %s
               from jobctl.job""",
            (t0,),
        ).fetchone()
    assert row is not None
    rated, other, drained = int(row[0]), int(row[1]), float(row[2])  # type: ignore[arg-type]
    return {
        "scenario": "claim_rate",
        "seconds": seconds,
        "claimers": RATE_CLAIMERS,
        "batch": batch,
        "rate": 50,
        "burst": 10,
        "rated_claims": rated,
        "rated_bound": 50 * seconds + 10,
        "worst": worst,
        "bound": {w: 50 * int(w) + 10 for w in worst},
        # u's backlog keeps the claimers busy at first; once it is drained all of them contend for r
        "other_claims": other,
        "other_drained_after_s": round(drained, 1) if other == size["backlog"] else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="scaled down: seconds, not minutes")
    ap.add_argument("--claimers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=50, help="jobs per claim")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    size = SIZES["small" if args.small else "full"]
    base = args.url or cluster_url("postgres")
    results = []
    for scenario in (weighted, noisy, outage, claim_rate):
        row = scenario(lambda: fresh_database(base, "jobctl_tenants"), size, args.claimers, args.batch)
        print(json.dumps(row), flush=True)
        results.append(row)
    finish(base, "jobctl_tenants", results, None if args.small else "tenants.jsonl")
    w, n, o, r = results
    print(
        f"\nweighted 5:3:1, {w['claimers']} claimers x {w['batch']}, {w['seconds']} s, "
        f"{w['claims_per_s']} claims/s, saturated: {w['saturated']}"
    )
    print(f"  {'tenant':6} {'claims':>8} {'share':>7} {'expected':>9} {'deviation':>10}")
    for t, s in w["tenants"].items():
        print(f"  {t:6} {s['claims']:>8} {s['share']:>7} {s['expected']:>9} {s['deviation_pct']:>9}%")
    print(
        f"noisy neighbour: big backlog {n['big_backlog']}, {n['small_tenants']} tenants x {SMALL_RATE}/s: "
        f"small wait p50 {n['small_wait_p50_ms']} ms, p99 {n['small_wait_p99_ms']} ms, "
        f"{n['small_unclaimed']} of {n['small_jobs']} unclaimed; big got {n['big_claims_per_s']} claims/s"
    )
    print(
        f"outage: {o['jobs']} jobs across {o['tenants']} tenants due at once: caught up at "
        f"{o['jobs_per_s']} jobs/s ({o['speed_vs_steady']}x the same load claimed in steady state, "
        f"{o['steady_jobs_per_s']} jobs/s); tenants finished within {o['finish_spread_s']} s of each other "
        f"(p10 {o['finish_p10_p90_s'][0]} s, p90 {o['finish_p10_p90_s'][1]} s); "
        f"rate-limited tenants' worst 1 s: {o['rated_worst_1s']} claims (bound {o['rated_bound_1s']}); "
        f"claim call p50/p99 {o['claim_p50_ms']}/{o['claim_p99_ms']} ms "
        f"(steady {o['steady_claim_p50_ms']}/{o['steady_claim_p99_ms']} ms)"
    )
    print(
        f"claim rate 50/s burst 10, {r['claimers']} claimers x {r['batch']}, {r['seconds']} s: "
        f"{r['rated_claims']} claims (bound {r['rated_bound']}); "
        + ", ".join(f"worst {w} s {r['worst'][w]} (bound {r['bound'][w]})" for w in r["worst"])
        + f"; tenant u beside it: {r['other_claims']} claims, drained after {r['other_drained_after_s']} s"
    )


if __name__ == "__main__":
    main()
