"""Heartbeats with progress beside plain ones: time and row versions.

Running leases in a fresh database on the benchmark cluster are heartbeaten with the worker's own
statement (queries.HEARTBEATS: one statement for all of a worker's jobs) in three ways:
- none:  no progress (the progress array NULL), as before progress existed;
- small: every job a new progress each beat, {"done": i, "total": 1000, "step": "..."} (85 bytes);
- bound: every job a new progress of 2,000 bytes as jsonb each beat (jobctl.heartbeat's bound).
Every job gets a new progress on every beat here; the worker sends a job's progress at most once a
second and only when it changed, so this is the heaviest case.

Row versions: per variant, 1,000 fresh leases heartbeaten 20 times, round after round: the updates of
_running's partitions and how many were HOT (pg_stat_user_tables), and how much _running grew.
Time: three sets of 1,000 leases, one per variant, heartbeaten in turn, statement by statement (the
order rotating), so the machine's noise hits all three alike: per variant the median statement time,
and the median and quartiles of its ratio to the `none` statement run beside it.

    .venv/bin/python benchmarks/progress.py             # 5 rounds: 5 x 20 beats of each
    .venv/bin/python benchmarks/progress.py --small     # 1 round, 200 leases, 5 beats
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import timedelta
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from jobctl import queries

VARIANTS = ("none", "small", "bound")
COUNTS = """
select coalesce(sum(s.n_tup_upd), 0)::bigint, coalesce(sum(s.n_tup_hot_upd), 0)::bigint,
    sum(pg_total_relation_size(s.relid))::bigint
