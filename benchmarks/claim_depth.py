"""C-depth: claim cost at depth, jobctl's lane claim against a naive single-table SKIP LOCKED queue.

For each design, in one run on the benchmark cluster (`.bench-pg/`, as benchmarks/compare.py): claim
latency (one job per call from C concurrent claimers, each claim followed by its completion) and
EXPLAIN (ANALYZE, BUFFERS) of the claim with 10,000 due jobs across T tenants (`--small`), then with
N due (`--jobs`, 2N loaded so N stay due after the churn), then after N jobs have been claimed and
completed in batches of 1,000 (dead tuples in place; with --no-autovacuum they stay there; with
--autovacuum-defaults jobctl's per-table autovacuum settings are reset to the cluster's first).
Transaction IDs and WAL bytes per job are counted for the load and the churn. Prints JSON lines and
a table; writes them and the plans to benchmarks/results/.

    .venv/bin/python benchmarks/claim_depth.py --jobs 1000000 --tenants 1000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Any

import psycopg
from compare import cluster_url, counters
from jobctl import migrate
from psycopg.conninfo import conninfo_to_dict, make_conninfo

RESULTS = Path(__file__).resolve().parent / "results"
NAIVE_SCHEMA = """
create table naive_job (
    id bigserial primary key, tenant_id text not null, queue text not null, priority int not null default 0,
    run_at timestamptz not null default now(), state text not null default 'pending', payload jsonb not null,
    locked_by text, locked_at timestamptz
);
create index naive_job_claim_idx on naive_job (queue, priority desc, run_at) where state = 'pending';
"""
NAIVE_CLAIM = """
update naive_job set state = 'running', locked_by = %s, locked_at = now()
where id in (select id from naive_job where state = 'pending' and queue = 'bench' and run_at <= now()
             order by priority desc, run_at limit %s for update skip locked)
returning id
"""
NAIVE_DONE = "update naive_job set state = 'completed' where id = any(%s)"
PHASES = ("due_small", "due_deep", "after_churn")
JOBCTL_CLAIM = "select job_id, lease_epoch from jobctl.claim_job(%s, array['bench'], %s)"
JOBCTL_DONE = "select jobctl.complete_jobs(%s, %s)"


def bench_dsn(base: str, name: str) -> str:
    params = conninfo_to_dict(base)
    params["dbname"] = name
    return make_conninfo(**params)


def fresh_database(base: str, name: str, naive: bool = True) -> str:
    """A new database `name` on the cluster of `base`, migrated (and with the naive queue's schema)."""
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'drop database if exists "{name}" with (force)')
        c.execute(f'create database "{name}"')
    dsn = bench_dsn(base, name)
    with psycopg.connect(dsn) as c:
        migrate.migrate(c)
        if naive:
            c.execute(NAIVE_SCHEMA)
        c.commit()
    return dsn


def finish(base: str, name: str, rows: list[dict[str, Any]], results: str | None) -> None:
    """Drop a scenario's database and keep its rows as benchmarks/results/<results> (JSON lines);
    results None (a scaled-down run) keeps nothing."""
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'drop database if exists "{name}" with (force)')
    if results is not None:
        RESULTS.mkdir(exist_ok=True)
        with open(RESULTS / results, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)


def load(dsn: str, design: str, first: int, jobs: int, tenants: int) -> float:
    """Submit jobs first .. first + jobs - 1 round-robin over `tenants`; returns jobs/s."""
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as c:
        for start in range(first, first + jobs, 10000):
            n = min(10000, first + jobs - start)
            if design == "jobctl":
                c.execute(
                    """select count(*) from jobctl.submit_jobs((
                         select jsonb_agg(jsonb_build_object(
                             'tenant_id', 'tenant' || (i %% %s), 'queue', 'bench',
                             'payload', jsonb_build_object('i', i)))
                         from generate_series(%s::bigint, %s::bigint) as i))""",
                    (tenants, start, start + n - 1),
                )
            else:
                c.execute(
                    """insert into naive_job (tenant_id, queue, payload)
                       select 'tenant' || (i %% %s), 'bench', jsonb_build_object('i', i)
                       from generate_series(%s::bigint, %s::bigint) as i""",
                    (tenants, start, start + n - 1),
                )
    return jobs / (time.perf_counter() - started)


def drain(dsn: str, design: str, jobs: int) -> float:
    """Claim and complete `jobs` jobs in batches of 1,000; returns jobs/s."""
    done = 0
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as c:
        while done < jobs:
            n = min(1000, jobs - done)
            if design == "jobctl":
                rows = c.execute(JOBCTL_CLAIM, ("drainer", n)).fetchall()
                c.execute(JOBCTL_DONE, ([r[0] for r in rows], [r[1] for r in rows]))
            else:
                rows = c.execute(NAIVE_CLAIM, ("drainer", n)).fetchall()
                c.execute(NAIVE_DONE, ([r[0] for r in rows],))
            if not rows:
                break
            done += len(rows)
    return done / (time.perf_counter() - started)


