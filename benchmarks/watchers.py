"""What the completion hint (jobctl._notify_watchers) costs a drain: claim + complete
with the functions that end attempts as they are at HEAD against the same functions at a base commit
without the hint, side by side, and what a watcher on every job costs.

One scratch database installed from this checkout and one client session. Each of BLOCKS blocks
runs every drain on every side in a rotated order; a side first fills the queue (submit_jobs, not
timed; `waited`: with a watcher for every job, registered by jobctl.watch_job without a listener, the
NOTIFY is sent all the same), then re-creates _complete, _end_attempts and _cancel as that side has
them (`base`: `git show BASE:...`; `head`, `waited`: this checkout's), then drains, timed:
- `claim`: 1,000 single claims each completed with complete_job, and `claim_batch`: 5,000 jobs in
  claims of 50 each completed with one complete_jobs, both in one server-side loop (one statement):
  the server's own time a job, without round trips and commit flushes, which only dilute a
  difference; base and head;
- `claim_commits`: 300 single claims and completions from the client, each its own transaction, as
  a worker runs them (a NOTIFY costs at commit); base, head and waited.
One database and one session, the versions swapped between short interleaved blocks: earlier runs
with a database per side differed by 10-50 % between databases of identical code (other work on this
shared 2-core machine, and each session's generic plans), far more than the 3 % to be shown. Prints
the median microseconds a job of each side and the median of the per-block ratios to base, in wall
time and in the CPU time of the server backend (from /proc: the cluster runs on this machine; 10 ms
ticks), and the cost of one _notify_watchers call that finds no watcher (with enable_seqscan off, as its
hot-path callers run it); writes benchmarks/results/watchers.json. The issue's bar: jobs without
watchers (`head`) drain within 3 % of `base`.

    .venv/bin/python benchmarks/watchers.py [--dsn DSN] [--base dae4780] [--blocks 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from compare import cluster_url
from counters import backend_cpu, make_db, schema_script
from psycopg import conninfo

ROOT = Path(__file__).resolve().parent.parent
SIDES = ["base", "head", "waited"]
# drain: (jobs a claim, jobs a block, each job committed by a client round trip, the sides)
DRAINS = {
    "claim": (1, 1000, False, ["base", "head"]),
    "claim_batch": (50, 5000, False, ["base", "head"]),
    "claim_commits": (1, 300, True, SIDES),
}
# the functions that end attempts: the completion hint's one line in each is the difference (their
# paths under sql/functions; at the base commit, before the folders, their names alone)
SWAPPED = ["lease/_complete.sql", "lease/_end_attempts.sql", "jobs/_cancel.sql"]


def fill(conn: psycopg.Connection[Any], jobs: int, waited: bool) -> None:
    """`jobs` due jobs; with `waited`, a watcher for each (no listener: the NOTIFY is sent all the same)."""
    batch = json.dumps([{"tenant_id": "bench", "queue": "bench", "payload": {}}] * jobs)
    ids = [r[0] for r in conn.execute("select job_id from jobctl.submit_jobs(%s::jsonb)", [batch])]
    if waited:
        conn.execute(
            "select count(*) from unnest(%s::bigint[]) as i (id)"
            " cross join lateral jobctl.watch_job(i.id, 'jobctl_wait_' || md5(i.id::text))",
            [ids],
        )


# one statement claims and completes a block's jobs: the server's own time a job, without the client's
# round trips and the commits' WAL flushes (which only dilute the difference)
DRAIN = """
do $drain$
declare
    v_ids bigint[];
    v_epochs bigint[];
begin
    loop
        select array_agg(c.job_id), array_agg(c.lease_epoch) into v_ids, v_epochs
        from jobctl.claim_job('bench-w', array['bench'], {per_claim}) as c;
        exit when v_ids is null;
        if {per_claim} = 1 then
            perform jobctl.complete_job(v_ids[1], v_epochs[1], null);
        else
            perform count(*)
            from jobctl.complete_jobs(v_ids, v_epochs, array_fill(null::jsonb, array[cardinality(v_ids)]));
        end if;
    end loop;
