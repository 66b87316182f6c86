"""The claim path under MVCC pressure: a REPEATABLE READ transaction held open while jobs flow.

On the benchmark cluster, in a fresh database:
1. calibrate: a producer submitting as fast as it can beside C claimers (claim B, complete them)
   for S seconds: the clean maximum flow (jobs completed a second);
2. baseline: the producer offers half that rate (batches on an absolute schedule) for S seconds;
3. hold: another session opens a REPEATABLE READ transaction, takes its snapshot and sits idle
   for H seconds (the xmin horizon stays there), while the flow goes on;
4. recovery: the transaction ends; the flow goes on for R seconds.
Every 5 s a sampler records the claim-path relations' sizes (with indexes) and their dead tuples,
updates, HOT updates and live rows (pg_stat_all_tables), and pg_class's, which each truncation of a
slot partition updates: updates a second per live row tell a hot row (the one-row lane cache) from
many rows updated once or twice each (job). Per phase (and per
30 s window of the hold): claim p50 / p99 (round trips of calls that got jobs), completed jobs a
second against the offered rate, and how much each relation grew. After the hold: how long until
claim p99 is back within 1.2x its baseline. Prints JSON lines and a table; a full run also writes
benchmarks/results/held_snapshot.jsonl.
--statements: where the time goes, from pg_stat_statements (tracking the statements inside the
functions too) over the baseline and over the hold: the statements that took the most, calls a
second and mean ms. Needs pg_stat_statements in shared_preload_libraries (its tracking costs a
little: a full run writes held_snapshot_statements.jsonl instead).

    .venv/bin/python benchmarks/held_snapshot.py            # S 60 s, H 600 s, R 120 s
    .venv/bin/python benchmarks/held_snapshot.py --small    # S 6 s, H 20 s, R 5 s
    .venv/bin/python benchmarks/held_snapshot.py --runs 3   # three runs, each in a fresh database
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from psycopg.types.json import Jsonb
from tenants import claimer

# jobctl's, and pg_class: every truncation of a slot partition writes its rows anew (never HOT)
RELATIONS = ("_ready", "_delayed", "_running", "_lane_cache", "tenant", "job", "_event", "pg_class")
SIZES = {
    "full": {"steady": 60, "hold": 600, "recovery": 120},
    "small": {"steady": 6, "hold": 20, "recovery": 5},
}
TENANTS = 10

STATEMENTS = """
select calls, total_exec_time, regexp_replace(query, '\\s+', ' ', 'g')
from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
order by total_exec_time desc limit 15
"""

SAMPLE = """
select r.name, coalesce(sum(pg_total_relation_size(x.relid)), 0)::bigint,
    coalesce(sum(s.n_dead_tup), 0)::bigint, coalesce(sum(s.n_tup_upd), 0)::bigint,
    coalesce(sum(s.n_tup_hot_upd), 0)::bigint, coalesce(sum(s.n_tup_del), 0)::bigint,
    coalesce(sum(s.n_live_tup), 0)::bigint
from unnest(%s::text[]) as r (name)
cross join lateral (
    select coalesce(to_regclass('jobctl.' || r.name), to_regclass('pg_catalog.' || r.name))::oid as relid
    union all
    select i.inhrelid from pg_inherits as i where i.inhparent = to_regclass('jobctl.' || r.name)
) as x
left join pg_stat_all_tables as s on s.relid = x.relid
group by r.name
"""


def producer(dsn: str, rate: float, seconds: float, barrier: Any, done: Any) -> None:
    """rate jobs a second in batches every 20 ms on an absolute schedule (rate 0: flat out)."""
    batch = max(1, round(rate * 0.02)) if rate else 100
    specs = [{"tenant_id": f"t{i % TENANTS}", "queue": "q", "payload": {"n": i}} for i in range(batch)]
    sent = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        start = time.monotonic()
        k = 0
        while time.monotonic() - start < seconds:
            if rate:
                delay = start + k * 0.02 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            c.execute("select count(*) from jobctl.submit_jobs(%s)", (Jsonb(specs),))
            sent += batch
            k += 1
    done.put(sent)


def holder(dsn: str, start_after: float, hold: float, barrier: Any) -> None:
    """A REPEATABLE READ transaction that takes its snapshot and then sits idle."""
    with psycopg.connect(dsn) as c:
        barrier.wait()
        time.sleep(start_after)
        c.execute("set transaction isolation level repeatable read")
        c.execute("select 1")  # the snapshot is taken: the xmin horizon stays here until the end
        time.sleep(hold)
        c.rollback()


def flow(dsn: str, rate: float, seconds: float, claimers: int, batch: int, hold: tuple[float, float] | None,
         sampler: Any = None) -> tuple[float, int, list[tuple[float, float, int]]]:  # fmt: skip
    """Run a producer, the claimers and optionally the holder; returns the start epoch, the jobs
    sent and every claim call."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(claimers + 2 + (1 if hold else 0))
    done, made = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=producer, args=(dsn, rate, seconds, barrier, done))]
    procs += [
        ctx.Process(target=claimer, args=(dsn, batch, seconds, barrier, made), kwargs={"idle": 0.005})
        for _ in range(claimers)
    ]
    if hold:
        procs.append(ctx.Process(target=holder, args=(dsn, hold[0], hold[1], barrier)))
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.time()
    if sampler:
        sampler(t0, seconds)
    sent = done.get(timeout=seconds + 300)
    calls = [call for _ in range(claimers) for call in made.get(timeout=seconds + 300)]
    for p in procs:
        p.join(timeout=seconds + 300)
        assert p.exitcode == 0, p.exitcode
    return t0, sent, calls


