"""Dead tuples from SKIP LOCKED churn (the brief's curveball 2), measured with pgstattuple, and what
xmin / xmax look like on jobctl's own pages (pageinspect).

Churn: a queue holding --depth waiting jobs; C sessions loop for S seconds: submit 100, claim 100,
complete them, so the live queue stays at its depth while every job passes through. Each scenario
in a fresh database on the benchmark cluster:
- naive: one table, claim = UPDATE ... FOR UPDATE SKIP LOCKED, completion = DELETE, autovacuum as
  the cluster has it (defaults: scale factor 0.2, cost delay 2 ms, naptime 1 min);
- naive-tuned: the same with the settings jobctl's queue tables have (scale factor 0, threshold
  2,000, insert threshold 10,000, cost delay 0);
- naive-held: tuned, while a REPEATABLE READ transaction holds its snapshot through the churn;
- jobctl-defaults: jobctl's queue tables (`_ready` and `_running`, all partitions) under the same
  churn through submit_jobs / claim_job / complete_jobs, their autovacuum settings reset to the
  cluster's;
- jobctl, jobctl-held: the same as shipped, without and with the held snapshot.
At the end (the snapshot still held): heap bytes, bytes of live tuples and dead tuples (pgstattuple),
index bytes, and heap / live; the largest total size seen (sampled every 2 s); the XIDs the churn
consumed and the age of the oldest unfrozen XID (age(relfrozenxid)) of the queue tables and, for
jobctl, of the job table: what anti-wraparound autovacuum would have to catch up on.

Heartbeats: 1,000 running jobs heartbeaten 20 times (the worker's one statement a round) with
`_running` at fillfactor 50 (as shipped) and at 100: HOT updates among the updates, and the size.

Then pageinspect: one job submitted, claimed and completed, each in its own transaction; its
`_ready` row and its job row versions, with t_xmin / t_xmax against the three transactions' XIDs.

    .venv/bin/python benchmarks/bloat.py            # depth 10,000, 120 s a scenario, 4 sessions
    .venv/bin/python benchmarks/bloat.py --small    # depth 1,000, 8 s
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import threading
import time
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url
from jobctl import queries
from jobctl.worker.heartbeats import TICK_EVERY
from psycopg.types.json import Jsonb

SCENARIOS = ("naive", "naive-tuned", "naive-held", "jobctl-defaults", "jobctl", "jobctl-held")
NAIVE = """
create table bloat_job (
    id bigserial primary key, queue text not null, run_at timestamptz not null default now(),
    state text not null default 'pending', payload jsonb not null, locked_by text, locked_at timestamptz
);
create index bloat_job_claim_idx on bloat_job (queue, run_at, id) where state = 'pending';
"""
TUNED = """
alter table bloat_job set (
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_vacuum_cost_delay = 0
)
"""
NAIVE_SUBMIT = """
insert into bloat_job (queue, payload) select 'q', jsonb_build_object('i', i) from generate_series(1, %s) as i
"""
RESET = """
alter table {} reset (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_insert_scale_factor,
    autovacuum_vacuum_insert_threshold, autovacuum_vacuum_cost_delay
)
"""
NAIVE_CLAIM = """
update bloat_job set state = 'running', locked_by = 'w', locked_at = now()
where id in (select id from bloat_job where queue = 'q' and state = 'pending' and run_at <= now()
             order by run_at, id limit 100 for update skip locked)
returning id
"""
NAIVE_DONE = "delete from bloat_job where id = any(%s)"
# per table: heap and live/dead tuple bytes of its leaves, and their indexes' bytes
STATS = """
select r.rel::text, coalesce(sum(s.table_len), 0)::bigint, coalesce(sum(s.tuple_len), 0)::bigint,
    coalesce(sum(s.tuple_count), 0)::bigint, coalesce(sum(s.dead_tuple_len), 0)::bigint,
    coalesce(sum(s.dead_tuple_count), 0)::bigint, coalesce(sum(s.free_space), 0)::bigint,
    coalesce(sum(pg_indexes_size(x.relid)), 0)::bigint
