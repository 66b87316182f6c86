"""The archive in object storage: bytes and time per archived day, a directory beside an S3 bucket
(moto's server on loopback, port 25551), on the benchmark cluster, in one run.

Two databases get the same load: DAYS days of PER_DAY finished jobs each (TENANTS tenants, a payload
of about 250 bytes and a small result; one job in 100 with a failed attempt's events), in the days
that end two days ago, moved to the database archive (jobctl.job_archive) by maintain_partitions with
one-day retentions. Then, per database, before the export: the median get_job of LOOKUPS random ids
(the database archive); each day exported by `archive.run(max_days=1)`: its partitions' size in
PostgreSQL (job and event partitions, pg_total_relation_size) beside the Parquet bytes, and the
export time; after: the median get_job of the same ids through the manifest and the files. Medians
over the days; ratios. Prints JSON lines and a table; a full run writes benchmarks/results/archive.jsonl.

    .venv/bin/python benchmarks/archive.py            # 3 days x 100,000 jobs, 10 tenants
    .venv/bin/python benchmarks/archive.py --small    # 2 days x 2,000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from claim_depth import finish, fresh_database
from compare import ROOT, cluster_url
from jobctl import Client, archive

MOTO_PORT = 25551
TENANTS = 10

LOAD = [
    """select partman.create_partition_time(p, array(
           select date_trunc('day', now()) - make_interval(days => d)
           from generate_series(2, %(days)s + 2) as d
       )) from unnest(array['jobctl.job', 'jobctl._event']) as p""",
    """insert into jobctl.job (created_at, tenant_id, queue, state, run_at, attempt, max_attempts, payload,
    started_at, finished_at, lease_epoch, worker_id, result)
select at, 'tenant-' || (i %% %(tenants)s), 'email', 'completed', at, 1, 3,
    jsonb_build_object('to', 'user' || i || '@example.com', 'template', 'welcome', 'locale', 'en',
        'vars', jsonb_build_object('name', 'User ' || i, 'plan', 'pro', 'note', repeat('x', 120))),
    at + interval '1 second', at + interval '2 seconds', i, 'worker-' || (i %% 8),
    jsonb_build_object('message_id', md5(i::text))
from generate_series(1, %(jobs)s) as i
cross join lateral (
    -- per_day jobs a day, spread over it, in the days that end two days ago
    select date_trunc('day', now()) - make_interval(days => 2 + %(days)s - (i - 1) / %(per_day)s)
        + make_interval(secs => ((i - 1) %% %(per_day)s) * 86400.0 / %(per_day)s) as at
) as t""",
    # one job in a hundred failed an attempt first: its claim and failure are event rows
    """insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id, detail)
select j.job_id, j.created_at, j.started_at - interval '1 minute', e.event, 1, j.lease_epoch, j.worker_id,
    case when e.event = 'failed' then 'SMTP 451: try again later' end