end
$drain$
"""


def drain(conn: psycopg.Connection[Any], per_claim: int, jobs: int, commits: bool) -> tuple[float, float]:
    """Claim and complete the queue's `jobs` jobs, `per_claim` a claim, in one statement (commits
    False) or each claim and completion a statement and transaction of its own, as a worker does:
    wall and backend CPU microseconds a job."""
    pid = conn.info.backend_pid
    t0, cpu0 = time.perf_counter(), backend_cpu(pid)
    if not commits:
        conn.execute(DRAIN.format(per_claim=per_claim).encode())
    else:
        for _ in range(jobs):
            row = conn.execute(
                "select job_id, lease_epoch from jobctl.claim_job('bench-w', array['bench'])"
            ).fetchone()
            assert row is not None
            conn.execute("select jobctl.complete_job(%s, %s, null)", row)
    return 1e6 * (time.perf_counter() - t0) / jobs, 1e6 * (backend_cpu(pid) - cpu0) / jobs


def probe(conn: psycopg.Connection[Any], ids: int, call: bool, calls: int = 20000) -> float:
    """Microseconds a loop step that calls jobctl._notify_watchers with `ids` ids that have no watcher
    (call False: the same step without the call)."""
    ids_sql = f"array(select -g::bigint from generate_series(i, i + {ids - 1}) as g)"
    step = f"perform jobctl._notify_watchers({ids_sql});" if call else f"perform {ids_sql};"
    t0 = time.perf_counter()
    conn.execute(f"do $p$ begin for i in 1..{calls} loop {step} end loop; end $p$".encode())
    return 1e6 * (time.perf_counter() - t0) / calls


def at_commit(commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dsn", help="a superuser DSN of a cluster to use (default: the benchmark cluster, .bench-pg/)"
    )
    ap.add_argument("--base", default="dae4780", help="the commit without the completion hint")
    ap.add_argument("--blocks", type=int, default=20)
    args = ap.parse_args()
    if args.dsn is None:
        args.dsn = cluster_url("postgres")

    # the completion functions as they are at base and here: swapped in the one database between blocks
    versions = {
        "base": "".join(at_commit(args.base, f"sql/functions/{Path(f).name}") for f in SWAPPED),
        "head": "".join((ROOT / "sql" / "functions" / f).read_text() for f in SWAPPED),
    }
    versions["waited"] = versions["head"]
    target = make_db(args.dsn, f"bench_watchers_{uuid.uuid4().hex[:6]}", schema_script(None))
    wall: dict[str, dict[str, list[float]]] = {d: {s: [] for s in spec[3]} for d, spec in DRAINS.items()}
    cpu: dict[str, dict[str, list[float]]] = {d: {s: [] for s in spec[3]} for d, spec in DRAINS.items()}
    conn = psycopg.connect(target, autocommit=True)
    try:
        for per_claim, jobs, commits, _ in DRAINS.values():  # warm: plans, partitions and lanes made
            fill(conn, min(jobs, 1000), False)
            drain(conn, per_claim, min(jobs, 1000), commits)
        for b in range(args.blocks):
            for d, (per_claim, jobs, commits, sides) in DRAINS.items():
                for side in sides[b % len(sides) :] + sides[: b % len(sides)]:
                    fill(conn, jobs, side == "waited")
                    conn.execute(versions[side].encode())  # the session's plans of them are made again
                    us, cpu_us = drain(conn, per_claim, jobs, commits)
                    wall[d][side].append(us)
                    cpu[d][side].append(cpu_us)
            print(f"block {b + 1}/{args.blocks}", flush=True)
        # the probe alone, with no watcher, less the same loop without it (the array and the loop's cost)
        conn.execute("set enable_seqscan = off")  # as in _complete and _end_attempts
        calls = {n: [probe(conn, n, True) - probe(conn, n, False) for _ in range(7)] for n in (1, 50)}
    finally:
        conn.close()
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            admin.execute(
                f'drop database if exists "{conninfo.conninfo_to_dict(target)["dbname"]}" with (force)'
            )

    result: dict[str, Any] = {
        "base": args.base,
        "blocks": args.blocks,
        "probe_us_per_call_median": {str(n): round(statistics.median(v), 2) for n, v in calls.items()},
        "drains": {},
    }
    print(
        "jobctl._notify_watchers, no watcher: "
        + ", ".join(f"{n} id(s) {statistics.median(v):.2f} us a call" for n, v in calls.items())
    )
    print(f"\n{'drain':<15}{'side':<8}{'us/job':>9}{'vs base':>9}{'cpu us/job':>12}{'vs base':>9}")
    for d, spec in DRAINS.items():
        for s in spec[3]:
            ratio = statistics.median(x / b for x, b in zip(wall[d][s], wall[d]["base"], strict=True))
            cpu_ratio = statistics.median(x / b for x, b in zip(cpu[d][s], cpu[d]["base"], strict=True))
            us, cpu_us = statistics.median(wall[d][s]), statistics.median(cpu[d][s])
            result["drains"].setdefault(d, {})[s] = {
                "us_per_job_median": round(us, 1),
                "time_ratio_median": round(ratio, 3),
                "cpu_us_per_job_median": round(cpu_us, 1),
                "cpu_ratio_median": round(cpu_ratio, 3),
            }
            print(f"{d:<15}{s:<8}{us:>9.1f}{ratio:>9.3f}{cpu_us:>12.1f}{cpu_ratio:>9.3f}")
    (ROOT / "benchmarks" / "results" / "watchers.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
