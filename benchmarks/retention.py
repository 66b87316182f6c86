"""DROP PARTITION vs DELETE for the same week of finished jobs, on the benchmark cluster.

Two databases get the same load: DAYS x PER_DAY completed jobs (a 200-byte payload each) spread
over the days that end two days ago, in jobctl.job's daily partitions. Then:
- partitions: jobctl's retention with a one-day hot retention (jobctl.maintain_partitions: the week's
  partitions detached by pg_partman and attached to jobctl.job_archive), then the archive retention
  drops them (DROP TABLE);
- delete: `DELETE FROM jobctl.job WHERE created_at < <end of the week>`, then a plain VACUUM.
For each: time, WAL written (pg_current_wal_insert_lsn before and after), dead tuples left in the
hot job table (pg_stat_user_tables, after pg_stat_force_next_flush), and the hot job table's size
after (pg_total_relation_size over its partitions). Prints JSON lines and a table; a full run also
writes benchmarks/results/retention.jsonl.

    .venv/bin/python benchmarks/retention.py            # 7 days x 200,000 jobs
    .venv/bin/python benchmarks/retention.py --small    # 7 days x 2,000 (tests/test_bench_smoke.py)
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import psycopg
from claim_depth import finish, fresh_database
from compare import cluster_url

DAYS = 7
DELETES = ("jobctl.job", "public.job_single")

LOAD = [
    """select partman.create_partition_time(p, array(
           select date_trunc('day', now()) - make_interval(days => d)
           from generate_series(2, %(days)s + 2) as d
       )) from unnest(array['jobctl.job', 'jobctl._event']) as p""",
    "select jobctl.put_tenant('bench')",
    """insert into jobctl.job (created_at, tenant_id, queue, state, run_at, attempt, max_attempts, payload,
    started_at, finished_at, lease_epoch, worker_id)
select at, 'bench', 'q', 'completed', at, 1, 3, jsonb_build_object('i', i, 'pad', repeat('x', 200)),
    at, at, i, 'w'