from unnest(%s::regclass[]) as r (rel)
cross join lateral (
    select r.rel::oid as relid
    union all
    select i.inhrelid from pg_inherits as i where i.inhparent = r.rel
) as x
cross join lateral pgstattuple(x.relid) as s
where (select c.relkind from pg_class as c where c.oid = x.relid) = 'r'
group by r.rel
"""
LEAVES = "select i.inhrelid::regclass::text from pg_inherits as i where i.inhparent = %s::regclass"
CLAIM = "select job_id, lease_epoch from jobctl.claim_job('w', array['q'], %s)"
HEARTBEATS = """
select count(*) from (
    select jobctl.heartbeat(a.job_id, a.lease_epoch, interval '30 seconds')
    from unnest(%(job_ids)s::bigint[], %(lease_epochs)s::bigint[]) as a (job_id, lease_epoch)
) as h
"""
# the oldest unfrozen XID's age of the queue tables' leaves, and of the job table's (jobctl only)
AGES = """
select max(age(c.relfrozenxid)) filter (where p.parent::text <> 'jobctl.job'),
    max(age(c.relfrozenxid)) filter (where p.parent::text = 'jobctl.job')
from unnest(%s::regclass[] || case when %s then array['jobctl.job'::regclass] else '{}' end) as p (parent)
cross join lateral (
    select p.parent::oid as relid
    union all
    select i.inhrelid from pg_inherits as i where i.inhparent = p.parent
) as x
inner join pg_class as c on c.oid = x.relid
where c.relkind = 'r'
"""
XMAX = "select txid_snapshot_xmax(txid_current_snapshot())"
XID = "select pg_current_xact_id()::xid::text::bigint"  # 32 bits, as t_xmin / t_xmax
SIZE = """
select sum(pg_total_relation_size(x.relid))::bigint
from unnest(%s::regclass[]) as r (rel)
cross join lateral (
    select r.rel::oid as relid union all select i.inhrelid from pg_inherits as i where i.inhparent = r.rel
) as x
"""


def tables(scenario: str) -> list[str]:
    return ["jobctl._ready", "jobctl._running"] if scenario.startswith("jobctl") else ["bloat_job"]


def churner(dsn: str, scenario: str, seconds: float, barrier: Any, out: Any) -> None:
    """Submit 100, claim 100, complete them, until the time is up; puts the jobs done."""
    specs = Jsonb([{"tenant_id": "t", "queue": "q", "payload": {}} for _ in range(100)])
    done = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        end = time.time() + seconds
        tick_at = time.time()
        while time.time() < end:
            if scenario.startswith("jobctl") and time.time() >= tick_at:
                c.execute(queries.TICK)  # as the worker does: one caller at a time does the work
                tick_at += TICK_EVERY
            if scenario.startswith("jobctl"):
                c.execute("select count(*) from jobctl.submit_jobs(%s)", (specs,))
                rows = c.execute(CLAIM, (100,)).fetchall()
                c.execute(
                    "select count(*) from jobctl.complete_jobs(%s, %s)",
                    ([r[0] for r in rows], [r[1] for r in rows]),
                )
            else:
                c.execute(NAIVE_SUBMIT, (100,))
                rows = c.execute(NAIVE_CLAIM).fetchall()
                c.execute(NAIVE_DONE, ([r[0] for r in rows],))
            done += len(rows)
    out.put(done)


def scenario_run(base: str, scenario: str, depth: int, seconds: float, sessions: int) -> dict[str, Any]:
    dsn = fresh_database(base, "jobctl_bloat")
    rels = tables(scenario)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create extension if not exists pgstattuple")
        if scenario.startswith("jobctl"):
            c.execute("select jobctl.put_tenant('t')")
            c.execute(
                "select count(*) from jobctl.submit_jobs((select jsonb_agg(jsonb_build_object("
                "'tenant_id', 't', 'queue', 'q', 'payload', '{}'::jsonb)) from generate_series(1, %s)))",
                (depth,),
            )
            if scenario == "jobctl-defaults":
                for rel in rels:
                    for (leaf,) in c.execute(LEAVES, (rel,)).fetchall():
                        c.execute(RESET.format(leaf))
        else:
            c.execute(NAIVE)
            if scenario != "naive":
                c.execute(TUNED)
            c.execute(NAIVE_SUBMIT, (depth,))
        c.execute("vacuum analyze")
        start_stats = c.execute(STATS, (rels,)).fetchall()
        xmax0 = c.execute(XMAX).fetchone()
    holder = psycopg.connect(dsn) if scenario.endswith("held") else None
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(sessions + 1), ctx.Queue()
    procs = [
        ctx.Process(target=churner, args=(dsn, scenario, seconds, barrier, out)) for _ in range(sessions)
    ]
    peak = [0]
    stop = threading.Event()

    def sampler() -> None:
        with psycopg.connect(dsn, autocommit=True) as s:
            while not stop.is_set():
                row = s.execute(SIZE, (rels,)).fetchone()
                peak[0] = max(peak[0], int(row[0]) if row and row[0] is not None else 0)
                stop.wait(2)

    t = threading.Thread(target=sampler, daemon=True)
    try:
        if holder is not None:
            holder.execute("set transaction isolation level repeatable read")
            holder.execute("select count(*) from pg_class")  # takes the snapshot and keeps it
        for p in procs:
            p.start()
        t.start()
        barrier.wait(timeout=120)  # a churner that cannot connect breaks it instead of hanging
        jobs = sum(out.get(timeout=seconds + 120) for _ in procs)
        with psycopg.connect(dsn, autocommit=True) as c:
            end = c.execute(STATS, (rels,)).fetchall()
            ages = c.execute(AGES, (rels, scenario.startswith("jobctl"))).fetchone()
            xmax1 = c.execute(XMAX).fetchone()
    finally:
        for p in procs:
            if p.is_alive():
                p.join(timeout=5)
            if p.is_alive():
                p.kill()
        stop.set()
        if t.is_alive():
            t.join()
        if holder is not None:
            holder.close()
    assert ages is not None and xmax0 is not None and xmax1 is not None
    heap, live, live_n, dead, dead_n, free, index = (sum(int(r[i]) for r in end) for i in range(1, 8))
    return {
        "scenario": scenario,
        "depth": depth,
        "seconds": seconds,
        "sessions": sessions,
        "jobs": jobs,
        "jobs_per_s": round(jobs / seconds),
        "live_rows": live_n,
        "live_bytes": live,
        "heap_bytes_before": sum(int(r[1]) for r in start_stats),
        "heap_bytes": heap,
        "dead_rows": dead_n,
        "dead_bytes": dead,
        "free_bytes": free,
        "index_bytes_before": sum(int(r[7]) for r in start_stats),
        "index_bytes": index,
        "heap_over_live": round(heap / live, 1) if live else None,
        "peak_total_bytes": peak[0],
        "xids_in_churn": int(xmax1[0]) - int(xmax0[0]),
        "queue_relfrozenxid_age": ages[0],
        "job_relfrozenxid_age": ages[1],
        "tables": {
            str(r[0]): {
                "heap_bytes": int(r[1]),
                "live_bytes": int(r[2]),
                "dead_rows": int(r[5]),
                "heap_over_live": round(int(r[1]) / int(r[2]), 1) if int(r[2]) else None,
            }
            for r in end
        },  # fmt: skip
    }


def heartbeats(base: str, fillfactor: int, running: int = 1000, rounds: int = 20) -> dict[str, Any]:
    """`rounds` heartbeats of `running` leases: how many were HOT updates, and _running's size."""
    dsn = fresh_database(base, "jobctl_bloat")
    counts = """
        select coalesce(sum(s.n_tup_upd), 0)::bigint, coalesce(sum(s.n_tup_hot_upd), 0)::bigint,
            sum(pg_total_relation_size(s.relid))::bigint
        from pg_stat_user_tables as s
        inner join pg_inherits as i on i.inhrelid = s.relid and i.inhparent = 'jobctl._running'::regclass
    """
    with psycopg.connect(dsn, autocommit=True) as c:
        for (rel,) in c.execute(LEAVES, ("jobctl._running",)).fetchall():
            c.execute(f"alter table {rel} set (fillfactor = {fillfactor})")
        c.execute("select jobctl.put_tenant('t')")
        c.execute(
            "select count(*) from jobctl.submit_jobs((select jsonb_agg(jsonb_build_object("
            "'tenant_id', 't', 'queue', 'q', 'payload', '{}'::jsonb)) from generate_series(1, %s)))",
            (running,),
        )
        leases = c.execute(CLAIM, (running,)).fetchall()
        c.execute("select pg_stat_force_next_flush()")
        time.sleep(1.5)
        before = c.execute(counts).fetchone()
        for _ in range(rounds):
            c.execute(HEARTBEATS, {"job_ids": [r[0] for r in leases], "lease_epochs": [r[1] for r in leases]})
        c.execute("select pg_stat_force_next_flush()")
        time.sleep(1.5)
        after = c.execute(counts).fetchone()
    assert before is not None and after is not None
    updates, hot = int(after[0]) - int(before[0]), int(after[1]) - int(before[1])
    return {
        "scenario": "heartbeats",
        "fillfactor": fillfactor,
        "running": len(leases),
        "rounds": rounds,
        "updates": updates,
        "hot_updates": hot,
        "hot_share": round(hot / max(updates, 1), 3),
        "running_bytes_before": int(before[2]),
        "running_bytes_after": int(after[2]),
    }