def window(calls: list[tuple[float, float, int]], lo: float, hi: float) -> dict[str, Any]:
    took = sorted(c[1] for c in calls if lo <= c[0] < hi)
    jobs = sum(c[2] for c in calls if lo <= c[0] < hi)
    if not took:
        return {"claims": 0, "jobs_per_s": 0}
    return {
        "claims": len(took),
        "claim_p50_ms": round(1000 * took[len(took) // 2], 2),
        "claim_p99_ms": round(1000 * took[99 * len(took) // 100], 2),
        "jobs_per_s": round(jobs / (hi - lo)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="seconds, not minutes")
    ap.add_argument("--claimers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    ap.add_argument("--statements", action="store_true", help="where the time goes (pg_stat_statements)")
    ap.add_argument("--runs", type=int, default=1, help="runs one after another, each in a fresh database")
    args = ap.parse_args()
    base = args.url or cluster_url("postgres")
    kept = []
    for run in range(1, args.runs + 1):
        kept += one_run(args, base, run)
    name = "held_snapshot_statements.jsonl" if args.statements else "held_snapshot.jsonl"
    finish(base, "jobctl_held", kept, None if args.small else name)


def one_run(args: argparse.Namespace, base: str, run: int) -> list[dict[str, Any]]:
    """One run of the four phases; its calibration row and its result row."""
    size = SIZES["small" if args.small else "full"]
    dsn = fresh_database(base, "jobctl_held")
    steady, hold, recovery = size["steady"], size["hold"], size["recovery"]

    t0, sent, calls = flow(dsn, 0, steady, args.claimers, args.batch, None)
    max_flow = window(calls, t0 + 1, t0 + steady)["jobs_per_s"]
    rate = max_flow / 2
    calib = {
        "scenario": "calibrate",
        "run": run,
        "max_flow_jobs_per_s": max_flow,
        "offered_jobs_per_s": round(rate),
    }
    print(json.dumps(calib), flush=True)

    samples: list[dict[str, Any]] = []
    statements: dict[str, list[dict[str, Any]]] = {}
    # (seconds into the flow, the phase whose statements are read there; a reset follows)
    marks = [(steady, "baseline"), (steady + hold, "hold")] if args.statements else []

    def sampler(start: float, seconds: float) -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            if marks:
                c.execute("select pg_stat_statements_reset()")
            since = 0.0
            while time.time() < start + seconds:
                rows = c.execute(SAMPLE, (list(RELATIONS),)).fetchall()
                samples.append({"t": round(time.time() - start, 1),
                                **{str(r[0]): [int(v) for v in r[1:]] for r in rows}})  # fmt: skip
                while marks and time.time() - start >= marks[0][0]:
                    took = time.time() - start - since
                    statements[marks[0][1]] = [
                        {
                            "per_s": round(n / took, 1),
                            "mean_ms": round(ms / n, 3),
                            "ms_per_s": round(ms / took, 1),
                            "query": str(q)[:110],
                        }  # fmt: skip
                        for n, ms, q in c.execute(STATEMENTS).fetchall()
                    ]
                    c.execute("select pg_stat_statements_reset()")
                    since = time.time() - start
                    marks.pop(0)
                time.sleep(5 - (time.time() - start) % 5)

    total = steady + hold + recovery
    dsn = fresh_database(base, "jobctl_held")  # without the calibration's backlog
    if args.statements:
        with psycopg.connect(dsn, autocommit=True) as c:
            if "pg_stat_statements" not in str(c.execute("show shared_preload_libraries").fetchone()):
                raise SystemExit("--statements needs pg_stat_statements in shared_preload_libraries")
            c.execute("create extension if not exists pg_stat_statements")
            c.execute(f"alter database {c.info.dbname} set pg_stat_statements.track = 'all'")
    t0, sent, calls = flow(dsn, rate, total, args.claimers, args.batch, (steady, hold), sampler)
    phases = {
        "baseline": window(calls, t0 + 1, t0 + steady),
        "hold": window(calls, t0 + steady, t0 + steady + hold),
        "hold_last_third": window(calls, t0 + steady + 2 * hold / 3, t0 + steady + hold),
        "recovery": window(calls, t0 + steady + hold, t0 + total),
    }
    windows = [window(calls, t0 + steady + w, t0 + steady + w + 30) for w in range(0, int(hold), 30)]
    base_p99 = phases["baseline"].get("claim_p99_ms")
    back = None
    for w in range(0, int(recovery) - 9, 5):
        p99 = window(calls, t0 + steady + hold + w, t0 + steady + hold + w + 10).get("claim_p99_ms")
        if base_p99 and p99 is not None and p99 <= 1.2 * base_p99:
            back = w
            break

    def at(t: float) -> dict[str, list[int]]:
        return min(samples, key=lambda s: abs(s["t"] - t))

    def by(t: float) -> dict[str, list[int]]:
        """The last sample taken by t: the hold's figures from inside the hold (after it, with the
        horizon free, the slots are no longer rotated and the tables grow to what VACUUM keeps)."""
        return max((s for s in samples if s["t"] <= t), key=lambda s: s["t"])

    end = by(steady + hold)
    growth = {
        r: {
            "bytes_at_hold_start": at(steady)[r][0],
            "bytes_at_hold_end": end[r][0],
            "bytes_growth_last_third": end[r][0] - by(steady + 2 * hold / 3)[r][0],
            "dead_at_hold_end": end[r][1],
            "updates_per_s_in_hold": round((end[r][2] - at(steady)[r][2]) / hold, 1),
            "hot_updates_per_s_in_hold": round((end[r][3] - at(steady)[r][3]) / hold, 1),
            "live_rows_at_hold_end": end[r][5],
            "updates_per_s_per_live_row": round((end[r][2] - at(steady)[r][2]) / hold / max(end[r][5], 1), 3),
            "bytes_after_recovery": at(total)[r][0],
            "dead_after_recovery": at(total)[r][1],
        }
        for r in RELATIONS
    }
    row = {
        **calib,
        "scenario": "held_snapshot",
        "claimers": args.claimers,
        "batch": args.batch,
        "seconds": {"baseline": steady, "hold": hold, "recovery": recovery},
        "sent": sent,
        "phases": phases,
        "hold_windows_30s": windows,
        "p99_back_within_1_2x_after_s": back,
        "relations": growth,
        **({"statements": statements} if args.statements else {}),
    }
    print(json.dumps(row), flush=True)
    finish(base, "jobctl_held", [], None)

    print(
        f"\nclean max flow {max_flow} jobs/s; offered {round(rate)} jobs/s; "
        f"{args.claimers} claimers x {args.batch}"
    )
    print(f"  {'phase':16} {'claim p50 ms':>13} {'claim p99 ms':>13} {'jobs/s':>8} {'of offered':>11}")
    for name, p in phases.items():
        p50, p99 = p.get("claim_p50_ms", "-"), p.get("claim_p99_ms", "-")
        print(f"  {name:16} {p50:>13} {p99:>13} {p['jobs_per_s']:>8} {p['jobs_per_s'] / rate:>10.1%}")
    print(f"  claim p99 back within 1.2x of baseline {back} s after the hold ended")
    print(f"  {'relation':12} {'MB at hold start':>17} {'MB at hold end':>15} {'growth, last third':>19} "
          f"{'dead at end':>12} {'upd/s':>8} {'HOT':>5} {'rows':>9} {'upd/s/row':>9} "
          f"{'MB after':>9}")  # fmt: skip
    mb = 1024 * 1024
    for r, g in growth.items():
        hot = g["hot_updates_per_s_in_hold"] / g["updates_per_s_in_hold"] if g["updates_per_s_in_hold"] else 0
        print(
            f"  {r:12} {g['bytes_at_hold_start'] / mb:>17.2f} {g['bytes_at_hold_end'] / mb:>15.2f} "
            f"{g['bytes_growth_last_third'] / mb:>19.2f} {g['dead_at_hold_end']:>12} "
            f"{g['updates_per_s_in_hold']:>8} {hot:>5.0%} {g['live_rows_at_hold_end']:>9} "
            f"{g['updates_per_s_per_live_row']:>9} {g['bytes_after_recovery'] / mb:>9.2f}"
        )
    for phase, top in statements.items():
        print(f"\n  {phase}: statements by time taken (functions include the statements inside them)")
        print(f"  {'calls/s':>8} {'mean ms':>8} {'ms/s':>7}  statement")
        for st in top:
            print(f"  {st['per_s']:>8} {st['mean_ms']:>8} {st['ms_per_s']:>7}  {st['query']}")
    return [calib, row]


if __name__ == "__main__":
    main()