from generate_series(1, %(jobs)s) as i
cross join lateral (
    select date_trunc('day', now()) - interval '2 days'
        - make_interval(secs => ((%(jobs)s - i)::float8 / %(jobs)s) * %(days)s * 86400) as at
) as t""",
    # and today's jobs, which stay
    """insert into jobctl.job (tenant_id, queue, state, run_at, attempt, max_attempts, payload)
       select 'bench', 'q', 'completed', now(), 1, 3, jsonb_build_object('i', i, 'pad', repeat('x', 200))
       from generate_series(1, %(jobs)s / %(days)s) as i""",
    # the same rows in one plain table, oldest first, as a queue without partitions holds them
    """create table public.job_single (
           like jobctl.job including defaults including constraints including indexes
       )""",
    "insert into public.job_single select * from jobctl.job order by created_at",
]

# the hot job table: every partition but the archive's
SIZE = """
select coalesce(sum(pg_total_relation_size(r.relid)), 0)::bigint, coalesce(sum(s.n_dead_tup), 0)::bigint
from (
    select i.inhrelid as relid from pg_inherits as i where i.inhparent = %(table)s::regclass
    union all
    select %(table)s::regclass
    where not exists (select from pg_partitioned_table where partrelid = %(table)s::regclass)
) as r
left join pg_stat_user_tables as s on s.relid = r.relid
"""


def size(c: psycopg.Connection[Any], table: str = "jobctl.job") -> dict[str, int]:
    """Bytes (with indexes and TOAST) and dead tuples of a table or of all its partitions."""
    c.execute("select pg_stat_force_next_flush()")
    row = c.execute(SIZE, {"table": table}).fetchone()
    assert row is not None
    return {"size_bytes": int(row[0]), "dead_tuples": int(row[1])}


def timed(c: psycopg.Connection[Any], sql: str) -> tuple[float, int]:
    """Run sql; returns seconds and WAL bytes written meanwhile (cluster-wide, so on a quiet cluster)."""
    row = c.execute("select pg_current_wal_insert_lsn()").fetchone()
    assert row is not None
    started = time.perf_counter()
    c.execute(sql)
    took = time.perf_counter() - started
    row2 = c.execute("select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)", (row[0],)).fetchone()
    assert row2 is not None
    return took, int(row2[0])


def load(dsn: str, jobs: int) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as c:
        for sql in LOAD:
            c.execute(sql, {"days": DAYS, "jobs": jobs})
        c.execute("vacuum analyze jobctl.job")
        c.execute("vacuum analyze public.job_single")
        return size(c)


def by_partitions(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("update jobctl.retention set hot = '1 day'")
        # the seals (one step a call) first, as a running system has them days before retention
        while c.execute(
            """select count(*) from jobctl._partitions(array['jobctl.job', 'jobctl._event']::regclass[])
               where upper_bound <= now() and sealed is distinct from true"""
        ).fetchone() != (0,):
            c.execute("select jobctl.maintain_partitions()")
        retire_s, retire_wal = timed(c, "select jobctl.maintain_partitions()")
        c.execute("update jobctl.retention set archive = '1 day'")
        drop_s, drop_wal = timed(c, "select jobctl.maintain_partitions()")
        after = size(c)
        archived = c.execute("select count(*) from jobctl.job_archive").fetchone()
    return {
        "method": "partitions",
        "seconds": round(retire_s + drop_s, 3),
        "retire_seconds": round(retire_s, 3),
        "drop_seconds": round(drop_s, 3),
        "wal_bytes": retire_wal + drop_wal,
        "left_in_archive": int(archived[0]) if archived else None,
        **{f"after_{k}": v for k, v in after.items()},
    }


def by_delete(dsn: str, table: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        before = size(c, table)
        week = "created_at < date_trunc('day', now()) - interval '1 day'"
        took, wal = timed(c, f"delete from {table} where {week}")
        after = size(c, table)
        vac_s, vac_wal = timed(c, f"vacuum {table}")
        vacuumed = size(c, table)
    return {
        "method": "delete" if table == "jobctl.job" else "delete_single_table",
        "seconds": round(took, 3),
        "wal_bytes": wal,
        "table_size_bytes": before["size_bytes"],
        **{f"after_{k}": v for k, v in after.items()},
        "vacuum_seconds": round(vac_s, 3),
        "vacuum_wal_bytes": vac_wal,
        "after_vacuum_size_bytes": vacuumed["size_bytes"],
        "after_vacuum_dead_tuples": vacuumed["dead_tuples"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="7 days x 2,000 jobs")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    jobs = DAYS * (2_000 if args.small else 200_000)
    base = args.url or cluster_url("postgres")
    results = []
    for method in ("partitions", "delete"):
        dsn = fresh_database(base, "jobctl_retention")
        before = load(dsn, jobs)
        rows = [by_partitions(dsn)] if method == "partitions" else [by_delete(dsn, t) for t in DELETES]
        for row in rows:
            row = {"jobs": jobs, "days": DAYS, **row, **{f"before_{k}": v for k, v in before.items()}}
            print(json.dumps(row), flush=True)
            results.append(row)
    finish(base, "jobctl_retention", results, None if args.small else "retention.jsonl")
    mb = 1024 * 1024
    print(f"\n{jobs:,} completed jobs over {DAYS} days, and {jobs // DAYS:,} of today that stay")
    print(
        f"  {'method':30} {'seconds':>8} {'WAL MB':>8} {'dead tuples':>12} {'MB before':>10} {'MB after':>9}"
    )
    for r in results:
        name = {"partitions": "jobctl: detach+attach, DROP", "delete": "DELETE, daily partitions"}.get(
            r["method"], "DELETE, one plain table"
        )
        before = r.get("table_size_bytes", r["before_size_bytes"]) / mb
        print(
            f"  {name:30} {r['seconds']:>8} {r['wal_bytes'] / mb:>8.2f} {r['after_dead_tuples']:>12} "
            f"{before:>10.1f} {r['after_size_bytes'] / mb:>9.1f}"
        )
        if "vacuum_seconds" in r:
            print(
                f"  {'  then VACUUM':30} {r['vacuum_seconds']:>8} {r['vacuum_wal_bytes'] / mb:>8.2f} "
                f"{r['after_vacuum_dead_tuples']:>12} {'':>10} {r['after_vacuum_size_bytes'] / mb:>9.1f}"
            )


if __name__ == "__main__":
    main()
