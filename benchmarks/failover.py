"""Failover drill: a primary and a synchronous streaming standby on this machine, real `jobctl worker`
processes, the HTTP API, a SQL producer and the CLI, all connected through one libpq multi-host
string (target_session_attrs=read-write); the primary is killed with SIGKILL under load (the
postmaster and every process of the cluster, as a crashed host), a detector notices, the standby is
promoted (`pg_ctl promote`) and the fencing epoch moved past anything the old primary handed out.
Then the load goes on, the queue drains, and the ledger of chaos.py checks every acknowledged job.

Topology (under .failover/run-<pid>/, ports from 55460 up, removed at the end unless --keep):
  primary   bin/db's cluster settings, plus synchronous_standby_names = 'FIRST 1 (jobctl_standby)',
            synchronous_commit = local (jobctl's submits ask for `on` themselves: an acknowledged
            submit is on the standby's disk; claims and completions do not wait for it),
            cron.use_background_workers = on (pg_cron runs its jobs in the local database, wherever
            cron.job.nodename points: after a promotion it still names the old primary)
  standby   pg_basebackup -X stream -C -S jobctl_standby -R, hot standby, its own port and socket,
            synchronous_standby_names = '' (once promoted it has no standby to wait for)

Measured (JSON line, then a table; a full run appends to benchmarks/results/failover.jsonl):
  downtime_s.<kind>   for the SQL producer, the API producer, the CLI and the workers' claims: the
                      longest wait between two successes across the failover (the CLI submits a
                      process a second, so its figure includes that pace)
  detect_s, promote_s the kill to the detector's verdict (3 failed probes, 0.5 s apart), to the end
                      of `pg_ctl promote` and the epoch step (--outage S: not before S seconds)
  lost, duplicates, unfinished, missing, stray, overlaps   chaos.py's invariants, all must be 0
  unacked_committed   jobs in the database whose submit was never acknowledged (a client gave up)
  in_flight           attempts open at the kill (as the new primary knows them), how many their
                      worker completed after the failover, and how many were requeued
  requeue_max_s       the kill to the end of such an attempt (the job claimable again), and
  reclaim_max_s       to its next claim
  cron                pg_cron runs: none on the standby while it was one (its log), the jobctl-tick
                      run on the new primary after the promotion
  standby_maintenance jobctl.tick(), maintain_partitions(), reap_expired_leases() and
                      expand_schedules() called on the standby in recovery: each returned 0

    .venv/bin/python benchmarks/failover.py             # 30 s leases, 60 s of load each side (~2.5 min)
    .venv/bin/python benchmarks/failover.py --repeat 3  # three drills, then their medians
    .venv/bin/python benchmarks/failover.py --small     # 5 s leases, 15 s of load each side (~1.5 min)
    .venv/bin/python benchmarks/failover.py --outage 30 # promote 30 s after the kill, as a 30 s TTL would
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from chaos import (
    BENCH,
    LEDGER_DDL,
    ROOT,
    Run,
    Sql,
    drain_and_stop,
    guarded,
    invariants,
    job_spec,
    log,
    print_table,
    produce_api,
    produce_sql,
    spawn_worker,
    start_api,
)
from clusters import Cluster, as_pg, pg_bin, port_free, reachable_by_postgres, remove_run
from psycopg.conninfo import make_conninfo

SIZES: dict[str, dict[str, Any]] = {
    # warm / after: least seconds of load before the kill and after the promotion
    "full": {"workers": 4, "lease": 30.0, "rate": 30, "warm": 60.0, "after": 60.0, "cli_every": 1.0},
    "small": {"workers": 3, "lease": 5.0, "rate": 20, "warm": 15.0, "after": 15.0, "cli_every": 2.0},
}
STANDBY_NAME = "jobctl_standby"
EPOCH_STEP = 1_000_000_000  # the fencing epoch moves this far at a promotion (see promote())
PRIMARY_CONF = f"""\
synchronous_standby_names = 'FIRST 1 ({STANDBY_NAME})'
synchronous_commit = local
cron.use_background_workers = on
max_worker_processes = 16
"""
MAINTENANCE = ("tick", "maintain_partitions", "reap_expired_leases", "expand_schedules")


def build(base: Path) -> tuple[Cluster, Cluster]:
    """The primary through bin/db (its settings and the migration), then the standby by pg_basebackup."""
    port = 55460
    while not port_free(port):
        port += 1
    primary_name = str((base / "primary").relative_to(ROOT))
    env = {**os.environ, "JOBCTL_PGNAME": primary_name, "JOBCTL_PG_PORT": str(port), "JOBCTL_PG_DB": "jobctl"}
    env["JOBCTL_PG_EXTRA_CONF"] = PRIMARY_CONF
    subprocess.run([str(ROOT / "bin" / "db")], env=env, check=True, capture_output=True, timeout=300)
    # the server's commands get real paths: a link under the checkout may be one postgres cannot follow
    primary = Cluster((base / "primary").resolve(), int((base / "primary" / "port").read_text()))
    standby_port = primary.port + 1
    while not port_free(standby_port):
        standby_port += 1
    standby = Cluster((base / "standby").resolve(), standby_port)
    standby.path.mkdir(parents=True)
    if os.getuid() == 0:
        shutil.chown(standby.path, "postgres", "postgres")
    source = make_conninfo(
        "", host=str(primary.path), port=str(primary.port), user="postgres", application_name=STANDBY_NAME
    )
    subprocess.run(
        as_pg(
            [
                str(pg_bin() / "pg_basebackup"),
                "-D",
                str(standby.data),
                "-d",
                source,
                "-X",
                "stream",
                "-C",
                "-S",
                STANDBY_NAME,
                "-R",
                "-c",
                "fast",
            ]
        ),  # fmt: skip
        check=True,
        capture_output=True,
        timeout=300,
    )
    conf = (
        f"# --- jobctl standby ---\nport = {standby.port}\nunix_socket_directories = '{standby.path}'\n"
        f"cron.host = '{standby.path}'\nsynchronous_standby_names = ''\n"
    )
    subprocess.run(
        as_pg(["tee", "-a", str(standby.data / "postgresql.conf")]),
        input=conf.encode(),
        check=True,
        capture_output=True,
    )
    standby.ctl("-l", str(standby.path / "server.log"), "-w", "-t", "60", "start")
    sql = Sql(primary.dsn())
    deadline = time.monotonic() + 60
    while not sql(
        "select exists (select from pg_stat_replication where application_name = %s"
        " and state = 'streaming' and sync_state = 'sync')",
        (STANDBY_NAME,),
    )[0][0]:
        if time.monotonic() > deadline:
            raise RuntimeError("the standby did not become a synchronous standby")
        time.sleep(0.2)
    return primary, standby


def produce_cli(run: Run, every: float, failures: list[str]) -> None:
    """`jobctl submit` a process at a time, each retried until it exits 0 (a dedup key per job)."""
    n = 0
    env = {**os.environ, "JOBCTL_DSN": run.dsn}
    while not run.stop_producing.is_set():
        key = f"{run.queue}-c{n}"
        n += 1
        spec = job_spec(run, key)
        cmd = [sys.executable, "-m", "jobctl.cli", "submit", run.tenant, run.queue,
               json.dumps(spec["payload"]), "--dedup-key", key, "--max-attempts", str(spec["max_attempts"]),
               "--backoff", json.dumps(spec["backoff"]), "--json"]  # fmt: skip
        while not run.stop_producing.is_set():
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
            if p.returncode == 0:
                run.ack("cli", {key: int(json.loads(p.stdout)["job_id"])})
                break
            failures.append(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
            time.sleep(0.2)
        time.sleep(every)


def cron_runs(sql: Sql, since: float) -> int:
    [(n,)] = sql(
        "select count(*) from cron.job_run_details as d join cron.job as j using (jobid)"
        " where j.jobname = 'jobctl-tick' and d.status = 'succeeded' and d.start_time > to_timestamp(%s)",
        (since,),
    )
    return int(n)


def detect(primary: Cluster, probes: int = 3, every: float = 0.5) -> float:
    """The detector: `select 1` on the primary every 0.5 s; down after 3 failures in a row."""
    failed = 0
    while failed < probes:
        try:
            with psycopg.connect(primary.dsn(connect_timeout="2"), autocommit=True) as c:
                c.execute("select 1")
            failed = 0
        except psycopg.OperationalError:
            failed += 1
        time.sleep(every)
    return time.time()


def promote(standby: Cluster) -> dict[str, Any]:
    """The promotion: pg_ctl promote (waits until the standby accepts writes), then the fencing epoch
    moves far past anything the old primary may have handed out in claims it committed but never
    streamed (the sequence restarts from the last state the standby received; a reissued epoch could
    let a worker of the old primary pass for the new holder of the same job). pg_cron needs no step:
    its launcher starts by itself once recovery ends, and with cron.use_background_workers its jobs
    run in the local database whatever cron.job.nodename says."""
    standby.ctl("promote", "-w", "-t", "60")
    sql = Sql(standby.dsn())
    [(epoch,)] = sql(
        "select setval('jobctl.lease_epoch_seq', (select last_value from jobctl.lease_epoch_seq) + %s)",
        (EPOCH_STEP,),
    )
    [(node,)] = sql("select array_agg(distinct nodename) from cron.job where jobname like 'jobctl-%%'")
    return {"epoch_from": int(epoch), "cron_nodenames": node}


def standby_maintenance(standby: Cluster) -> dict[str, Any]:
    """Each periodic function on the standby in recovery: it must return 0 without an error."""
    sql = Sql(standby.dsn())
    [(recovery,)] = sql("select pg_is_in_recovery()")
    out: dict[str, Any] = {"in_recovery": bool(recovery)}
    for fn in MAINTENANCE:
        try:
            out[fn] = sql(f"select jobctl.{fn}()")[0][0]
        except psycopg.Error as e:
            out[fn] = f"error {e.sqlstate}: {str(e).strip().splitlines()[0]}"
    return out


def downtime(times: list[float], kill_at: float, promoted_at: float) -> float | None:
    """The longest wait between two successes of a client across the failover: from a success before
    the promotion to the next one, after the kill (an answer still arriving just after the kill is a
    success, and the wait runs from it)."""
    times = sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(times) if a <= promoted_at and b >= kill_at]
    return round(max(gaps), 2) if gaps else None


def in_flight(sql: Sql, kill_at: float) -> dict[str, Any]:
    """Attempts open at the kill, as the new primary knows them (invariants() made `attempts`)."""
    rows = sql(
        "select a.how, extract(epoch from a.ended), extract(epoch from b.claimed)"
        " from attempts as a left join attempts as b on b.job_id = a.job_id and b.attempt = a.attempt + 1"
        " where a.claimed < to_timestamp(%s) and (a.ended is null or a.ended >= to_timestamp(%s))",
        (kill_at, kill_at),
    )
    requeued = [(float(e), c) for how, e, c in rows if how != "completed" and e is not None]
    requeue = [e - kill_at for e, _ in requeued]
    reclaim = [float(c) - kill_at for _, c in requeued if c is not None]
    [(claims,)] = sql(
        "select array_agg(extract(epoch from claimed)::float8) from attempts where claimed is not null"
    )
    return {
        "in_flight": len(rows),
        "completed_after_failover": sum(1 for how, _, _ in rows if how == "completed"),
        "requeued": len(requeued),
        "requeue_max_s": round(max(requeue), 2) if requeue else None,
        "reclaim_max_s": round(max(reclaim), 2) if reclaim else None,
        "claim_times": [float(t) for t in claims or []],
    }


def drill(size_name: str, base: Path, outage: float) -> dict[str, Any]:
    size = SIZES[size_name]
    started = time.time()
    primary, standby = build(base)
    built_s = time.time() - started
    dsn = make_conninfo(
        "",
        host=f"{primary.path},{standby.path}",
        port=f"{primary.port},{standby.port}",
        dbname="jobctl",
        user="postgres",
        target_session_attrs="read-write",
        connect_timeout="2",
    )
    log(f"primary :{primary.port}, synchronous standby :{standby.port}, built in {built_s:.1f} s; {dsn}")
    tmp = base / "logs"
    tmp.mkdir()
    run = Run("failover", {"lease": size["lease"]}, dsn, tmp)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        sql = Sql(dsn)
        sql(LEDGER_DDL)
        streaming_since = time.time()
        for _ in range(size["workers"]):
            spawn_worker(run, None)
        api, base_url, token = start_api(run)
        procs.append(api)
        cli_failures: list[str] = []
        producers = [
            threading.Thread(target=guarded, args=(run, produce_sql, run, size["rate"] / 2), daemon=True),
            threading.Thread(
                target=guarded, args=(run, produce_api, run, base_url, token, size["rate"] / 2), daemon=True
            ),
            threading.Thread(
                target=guarded, args=(run, produce_cli, run, size["cli_every"], cli_failures), daemon=True
            ),
        ]
        for t in producers:
            t.start()
        # load for `warm` seconds, and until pg_cron ran the tick on the primary while the standby streamed
        load_from = time.monotonic()
        while time.monotonic() - load_from < size["warm"] or cron_runs(sql, streaming_since) == 0:
            time.sleep(0.5)
        maintenance = standby_maintenance(standby)
        # pg_cron's own lines: "pg_cron scheduler started", "cron job 1 starting: SELECT jobctl.tick()"
        standby_cron = {
            "scheduler": standby.log_lines("pg_cron scheduler started"),
            "runs": standby.log_lines("cron job", "starting:"),
        }
        log(f"standby in recovery: maintenance {maintenance}, pg_cron in its log {standby_cron}")
        kill_at = time.time()
        killed = primary.kill()
        log(f"killed the primary ({killed} processes)")
        detected_at = detect(primary)
        time.sleep(max(0.0, kill_at + outage - time.time()))  # a slower detector (--outage)
        steps = promote(standby)
        promoted_at = time.time()
        log(f"promoted {promoted_at - kill_at:.2f} s after the kill ({steps})")
        after_from = time.monotonic()
        while time.monotonic() - after_from < size["after"] or cron_runs(sql, promoted_at) == 0:
            if time.monotonic() - after_from > 150:
                break
            time.sleep(0.5)
        run.stop_producing.set()
        for t in producers:
            t.join(120)
        loaded_s = time.time() - started - built_s
        drain_and_stop(run, sql, api, size["lease"] * 4 + 120)
    finally:  # a drill that failed half-way leaves no worker or API behind
        run.stop_producing.set()
        for proc in [w.proc for w in run.workers] + procs:
            if proc.poll() is None:
                proc.kill()
    counts: dict[str, int] = {}
    for w in run.workers:
        for k, v in w.summary().items():
            counts[k] = counts.get(k, 0) + v
    checked = invariants(run, sql)
    for k in ("orphans_requeued", "requeue_max_s", "reclaim_max_s"):  # chaos.py's, of kill -9 of workers
        checked.pop(k)
    flight = in_flight(sql, kill_at)
    claim_times = flight.pop("claim_times")
    [(unacked,)] = sql(
        "select count(*) from jobctl.job where queue = %s and job_id <> all(%s)",
        (run.queue, list(run.acked.values())),
    )
    down = {kind: downtime(times, kill_at, promoted_at) for kind, times in sorted(run.ack_times.items())}
    down["workers"] = downtime(claim_times, kill_at, promoted_at)
    result: dict[str, Any] = {
        "scenario": "failover",
        "size": size_name,
        "lease_s": size["lease"],
        "outage_s": outage,
        "faults": {"primary_sigkill": 1, "promote": 1},
        "loaded_s": round(loaded_s, 1),
        "detect_s": round(detected_at - kill_at, 2),
        "promote_s": round(promoted_at - kill_at, 2),
        "downtime_s": down,
        "downtime_max_s": max((v for v in down.values() if v is not None), default=None),
        "submit_errors": len(run.submit_errors),
        "cli_retries": len(cli_failures),
        **checked,
        "unacked_committed": int(unacked),
        **flight,
        "cron": {
            "standby_scheduler_started": standby_cron["scheduler"],
            "standby_runs": standby_cron["runs"],
            "new_primary_runs": standby.log_lines("cron job", "starting:") - standby_cron["runs"],
            "ticks_after_promotion": cron_runs(sql, promoted_at),
            "nodename_old_primary": steps["cron_nodenames"] == [str(primary.path)],
        },
        "standby_maintenance": maintenance,
        "acks": {kind: len(times) for kind, times in sorted(run.ack_times.items())},
        "worker_counts": counts,
    }
    for e in run.submit_errors[:5]:
        log("submit error: " + e)
    for e in cli_failures[:3]:
        log("cli failure (retried): " + e)
    return result


def stop_clusters(base: Path) -> None:
    for name in ("primary", "standby"):
        c = Cluster((base / name).resolve(), 0)
        if (c.data / "postmaster.pid").exists():
            try:
                c.ctl("-m", "immediate", "stop", timeout=60)
            except subprocess.CalledProcessError:
                c.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="the scaled-down drill tests/test_failover.py runs")
    ap.add_argument("--repeat", type=int, default=1, help="drills in a row, then their medians")
    ap.add_argument(
        "--outage",
        type=float,
        default=0.0,
        help="promote no sooner than this many seconds after the kill (a detector with a TTL; default: "
        "as soon as 3 probes failed)",
    )
    ap.add_argument("--keep", action="store_true", help="leave the clusters and logs under .failover/")
    args = ap.parse_args()
    size_name = "small" if args.small else "full"
    results = []
    for i in range(args.repeat):
        base = reachable_by_postgres(ROOT / ".failover") / f"run-{os.getpid()}-{i}"
        if base.exists():
            stop_clusters(base)
            remove_run(base)
        base.mkdir(parents=True)
        try:
            r = drill(size_name, base, args.outage)
        finally:
            stop_clusters(base)
            if not args.keep:
                remove_run(base)
        print(json.dumps(r), flush=True)
        print_table(r)
        if not args.small:
            with open(BENCH / "results" / "failover.jsonl", "a") as out:
                out.write(json.dumps(r) + "\n")
        results.append(r)
    if len(results) > 1:
        medians: dict[str, Any] = {"drills": len(results)}
        for key in ("detect_s", "promote_s", "downtime_max_s"):
            medians[key] = statistics.median(r[key] for r in results)
        for kind in results[0]["downtime_s"]:
            values = [r["downtime_s"][kind] for r in results if r["downtime_s"].get(kind) is not None]
            medians[f"downtime_s.{kind}"] = statistics.median(values) if values else None
        for key in ("lost", "duplicates", "unfinished"):
            medians[key + "_total"] = sum(r[key] for r in results)
        medians["requeue_max_s"] = max(
            (r["requeue_max_s"] for r in results if r["requeue_max_s"]), default=None
        )
        print(json.dumps({"medians": medians}))
        print_table(medians)


if __name__ == "__main__":
    main()