def _claimer(dsn: str, design: str, calls: int, barrier: object, out: mp.Queue) -> None:  # type: ignore[type-arg]
    lat: list[float] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        for _ in range(calls):
            t = time.perf_counter()
            if design == "jobctl":
                rows = c.execute(JOBCTL_CLAIM, ("claimer", 1)).fetchall()
                lat.append(time.perf_counter() - t)
                c.execute(JOBCTL_DONE, ([r[0] for r in rows], [r[1] for r in rows]))
            else:
                rows = c.execute(NAIVE_CLAIM, ("claimer", 1)).fetchall()
                lat.append(time.perf_counter() - t)
                c.execute(NAIVE_DONE, ([r[0] for r in rows],))
    out.put(lat)


def latency(dsn: str, design: str, claimers: int, calls: int) -> dict[str, float]:
    barrier = mp.Barrier(claimers)
    out: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    procs = [mp.Process(target=_claimer, args=(dsn, design, calls, barrier, out)) for _ in range(claimers)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    lat = [x for _ in procs for x in out.get()]
    for p in procs:
        p.join()
    wall = time.perf_counter() - started
    lat.sort()
    return {
        "claim_p50_ms": round(1000 * statistics.median(lat), 2),
        "claim_p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2),
        "claims_per_s": round(len(lat) / wall),
    }


AUTO_EXPLAIN = (
    "load 'auto_explain'",
    "set auto_explain.log_min_duration = 0",
    "set auto_explain.log_analyze = on",
    "set auto_explain.log_buffers = on",
    "set auto_explain.log_nested_statements = on",
    "set auto_explain.log_level = notice",
    "set client_min_messages = notice",
)


def _top_buffers(blocks: list[str]) -> int:
    """Shared buffers (hit + read) of each plan's top node, added up."""
    hits = 0
    for block in blocks:
        first = next((ln for ln in block.splitlines() if "Buffers: shared" in ln), "")
        for part in first.replace(",", " ").split():
            if part.startswith(("hit=", "read=")):
                hits += int(part.split("=")[1])
    return hits


def plan(dsn: str, design: str) -> tuple[str, int, int | None]:
    """The claim's plan with buffers; returns (text, shared buffers a claim touches, and for jobctl
    those of listing the lanes). jobctl's claim is explained with the shared lane list fresh, as
    almost every claim finds it (the list is fresh for 100 ms + 0.2 ms a lane): first a claim that
    lists (the cache emptied before it), committed, then the claim measured."""
    with psycopg.connect(dsn) as c:
        notices: list[str] = []
        c.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        if design != "jobctl":
            rows = c.execute("explain (analyze, buffers) " + NAIVE_CLAIM, ("explain", 1)).fetchall()
            text = "\n".join(str(r[0]) for r in rows)
            c.rollback()
            return text, _top_buffers([text]), None
        for s in AUTO_EXPLAIN:
            c.execute(s)
        c.execute("delete from jobctl._lane_cache")
        c.execute(JOBCTL_CLAIM, ("explain", 1)).fetchall()
        listing = [n for n in notices if "_ready_lanes" in n]
        c.commit()
        notices.clear()
        c.execute(JOBCTL_CLAIM, ("explain", 1)).fetchall()
        c.rollback()
    # the top-level statements inside claim_job's steps (a step's own call is a statement too)
    claim = [n for n in notices if "jobctl._lane_cache as c" in n or "taken as" in n or "claimed as" in n]
    text = "\n\n".join(["-- a claim, the shared lane list fresh", *claim, "-- listing the lanes", *listing])
    return text, _top_buffers(claim), _top_buffers(listing)


def sizes(dsn: str, design: str) -> dict[str, int]:
    rels = ["jobctl._ready"] if design == "jobctl" else ["naive_job"]
    with psycopg.connect(dsn) as c:
        # with its partitions (jobctl._ready is partitioned by slot; pg_partition_tree of a plain
        # table is empty)
        sql = (
            "select coalesce(sum(pg_total_relation_size(relid)), pg_total_relation_size(%(r)s)) "
            "from pg_partition_tree(%(r)s)"
        )
        return {rel: int(c.execute(sql, {"r": rel}).fetchone()[0]) for rel in rels}  # type: ignore[index]


def per_job(dsn: str, before: tuple[int, int], jobs: int) -> dict[str, float]:
    xid, wal = counters(dsn)
    return {
        "xids_per_job": round((xid - before[0]) / jobs, 4),
        "wal_bytes_per_job": round((wal - before[1]) / jobs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1_000_000, help="due jobs at depth, and jobs churned")
    ap.add_argument("--small", type=int, default=10_000, help="due jobs of the first measurement")
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--claimers", type=int, default=8)
    ap.add_argument("--calls", type=int, default=250, help="claims per claimer per measurement")
    vacuum = ap.add_mutually_exclusive_group()
    vacuum.add_argument(
        "--no-autovacuum", action="store_true", help="leave the dead tuples of the churn in place"
    )
    vacuum.add_argument(
        "--autovacuum-defaults",
        action="store_true",
        help="reset jobctl's per-table autovacuum settings to the cluster's before the churn",
    )
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    base = args.url or cluster_url("postgres")
    suffix = (
        "-no-autovacuum" if args.no_autovacuum else "-autovacuum-defaults" if args.autovacuum_defaults else ""
    )
    results = []
    for design in ("jobctl", "naive"):
        dsn = fresh_database(base, "jobctl_bench")
        loaded = 0
        for phase in PHASES:
            extra: dict[str, float] = {}
            if phase in ("due_small", "due_deep"):
                todo = args.small if phase == "due_small" else 2 * args.jobs - loaded
                before = counters(dsn)
                extra["submit_per_s"] = round(load(dsn, design, loaded, todo, args.tenants))
                extra.update({f"submit_{k}": v for k, v in per_job(dsn, before, todo).items()})
                loaded += todo
                with psycopg.connect(dsn, autocommit=True) as c:
                    c.execute("vacuum analyze")
            else:
                if args.no_autovacuum:
                    with psycopg.connect(dsn, autocommit=True) as c:
                        rels = c.execute(
                            """select c.oid::regclass::text from pg_class as c
                               join pg_namespace as n on n.oid = c.relnamespace
                               where c.relkind = 'r' and (n.nspname = 'jobctl' or c.relname = 'naive_job')"""
                        ).fetchall()
                        for (rel,) in rels:
                            c.execute(f"alter table {rel} set (autovacuum_enabled = false)")
                if args.autovacuum_defaults:
                    with psycopg.connect(dsn, autocommit=True) as c:
                        rels = c.execute(
                            """select c.oid::regclass::text from pg_class as c
                               where c.relnamespace = 'jobctl'::regnamespace and c.relkind = 'r'
                                   and exists (select from unnest(c.reloptions) as o
                                               where o like 'autovacuum%%')"""
                        ).fetchall()
                        for (rel,) in rels:
                            c.execute(
                                f"alter table {rel} reset (autovacuum_vacuum_scale_factor, "
                                "autovacuum_vacuum_threshold, autovacuum_vacuum_insert_scale_factor, "
                                "autovacuum_vacuum_insert_threshold, autovacuum_vacuum_cost_delay)"
                            )
                before = counters(dsn)
                extra["churn_per_s"] = round(drain(dsn, design, args.jobs))
                extra.update({f"churn_{k}": v for k, v in per_job(dsn, before, args.jobs).items()})
            text, buffers, listing = plan(dsn, design)
            (RESULTS / f"claim_plan_{design}_{phase}{suffix}.txt").write_text(text + "\n")
            row = {
                "design": design,
                "phase": phase,
                "due": args.small if phase == "due_small" else args.jobs,
                "tenants": args.tenants,
                "claimers": args.claimers,
                "autovacuum": not args.no_autovacuum,
                # reset before the churn: the phases before it ran with them as installed
                "autovacuum_settings": "cluster defaults"
                if args.autovacuum_defaults and phase == "after_churn"
                else "as installed",
                "claim_buffers": buffers,
                "listing_buffers": listing,
                **latency(dsn, design, args.claimers, args.calls),
                **extra,
                "queue_bytes": sizes(dsn, design),
            }
            print(json.dumps(row), flush=True)
            results.append(row)
    finish(base, "jobctl_bench", results, f"claim_depth{suffix}.jsonl")
    head = f"{'design':8} {'phase':12} {'due':>9} {'buffers/claim':>13} {'/listing':>9} {'p50 ms':>8}"
    print(f"\n{head} {'p99 ms':>8} {'claims/s':>9}")
    for r in results:
        listing = "-" if r["listing_buffers"] is None else r["listing_buffers"]
        print(
            f"{r['design']:8} {r['phase']:12} {r['due']:>9} {r['claim_buffers']:>13} {listing:>9} "
            f"{r['claim_p50_ms']:>8} {r['claim_p99_ms']:>8} {r['claims_per_s']:>9}"
        )
    for design in ("jobctl", "naive"):
        mine = {r["phase"]: r for r in results if r["design"] == design}
        small, deep, churn = (mine[ph] for ph in PHASES)
        print(
            f"{design}: p99 deep/small {deep['claim_p99_ms'] / small['claim_p99_ms']:.2f}x, "
            f"after churn/deep {churn['claim_p99_ms'] / deep['claim_p99_ms']:.2f}x; per job: submit "
            f"{deep['submit_xids_per_job']} xids {deep['submit_wal_bytes_per_job']} WAL bytes, "
            f"claim+complete {churn['churn_xids_per_job']} xids {churn['churn_wal_bytes_per_job']} WAL bytes"
        )


if __name__ == "__main__":
    main()