def pages(base: str) -> list[dict[str, Any]]:
    """One job through submit, claim, complete; its row versions with their xmin / xmax."""
    dsn = fresh_database(base, "jobctl_bloat")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create extension if not exists pageinspect")
        c.execute("select jobctl.put_tenant('t')")
        xids: dict[str, int] = {}
        with c.transaction():
            row = c.execute("select job_id from jobctl.submit_job('t', 'q', '{}')").fetchone()
            xids["submit"] = int(c.execute(XID).fetchone()[0])  # type: ignore[index]
        assert row is not None
        job_id = int(row[0])
        ready = c.execute("select tableoid::regclass::text, ctid::text from jobctl._ready").fetchone()
        with c.transaction():
            claim = c.execute(CLAIM, (1,)).fetchone()
            xids["claim"] = int(c.execute(XID).fetchone()[0])  # type: ignore[index]
        assert claim is not None and ready is not None
        with c.transaction():
            c.execute("select jobctl.complete_job(%s, %s)", claim)
            xids["complete"] = int(c.execute(XID).fetchone()[0])  # type: ignore[index]
        part = c.execute(
            "select tableoid::regclass::text from jobctl.job where job_id = %s", (job_id,)
        ).fetchone()
        assert part is not None
        names = {v: k for k, v in xids.items()}
        out = []
        for rel, page in ((ready[0], int(ready[1].strip("()").split(",")[0])), (part[0], 0)):
            for r in c.execute(
                "select lp, t_xmin::text::bigint, t_xmax::text::bigint, t_ctid::text, "
                "(t_infomask2 & 16384) <> 0 as hot_updated, (t_infomask2 & 32768) <> 0 as heap_only "
                "from heap_page_items(get_raw_page(%s, %s)) where t_xmin is not null order by lp",
                (rel, page),
            ).fetchall():
                out.append({
                    "relation": rel, "lp": r[0], "t_xmin": r[1], "xmin_is": names.get(r[1], "?"),
                    "t_xmax": r[2], "xmax_is": names.get(r[2], "-" if r[2] == 0 else "?"), "t_ctid": r[3],
                    "hot_updated": r[4], "heap_only": r[5],
                })  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="depth 1,000, 8 s a scenario")
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help=f"a comma-separated subset of {', '.join(SCENARIOS)}"
    )
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    scenarios = args.scenarios.split(",")
    if unknown := set(scenarios) - set(SCENARIOS):
        ap.error(f"--scenarios: unknown {', '.join(sorted(unknown))}")
    depth, seconds = (1_000, 8) if args.small else (10_000, 120)
    base = args.url or cluster_url("postgres")
    results = []
    for scenario in scenarios:
        row = scenario_run(base, scenario, depth, seconds, args.sessions)
        print(json.dumps(row), flush=True)
        results.append(row)
    for fillfactor in (50, 100):
        row = heartbeats(base, fillfactor)
        print(json.dumps(row), flush=True)
        results.append(row)
    versions = pages(base)
    for v in versions:
        print(json.dumps({"page_item": True, **v}), flush=True)
    items = [{"page_item": True, **v} for v in versions]
    finish(base, "jobctl_bloat", results + items, None if args.small else "bloat.jsonl")
    mb = 1024 * 1024
    print(f"\n  depth {depth}, {args.sessions} sessions, {seconds} s a scenario; sizes at the end (MB)")
    print(f"  {'scenario':16} {'jobs/s':>7} {'live':>6} {'heap':>7} {'dead':>7} {'free':>7} {'indexes':>8} "
          f"{'heap/live':>9} {'peak total':>10} {'XIDs':>7} {'queue age':>9} {'job age':>8}")  # fmt: skip
    for r in results:
        if r["scenario"] == "heartbeats":
            continue
        print(
            f"  {r['scenario']:16} {r['jobs_per_s']:>7} {r['live_bytes'] / mb:>6.2f} "
            f"{r['heap_bytes'] / mb:>7.2f} {r['dead_bytes'] / mb:>7.2f} {r['free_bytes'] / mb:>7.2f} "
            f"{r['index_bytes'] / mb:>8.2f} "
            f"{r['heap_over_live']!s:>9} {r['peak_total_bytes'] / mb:>10.2f} {r['xids_in_churn']:>7} "
            f"{r['queue_relfrozenxid_age']:>9} {r['job_relfrozenxid_age'] or '-':>8}"
        )
    print("\n  per table, at the end: heap MB / live MB, heap/live, dead rows")
    for r in results:
        if r["scenario"] != "heartbeats":
            cells = [
                f"{name.removeprefix('jobctl.')} {t['heap_bytes'] / mb:.2f}/{t['live_bytes'] / mb:.2f} "
                f"{t['heap_over_live']}x {t['dead_rows']}"
                for name, t in r["tables"].items()
            ]
            print(f"  {r['scenario']:16} " + "; ".join(cells))
    print("\n  heartbeats of 1,000 leases, 20 rounds: _running's fillfactor, HOT share, size (MB)")
    for r in results:
        if r["scenario"] == "heartbeats":
            print(
                f"  fillfactor {r['fillfactor']:>3}: {r['hot_share']:.1%} HOT of {r['updates']} updates, "
                f"{r['running_bytes_before'] / mb:.2f} -> {r['running_bytes_after'] / mb:.2f}"
            )
    print("\n  one job's row versions (pageinspect)")
    print(f"  {'relation':22} {'lp':>3} {'t_xmin':>8} {'is':>9} {'t_xmax':>8} {'is':>9} {'t_ctid':>8} "
          "HOT-upd heap-only")  # fmt: skip
    for v in versions:
        print(
            f"  {v['relation']:22} {v['lp']:>3} {v['t_xmin']:>8} {v['xmin_is']:>9} {v['t_xmax']:>8} "
            f"{v['xmax_is']:>9} {v['t_ctid']:>8} {v['hot_updated']!s:>7} {v['heap_only']!s:>9}"
        )


if __name__ == "__main__":
    main()