from jobctl.job as j cross join (values ('claimed'), ('failed')) as e (event)
where j.job_id %% 100 = 0""",
    "update jobctl.retention set hot = '1 day', archive = '1 day', archive_url = %(url)s",
]


def moto() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(MOTO_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.put(f"http://127.0.0.1:{MOTO_PORT}/jobctl-bench", timeout=1).raise_for_status()
            return proc
        except httpx.TransportError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("moto's server did not start") from None
            time.sleep(0.1)


def lookups(dsn: str, ids: list[int]) -> list[float]:
    """get_job of each id on one client: milliseconds each (the job must be found)."""
    out = []
    with Client(dsn) as client:
        client.get_job(ids[0])  # the connection, and the filesystem's first request
        for job_id in ids:
            t0 = time.perf_counter()
            job = client.get_job(job_id)
            out.append((time.perf_counter() - t0) * 1000)
            assert job is not None and job.job_id == job_id, job_id
    return out


def scenario(dsn: str, target: str, url: str, days: int, jobs: int, ids_n: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        for statement in LOAD:
            c.execute(
                statement,
                {"days": days, "jobs": jobs, "per_day": jobs // days, "tenants": TENANTS, "url": url},
            )
        for _ in range(60):
            if c.execute(
                "select count(*) from jobctl.job where created_at < now() - interval '2 days'"
            ).fetchone() == (0,):
                break
            c.execute("select jobctl.maintain_partitions()")
        else:
            raise SystemExit("the days did not reach the database archive")
        c.execute("vacuum analyze jobctl.job_archive")
        ids = [
            r[0]
            for r in c.execute("select job_id from jobctl.job_archive order by random() limit %s", (ids_n,))
        ]
        parts = c.execute(
            """select j.part::text, j.lower_bound, pg_total_relation_size(j.part)
                   + coalesce(pg_total_relation_size(e.part), 0)
               from jobctl._partitions(array['jobctl.job_archive']::regclass[]) as j
               left join jobctl._partitions(array['jobctl._event_archive']::regclass[]) as e
                   on e.lower_bound = j.lower_bound
               order by j.lower_bound"""
        ).fetchall()
    in_db = lookups(dsn, ids)
    per_day = []
    for part, lower, pg_bytes in parts:
        report = archive.run(dsn, max_days=1)
        [unit] = [u for u in report.units if u.source == part]
        per_day.append(
            {"day": str(lower.date()), "rows": unit.rows, "files": len(unit.files), "pg_bytes": pg_bytes,
             "parquet_bytes": unit.bytes, "export_s": round(unit.seconds, 3)}
        )  # fmt: skip
    in_files = lookups(dsn, ids)
    per_day = [d for d in per_day if d["rows"]]  # (the partition made ahead of the first day: empty)
    return {
        "target": target,
        "days": per_day,
        "rows_per_day": statistics.median(d["rows"] for d in per_day),
        "pg_bytes_per_day": statistics.median(d["pg_bytes"] for d in per_day),
        "parquet_bytes_per_day": statistics.median(d["parquet_bytes"] for d in per_day),
        "bytes_ratio": round(statistics.median(d["parquet_bytes"] / d["pg_bytes"] for d in per_day), 3),
        "export_s_per_day": statistics.median(d["export_s"] for d in per_day),
        "get_job_db_archive_ms_p50": round(statistics.median(in_db), 2),
        "get_job_file_ms_p50": round(statistics.median(in_files), 2),
        "get_job_file_ms_max": round(max(in_files), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="2 days x 2,000 jobs")
    ap.add_argument("--url", help="admin URL of an existing cluster (default: start .bench-pg)")
    args = ap.parse_args()
    days, per_day, ids_n = (2, 2000, 10) if args.small else (3, 100_000, 50)
    base = args.url or cluster_url("postgres")
    (ROOT / ".archive").mkdir(exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-", dir=ROOT / ".archive"))
    server = moto()
    os.environ |= {
        "JOBCTL_ARCHIVE_OPTIONS": json.dumps({"endpoint_url": f"http://127.0.0.1:{MOTO_PORT}"}),
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    rows = []
    try:
        for target, url in (
            ("directory", str(workdir / "archive")),
            ("s3 (moto)", "s3://jobctl-bench/archive"),
        ):
            name = "jobctl_archive_" + target.split()[0]
            dsn = fresh_database(base, name, naive=False)
            row = {"scenario": "archive", "per_day": per_day, "tenants": TENANTS, **scenario(
                dsn, target, url, days, per_day * days, ids_n
            )}  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
            finish(base, name, [], None)
    finally:
        server.terminate()
        server.wait(10)
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
    print()
    print(f"{'target':12} {'rows/day':>9} {'PG bytes':>12} {'Parquet':>11} {'ratio':>6} {'export s':>9}"
          f" {'get_job DB ms':>13} {'get_job file ms':>15}")  # fmt: skip
    for r in rows:
        print(
            f"{r['target']:12} {r['rows_per_day']:>9,} {r['pg_bytes_per_day']:>12,}"
            f" {r['parquet_bytes_per_day']:>11,}"
            f" {r['bytes_ratio']:>6} {r['export_s_per_day']:>9} {r['get_job_db_archive_ms_p50']:>13}"
            f" {r['get_job_file_ms_p50']:>15}"
        )
    if not args.small:
        finish(base, "jobctl_archive_directory", rows, "archive.jsonl")


if __name__ == "__main__":
    main()