from pg_stat_user_tables as s
inner join pg_inherits as i on i.inhrelid = s.relid and i.inhparent = 'jobctl._running'::regclass
"""


def array(values: list[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def progress_of(variant: str, job_id: int, beat: int, pad: int) -> str | None:
    if variant == "none":
        return None
    if variant == "small":
        return json.dumps({"done": beat, "total": 1000, "step": f"part {job_id} of the upload"})
    return json.dumps({"beat": beat, "s": "x" * pad})  # pad: 2,000 bytes as jsonb in all (see padding)


def padding(c: psycopg.Connection[Any]) -> int:
    """The length of `s` that makes {"beat": b, "s": "xx..."} 2,000 bytes as jsonb (b below 10,000)."""
    row = c.execute("select pg_column_size(jsonb_build_object('beat', 1, 's', repeat('x', 1900)))").fetchone()
    assert row is not None
    return 1900 + 2000 - int(row[0])


def stats(c: psycopg.Connection[Any]) -> tuple[int, int, int]:
    c.execute("select pg_stat_force_next_flush()")
    time.sleep(1.2)  # pending counters reach shared memory at the next transaction end (rate-limited)
    row = c.execute(COUNTS).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def lease(c: psycopg.Connection[Any], queue: str, running: int) -> tuple[list[int], list[int]]:
    """`running` jobs submitted to `queue` and claimed: their ids and epochs."""
    c.execute(
        "select count(*) from jobctl.submit_jobs((select jsonb_agg(jsonb_build_object("
        "'tenant_id', 't', 'queue', %s::text, 'payload', '{}'::jsonb)) from generate_series(1, %s)))",
        (queue, running),
    )
    claim = "select job_id, lease_epoch from jobctl.claim_job('w', array[%s::text], %s)"
    rows = c.execute(claim, (queue, running)).fetchall()
    return [int(r[0]) for r in rows], [int(r[1]) for r in rows]


def beat(
    c: psycopg.Connection[Any], variant: str, ids: list[int], epochs: list[int], n: int, pad: int
) -> float:
    """One heartbeat statement of every lease, each with a new progress (variant none: without); seconds."""
    progress = None if variant == "none" else [progress_of(variant, j, n, pad) for j in ids]
    params = {"job_ids": array(ids), "lease_epochs": array(epochs), "extend": timedelta(seconds=30)}
    started = time.perf_counter()
    answers = c.execute(queries.HEARTBEATS, {**params, "progress": progress}).fetchall()
    took = time.perf_counter() - started
    assert all(a[1] == "ok" and a[2] is None for a in answers), answers[:3]
    return took


def finish_leases(c: psycopg.Connection[Any], ids: list[int], epochs: list[int]) -> None:
    done = "select count(*) from jobctl.complete_jobs(%s::bigint[], %s::bigint[])"
    c.execute(done, (array(ids), array(epochs)))


def versions(c: psycopg.Connection[Any], variant: str, running: int, beats: int, pad: int) -> dict[str, Any]:
    """Row versions of `beats` heartbeats of fresh leases."""
    ids, epochs = lease(c, f"v-{variant}", running)
    before = stats(c)
    for n in range(1, beats + 1):
        beat(c, variant, ids, epochs, n, pad)
    after = stats(c)
    sizes = c.execute(
        "select min(pg_column_size(progress)), max(pg_column_size(progress)) from jobctl._running"
        " where job_id = any(%s)",
        (ids,),
    ).fetchone()
    assert sizes is not None
    finish_leases(c, ids, epochs)
    return {
        "variant": variant,
        "running": len(ids),
        "beats": beats,
        "updates": after[0] - before[0],
        "hot_updates": after[1] - before[1],
        "running_growth_bytes": after[2] - before[2],
        "progress_bytes": [sizes[0], sizes[1]],
    }


def timing(c: psycopg.Connection[Any], running: int, beats: int, pad: int) -> dict[str, list[float]]:
    """Statement times (ms) of the three variants, run in turn beat by beat on leases of their own."""
    leases = {v: lease(c, f"t-{v}", running) for v in VARIANTS}
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for n in range(1, beats + 1):
        order = VARIANTS[n % 3 :] + VARIANTS[: n % 3]
        for v in order:
            times[v].append(round(beat(c, v, *leases[v], n, pad) * 1000, 3))
    for ids, epochs in leases.values():
        finish_leases(c, ids, epochs)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="1 round, 200 leases, 5 beats")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    rounds, running, beats = (1, 200, 5) if args.small else (args.rounds, 1000, 20)
    base = args.url or cluster_url("postgres")
    dsn = fresh_database(base, "jobctl_progress", naive=False)
    rows: list[dict[str, Any]] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select jobctl.put_tenant('t')")
        pad = padding(c)
        for r in range(1, rounds + 1):
            for variant in VARIANTS:
                row = {"round": r, **versions(c, variant, running, beats, pad)}
                print(json.dumps(row), flush=True)
                rows.append(row)
        times = timing(c, running, rounds * beats, pad)
    print(json.dumps({"timing_ms": times}), flush=True)
    summary = []
    for v in VARIANTS:
        mine = [r for r in rows if r["variant"] == v]
        updates, hot = sum(r["updates"] for r in mine), sum(r["hot_updates"] for r in mine)
        ratios = [t / base_t for t, base_t in zip(times[v], times["none"], strict=True)]
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        summary.append({
            "summary": v, "median_ms": round(statistics.median(times[v]), 3),
            "ratio_to_none": round(statistics.median(ratios), 2),
            "ratio_quartiles": [round(quartiles[0], 2), round(quartiles[2], 2)],
            "us_per_heartbeat": round(statistics.median(times[v]) * 1000 / running, 2),
            "updates": updates, "hot_updates": hot, "hot_share": round(hot / max(updates, 1), 4),
            "progress_bytes": mine[-1]["progress_bytes"],
            "running_growth_bytes": sum(r["running_growth_bytes"] for r in mine),
        })  # fmt: skip
        print(json.dumps(summary[-1]), flush=True)
    finish(
        base,
        "jobctl_progress",
        [*rows, {"timing_ms": times}, *summary],
        None if args.small else "progress.jsonl",
    )
    print(
        f"\n  {running} leases; row versions: {rounds} x {beats} beats; time: {rounds * beats} beats"
        " side by side"
    )
    print(
        f"  {'progress':8} {'ms/stmt':>8} {'vs none':>8} {'quartiles':>11} {'us/beat':>8} {'HOT share':>10}"
        f" {'bytes':>10}"
    )
    for s in summary:
        size = "-" if s["progress_bytes"][0] is None else f"{s['progress_bytes'][0]}-{s['progress_bytes'][1]}"
        q = f"{s['ratio_quartiles'][0]:.2f}-{s['ratio_quartiles'][1]:.2f}"
        print(
            f"  {s['summary']:8} {s['median_ms']:>8.2f} {s['ratio_to_none']:>7.2f}x {q:>11} "
            f"{s['us_per_heartbeat']:>8.2f} {s['hot_share']:>9.1%} {size:>10}"
        )


if __name__ == "__main__":
    main()
