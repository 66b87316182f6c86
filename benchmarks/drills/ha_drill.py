"""High-availability drill on Patroni: etcd and two PostgreSQL nodes under Patroni on this machine
(loopback only), synchronous mode, jobctl's fencing epoch moved by the on_role_change callback
(bin/patroni-on-role-change); real `jobctl worker` processes, the HTTP API and a SQL producer on one
libpq multi-host string (target_session_attrs=read-write), the invariants of chaos.py.

Each round runs two events, each under its own load (a queue, 3-4 workers, the API, two producers):
  kill        SIGKILL of the leader's postmaster alone (Patroni lives on: primary_start_timeout = 0
              makes it hand the leader key over rather than restart the crashed primary)
  switchover  a planned switchover through Patroni's REST API (POST /switchover), leader -> replica
  host        (full drill only) SIGKILL of the leader's Patroni and every process of its PostgreSQL:
              a crashed host; the leader key expires after the TTL (20 s), then the other node
              takes over; the host's Patroni is started again and rejoins
Then the load goes on, the old leader rejoins as the synchronous standby (pg_rewind when it diverged),
the queue drains and the ledger is checked.

Topology (under .ha/run-<pid>/, removed at the end unless --keep), ports 25520-25526:
  etcd 3.4      client 127.0.0.1:25520, peer :25521 (Patroni's etcd3 DCS)
  node1, node2  PostgreSQL :25522 / :25523, Patroni REST :25524 / :25525; HA_PARAMETERS below
  jobctl serve  :25526 (or the next free port up to 25539)

Measured per event (JSON lines, then a table; a full run writes benchmarks/results/ha_drill.jsonl):
  promote_s           the kill (or the switchover request) to the other node taking writes
  epoch_s             to the epoch sequence at the new timeline's floor (the callback ran)
  rejoin_s            to both members running again, one of them the synchronous standby (the small
                      drill does not wait for it after its last event, the kill)
  downtime_s.<kind>   SQL producer (submit_jobs), API producer (POST /api/v1/jobs), workers' claims:
                      the longest wait between two successes across the event
  lost, duplicates, unfinished, missing, stray, overlaps   chaos.py's invariants, all must be 0
  unacked_committed   jobs in the database whose submit was never acknowledged
  cron_ticks_after_promotion   pg_cron's jobctl-tick runs on the new primary (the full drill waits
                      up to 75 s after the promotion for one)
  callback            the callback's lines in the new leader's Patroni log: epoch moved / unchanged

    .venv/bin/python benchmarks/drills/ha_drill.py --rounds 3   # the full drill (make ha-drill)
    .venv/bin/python benchmarks/drills/ha_drill.py --small      # one round, small (tests/test_ha.py)
    .venv/bin/python benchmarks/drills/ha_drill.py --strict     # synchronous_mode_strict: true
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import pwd
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from chaos import (
    LEDGER_DDL,
    ROOT,
    Run,
    Sql,
    drain_and_stop,
    invariants,
    log,
    print_table,
    spawn_worker,
    start_api,
    start_producers,
)
from clusters import as_pg, pg_bin, port_free, reachable_by_postgres
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

SIZES: dict[str, dict[str, Any]] = {
    # warm / after: least seconds of load before the event and after the promotion
    # rejoin_last: wait for the old leader to rejoin after the run's last event too. The small drill
    # does not: its last event is the kill, whose rejoin (crash recovery, pg_rewind, sync standby again)
    # is about 25 s of make test, and the full drill measures it every round
    "full": {
        "workers": 4,
        "lease": 30.0,
        "rate": 30,
        "warm": 30.0,
        "after": 20.0,
        "cron": True,
        "rejoin_last": True,
    },
    "small": {
        "workers": 3,
        "lease": 5.0,
        "rate": 20,
        "warm": 5.0,
        "after": 4.0,
        "cron": False,
        "rejoin_last": False,
    },
}
EVENTS = {"full": ("kill", "switchover", "host"), "small": ("switchover", "kill")}
ETCD_CLIENT, ETCD_PEER, API_PORT = 25520, 25521, 25526
NODES = (("node1", 25522, 25524), ("node2", 25523, 25525))  # name, PostgreSQL port, REST port
SCOPE = "jobctl-ha"
CALLBACK = ROOT / "bin" / "patroni-on-role-change"
EPOCH_SHIFT = 40  # the callback moves the epoch to timeline << 40
# the cluster-wide settings Patroni keeps in etcd (bootstrap.dcs): bin/db's, and docs/operations.md's
HA_PARAMETERS: dict[str, Any] = {
    "shared_preload_libraries": "pg_cron",
    "cron.database_name": "jobctl",
    "cron.use_background_workers": "on",  # jobs run in the local database, only on the primary
    "max_worker_processes": 16,
    "synchronous_commit": "local",  # jobctl._submit asks for `on` itself: submits wait for the standby
    "wal_log_hints": "on",  # pg_rewind of a crashed leader
    "shared_buffers": "256MB",
    "max_connections": 200,
    "log_min_messages": "warning",
    "log_line_prefix": "%m [%p] %q%u@%d ",
}
DCS: dict[str, Any] = {
    "ttl": 20,
    "loop_wait": 2,
    "retry_timeout": 5,
    "synchronous_mode": True,
    "primary_start_timeout": 0,  # a crashed primary fails over at once (no loss: the standby is sync)
    "postgresql": {"use_pg_rewind": True, "use_slots": True, "parameters": HA_PARAMETERS},
}
INVARIANTS = ("lost", "duplicates", "unfinished", "missing", "stray", "overlaps", "unacked_committed")
ERRORS = re.compile(r"\b(ERROR|FATAL|PANIC|CRITICAL)\b|could not")  # the log lines a failed wait prints
MAINTENANCE = ("tick", "maintain_partitions", "reap_expired_leases", "expand_schedules")


def as_postgres() -> dict[str, Any]:
    """Popen's arguments that run a process as the OS user postgres when we are root."""
    if os.getuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


class Node:
    """One PostgreSQL under its own Patroni."""

    def __init__(self, base: Path, name: str, port: int, rest: int) -> None:
        self.name, self.port, self.rest = name, port, rest
        self.path = base / name
        self.data = self.path / "data"
        self.proc: subprocess.Popen[bytes] | None = None

    def dsn(self, **extra: str) -> str:
        params = {"host": "127.0.0.1", "port": str(self.port), "dbname": "jobctl", "user": "postgres"}
        return make_conninfo("", **{**params, **extra})

    def config(self, strict: bool, callback: Path) -> dict[str, Any]:
        local = make_conninfo("", host=str(self.path), port=str(self.port), dbname="jobctl", user="postgres")
        return {
            "scope": SCOPE,
            "name": self.name,
            "restapi": {"listen": f"127.0.0.1:{self.rest}", "connect_address": f"127.0.0.1:{self.rest}"},
            "etcd3": {"hosts": [f"127.0.0.1:{ETCD_CLIENT}"]},
            "bootstrap": {
                "dcs": {**DCS, "synchronous_mode_strict": strict},
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{self.port}",
                "connect_address": f"127.0.0.1:{self.port}",
                "data_dir": str(self.data),
                "bin_dir": str(pg_bin()),
                "pgpass": str(self.path / "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres"},
                    "replication": {"username": "postgres"},
                    "rewind": {"username": "postgres"},
                },
                "parameters": {"unix_socket_directories": str(self.path)},
                "basebackup": [{"checkpoint": "fast"}],
                "pg_hba": [
                    "local all all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
                "callbacks": {"on_role_change": f"{callback} '{local}'"},
            },
        }

    def start(self, strict: bool, callback: Path) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        conf = self.path / "patroni.yml"
        conf.write_text(json.dumps(self.config(strict, callback), indent=1))  # JSON is YAML
        if os.getuid() == 0:
            for p in (self.path, conf):
                shutil.chown(p, "postgres", "postgres")
        out = open(self.path / "patroni.log", "ab")  # noqa: SIM115 (open for the process's life)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "VIRTUAL_ENV", "PYTHON"))}
        if os.getuid() == 0:
            env["HOME"] = pwd.getpwnam("postgres").pw_dir
        self.proc = subprocess.Popen(
            ["/usr/bin/patroni", str(conf)],
            cwd=self.path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **as_postgres(),
        )

    def postmaster_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.data / "postmaster.pid").read_text().split()[0])
        return None

    def writable(self, dbname: str = "jobctl") -> bool:
        """The server takes writes (database postgres: before jobctl exists)."""
        try:
            with psycopg.connect(self.dsn(connect_timeout="2", dbname=dbname), autocommit=True) as c:
                return c.execute("select not pg_is_in_recovery()").fetchone() == (True,)
        except psycopg.Error:
            return False

    def log_lines(self, *needles: str) -> list[str]:
        try:
            text = (self.path / "patroni.log").read_text(errors="replace")
        except FileNotFoundError:  # not started yet
            return []
        return [line for line in text.splitlines() if all(n in line for n in needles)]

    def crash(self) -> int:
        """SIGKILL to Patroni, the postmaster and its children at once: a crashed host."""
        assert self.proc is not None
        postmaster = self.postmaster_pid()
        pids = [self.proc.pid]
        if postmaster is not None:
            pids.append(postmaster)
            for stat in Path("/proc").glob("[0-9]*/stat"):
                with contextlib.suppress(OSError, IndexError, ValueError):
                    if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                        pids.append(int(stat.parent.name))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)
        return len(pids)

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM to Patroni (it stops PostgreSQL), SIGKILL to what is left after `timeout`."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        pid = self.postmaster_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Ha:
    """etcd and the two Patroni nodes."""

    def __init__(self, base: Path, strict: bool) -> None:
        self.base, self.strict = base, strict
        self.nodes = [Node(base, *n) for n in NODES]
        self.etcd: subprocess.Popen[bytes] | None = None
        self.callback = CALLBACK
        self.dsn = make_conninfo(
            "",
            host=",".join("127.0.0.1" for _ in self.nodes),
            port=",".join(str(n.port) for n in self.nodes),
            dbname="jobctl",
            user="postgres",
            target_session_attrs="read-write",
            connect_timeout="2",
        )

    def build(self) -> float:
        started = time.monotonic()
        busy = [ETCD_CLIENT, ETCD_PEER, *(x for _, a, b in NODES for x in (a, b))]
        if not all(port_free(p) for p in busy):
            sys.exit(f"ha_drill: a port of {busy} is in use (a drill left running? see .ha/)")
        if os.getuid() == 0 and subprocess.run(as_pg(["test", "-x", str(CALLBACK)]), check=False).returncode:
            self.callback = self.base / CALLBACK.name  # the checkout is out of postgres's reach: a copy
            shutil.copy2(CALLBACK, self.callback)
        callback = self.callback
        etcd_log = open(self.base / "etcd.log", "ab")  # noqa: SIM115
        url = f"http://127.0.0.1:{ETCD_CLIENT}"
        peer = f"http://127.0.0.1:{ETCD_PEER}"
        self.etcd = subprocess.Popen(
            ["/usr/bin/etcd", "--name", "ha", "--data-dir", str(self.base / "etcd"),
             "--listen-client-urls", url, "--advertise-client-urls", url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"ha={peer}", "--initial-cluster-state", "new"],
            stdout=etcd_log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        wait_for(lambda: http_ok(f"{url}/health"), 30, "etcd did not start")
        first, second = self.nodes
        first.start(self.strict, callback)
        wait_for(lambda: first.writable("postgres"), 90, "the first node did not bootstrap", first)
        subprocess.run(
            as_pg([str(pg_bin() / "createdb"), "-h", str(first.path), "-p", str(first.port), "jobctl"]),
            check=True,
            capture_output=True,
        )
        migrate = subprocess.run(
            [sys.executable, "-m", "jobctl.cli", "migrate"],
            env={**os.environ, "JOBCTL_DSN": first.dsn()},
            capture_output=True,
            text=True,
            check=False,
        )
        if migrate.returncode != 0:
            raise RuntimeError("jobctl migrate failed: " + migrate.stdout + migrate.stderr)
        second.start(self.strict, callback)
        self.healthy(120)
        return time.monotonic() - started

    def members(self) -> list[dict[str, Any]]:
        for node in self.nodes:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                r = httpx.get(f"http://127.0.0.1:{node.rest}/cluster", timeout=2)
                return list(r.json().get("members", []))
        return []

    def healthy(self, timeout: float) -> None:
        """Both members running, one the leader and the other its synchronous standby."""

        def ok() -> bool:
            m = self.members()
            return sorted(x.get("role", "") for x in m) == ["leader", "sync_standby"] and all(
                x.get("state") in ("running", "streaming") for x in m
            )

        wait_for(ok, timeout, "the cluster did not get back a leader and a synchronous standby", *self.nodes)

    def leader(self) -> tuple[Node, Node]:
        [name] = [m["name"] for m in self.members() if m.get("role") == "leader"]
        leader = next(n for n in self.nodes if n.name == name)
        return leader, next(n for n in self.nodes if n is not leader)

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()
        if self.etcd is not None and self.etcd.poll() is None:
            self.etcd.terminate()
            try:
                self.etcd.wait(30)
            except subprocess.TimeoutExpired:
                self.etcd.kill()


def api_port() -> int:
    """The API's port: the first of 25526-25539 that binds (an API of an earlier event may still hold one)."""
    for port in range(API_PORT, 25540):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 25526-25539 for the API")


def http_ok(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url, timeout=2).status_code == 200
    return False


def wait_for(check: Any, timeout: float, what: str, *nodes: Node, every: float = 0.2) -> float:
    """Poll `check` until it holds; past `timeout`, fail with `what` and the errors in the nodes' logs."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            errors = [f"{n.name}: {line}" for n in nodes for line in n.log_lines() if ERRORS.search(line)]
            raise RuntimeError("\n".join([what, *errors[-20:]]))
        time.sleep(every)
    return time.time()


def epoch_state(node: Node) -> tuple[int, int]:
    """(timeline WAL is written on, lease_epoch_seq's last value) of a primary."""
    with psycopg.connect(node.dsn(connect_timeout="2"), autocommit=True) as c:
        row = c.execute(
            "select ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint,"
            " (select last_value from jobctl.lease_epoch_seq)"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def epoch_moved(node: Node) -> bool:
    try:
        timeline, last = epoch_state(node)
    except psycopg.Error:
        return False
    return last >= timeline << EPOCH_SHIFT


def standby_maintenance(standby: Node) -> dict[str, Any]:
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


def downtime(times: list[float], event_at: float, promoted_at: float) -> float | None:
    """The longest wait between two successes of a client across the event: from a success before
    the promotion to the next one, after the event (an answer still arriving just after the event is
    a success, and the wait runs from it)."""
    times = sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(times) if a <= promoted_at and b >= event_at]
    return round(max(gaps), 2) if gaps else None


def cron_ticks(sql: Sql, since: float) -> int:
    """pg_cron's jobctl-tick runs that succeeded since then (on the new primary: the table is written
    where the job ran, and only a primary runs them)."""
    [(n,)] = sql(
        "select count(*) from cron.job_run_details as d join cron.job as j using (jobid)"
        " where j.jobname = 'jobctl-tick' and d.status = 'succeeded' and d.start_time > to_timestamp(%s)",
        (since,),
    )
    return int(n)


def claim_times(sql: Sql) -> list[float]:
    """Every attempt's claim (invariants() made `attempts`)."""
    [(claims,)] = sql(
        "select array_agg(extract(epoch from claimed)::float8) from attempts where claimed is not null"
    )
    return [float(t) for t in claims or []]


def in_flight(sql: Sql, event_at: float) -> dict[str, Any]:
    """Attempts open at the event, as the new primary knows them."""
    rows = sql(
        "select a.how from attempts as a"
        " where a.claimed < to_timestamp(%s) and (a.ended is null or a.ended >= to_timestamp(%s))",
        (event_at, event_at),
    )
    return {
        "in_flight": len(rows),
        "completed_after_event": sum(1 for (how,) in rows if how == "completed"),
        "requeued": sum(1 for (how,) in rows if how != "completed"),
    }


ZOMBIES = 64  # claims the old primary makes and never streams: more than a sequence logs ahead (32)


def zombie_claims(leader: Node, standby: Node, queue: str) -> dict[str, Any]:
    """Claims the old primary hands out and never streams. ZOMBIES jobs are submitted
    (a submit waits for the synchronous standby) and seen on the standby; then the leader's WAL senders
    are stopped (SIGSTOP) and one claim takes every job: its epochs reach no standby, and the standby's
    sequence stays behind them. The workers holding them are the zombies: after the promotion their
    epochs must be fenced (zombies_fenced). The caller kills the leader, then the stopped senders."""
    with psycopg.connect(leader.dsn(), autocommit=True) as c:
        c.execute(
            "select jobctl.submit_jobs(%s)",
            (Jsonb([{"tenant_id": "zombie", "queue": queue, "payload": {}}] * ZOMBIES),),
        )
        senders = [int(pid) for (pid,) in c.execute("select pid from pg_stat_replication").fetchall()]

    def replayed() -> bool:
        with psycopg.connect(standby.dsn(connect_timeout="2"), autocommit=True) as c:
            row = c.execute("select count(*) from jobctl.job where queue = %s", (queue,)).fetchone()
        return row == (ZOMBIES,)

    wait_for(replayed, 30, "the zombies' jobs did not reach the standby", standby)
    for pid in senders:
        os.kill(pid, signal.SIGSTOP)
    claims: list[tuple[int, int]] = []
    with psycopg.connect(leader.dsn(), autocommit=True) as c:
        deadline = time.monotonic() + 10
        while len(claims) < ZOMBIES and time.monotonic() < deadline:
            claims += c.execute(
                "select job_id, lease_epoch from jobctl.claim_job('zombie', %s, %s)",
                ([queue], ZOMBIES - len(claims)),
            ).fetchall()
    with psycopg.connect(standby.dsn(connect_timeout="2"), autocommit=True) as c:
        row = c.execute("select last_value from jobctl.lease_epoch_seq").fetchone()
    assert row is not None
    return {"claims": [(int(j), int(e)) for j, e in claims], "senders": senders, "standby_seq": int(row[0])}


def zombies_fenced(node: Node, queue: str, zombies: dict[str, Any]) -> dict[str, Any]:
    """On the new primary, as soon as it takes writes: its claims of the zombies' jobs get epochs above
    every epoch the old primary handed out, and each zombie's heartbeat and complete with its old
    epoch are refused (lost, false), however they race the new claims; then the new claims complete."""
    old = dict(zombies["claims"])
    with psycopg.connect(node.dsn(), autocommit=True) as c:
        new: dict[int, int] = {}
        deadline = time.monotonic() + 30
        while len(new) < len(old) and time.monotonic() < deadline:
            for job, epoch in c.execute(
                "select job_id, lease_epoch from jobctl.claim_job('after', %s, %s)", ([queue], ZOMBIES)
            ).fetchall():
                new[int(job)] = int(epoch)
            time.sleep(0.05)
        heartbeat, complete = "select jobctl.heartbeat(%s, %s)", "select jobctl.complete_job(%s, %s)"
        heard = [c.execute(heartbeat, (j, e)).fetchone() for j, e in old.items()]
        done = [c.execute(complete, (j, e)).fetchone() for j, e in old.items()]
        completed = [c.execute(complete, (j, e)).fetchone() for j, e in new.items()]
    return {
        "zombies": len(old),
        "streamed_seq": zombies["standby_seq"],  # the standby's sequence when the leader was killed
        "old_epochs": [min(old.values()), max(old.values())] if old else None,
        "new_epochs": [min(new.values()), max(new.values())] if new else None,
        "reclaimed": len(new),
        "zombie_heartbeats_lost": sum(1 for h in heard if h == ("lost",)),
        "zombie_completes_refused": sum(1 for d in done if d == (False,)),
        "new_completes": sum(1 for d in completed if d == (True,)),
    }


def zombie_problems(z: dict[str, Any]) -> list[str]:
    """What breaks the fence (or the injection: a claim that was streamed after all tests nothing)."""
    n, old, new = z["zombies"], z["old_epochs"], z["new_epochs"]
    out = []
    if old is None or old[1] <= z["streamed_seq"]:
        out.append(f"the zombies' epochs {old} were streamed (standby sequence {z['streamed_seq']})")
    if z["reclaimed"] != n or new is None or old is None or new[0] <= old[1]:
        out.append(f"reclaimed {z['reclaimed']} of {n}, new epochs {new} not above the old {old}")
    if z["zombie_heartbeats_lost"] != n or z["zombie_completes_refused"] != n:
        out.append(f"zombies not fenced: {z}")
    if z["new_completes"] != z["reclaimed"]:
        out.append(f"{z['new_completes']} of {z['reclaimed']} new claims completed")
    return out


def switchover(leader: Node, candidate: Node, errors: list[str]) -> None:
    try:
        r = httpx.post(
            f"http://127.0.0.1:{leader.rest}/switchover",
            json={"leader": leader.name, "candidate": candidate.name},
            timeout=90,
        )
        if r.status_code != 200:
            errors.append(f"switchover answered {r.status_code}: {r.text}")
    except httpx.HTTPError as e:
        errors.append(f"switchover: {e!r}")


def event(ha: Ha, kind: str, size: dict[str, Any], base: Path, n: int, last: bool) -> dict[str, Any]:
    tmp = base / f"logs-{n}-{kind}"
    tmp.mkdir()
    run = Run("ha-" + kind, {"lease": size["lease"]}, ha.dsn, tmp)
    sql = Sql(ha.dsn)
    sql(LEDGER_DDL)
    leader, other = ha.leader()
    maintenance = standby_maintenance(other)
    callback_lines = len(other.log_lines("patroni-on-role-change:"))
    procs: list[subprocess.Popen[bytes]] = []
    errors: list[str] = []
    try:
        for _ in range(size["workers"]):
            spawn_worker(run, None)
        api, base_url, token = start_api(run, port=api_port())
        procs.append(api)
        producers = start_producers(run, base_url, token, size["rate"])
        time.sleep(size["warm"])
        event_at = time.time()
        zombies: dict[str, Any] | None = None
        if kind == "kill":
            zombies = zombie_claims(leader, other, run.queue + "_zombie")
            event_at = time.time()
            pid = leader.postmaster_pid()
            assert pid is not None, "the leader has no postmaster.pid"
            os.kill(pid, signal.SIGKILL)
            for sender in zombies["senders"]:  # stopped, they send nothing more; now they go
                with contextlib.suppress(ProcessLookupError):
                    os.kill(sender, signal.SIGKILL)
            log(
                f"round {n}: {len(zombies['claims'])} claims never streamed (standby sequence at"
                f" {zombies['standby_seq']}), then SIGKILL to {leader.name}'s postmaster ({pid})"
            )
            requester = None
        elif kind == "host":
            killed = leader.crash()
            log(f"round {n}: SIGKILL to {leader.name}'s Patroni and PostgreSQL ({killed} processes)")
            requester = None
        else:
            requester = threading.Thread(target=switchover, args=(leader, other, errors), daemon=True)
            requester.start()
            log(f"round {n}: switchover {leader.name} -> {other.name} requested")
        promoted_at = wait_for(other.writable, 120, f"{other.name} did not take writes", other, every=0.05)
        fenced = zombies_fenced(other, run.queue + "_zombie", zombies) if zombies else None
        epoch_at = wait_for(lambda: epoch_moved(other), 60, "the epoch did not move", every=0.05)
        log(f"round {n}: {other.name} takes writes {promoted_at - event_at:.2f} s after the {kind}")
        if requester is not None:
            requester.join(120)
        after_from = time.monotonic()
        if kind == "host":  # the host is back: its Patroni rejoins the cluster (pg_rewind if needed)
            leader.start(ha.strict, ha.callback)
        rejoined_at = None
        if size["rejoin_last"] or not last:
            ha.healthy(180)
            rejoined_at = time.time()
        time.sleep(max(0.0, size["after"] - (time.monotonic() - after_from)))
        run.stop_producing.set()
        for t in producers:
            t.join(120)
        drain_and_stop(run, sql, api, size["lease"] * 4 + 120)
    finally:  # an event that failed half-way leaves no worker or API behind
        run.stop_producing.set()
        for proc in [w.proc for w in run.workers] + procs:
            if proc.poll() is None:
                proc.kill()
    ticks = cron_ticks(sql, promoted_at)
    while not ticks and size["cron"] and time.time() - promoted_at < 75:  # pg_cron runs once a minute
        time.sleep(1)
        ticks = cron_ticks(sql, promoted_at)
    checked = invariants(run, sql)
    for k in ("orphans_requeued", "requeue_max_s", "reclaim_max_s"):  # chaos.py's, of kill -9 of workers
        checked.pop(k)
    [(unacked,)] = sql(
        "select count(*) from jobctl.job where queue = %s and job_id <> all(%s)",
        (run.queue, list(run.acked.values())),
    )
    down = {kind_: downtime(times, event_at, promoted_at) for kind_, times in sorted(run.ack_times.items())}
    down["workers"] = downtime(claim_times(sql), event_at, promoted_at)
    timeline, epoch = epoch_state(other)
    lines = other.log_lines("patroni-on-role-change:")[callback_lines:]
    result: dict[str, Any] = {
        "event": kind,
        "round": n,
        "lease_s": size["lease"],
        "strict": ha.strict,
        "from": leader.name,
        "to": other.name,
        "promote_s": round(promoted_at - event_at, 2),
        "epoch_s": round(epoch_at - event_at, 2),
        "rejoin_s": round(rejoined_at - event_at, 2) if rejoined_at is not None else None,
        "downtime_s": down,
        "submit_errors": len(run.submit_errors) + len(errors),
        **checked,
        "unacked_committed": int(unacked),
        **in_flight(sql, event_at),
        "timeline": timeline,
        "epoch": epoch,
        "callback": {
            "moved": sum(1 for line in lines if "lease epoch moved" in line),
            "unchanged": sum(1 for line in lines if "unchanged" in line),
            "failed": sum(1 for line in lines if "NOT moved" in line),
        },
        "zombie": fenced,
        "zombie_problems": zombie_problems(fenced) if fenced else [],
        "cron_ticks_after_promotion": ticks,
        "standby_maintenance": maintenance,
        "acks": {k: len(v) for k, v in sorted(run.ack_times.items())},
    }
    for e in (run.submit_errors + errors)[:5]:
        log("error: " + e)
    for line in lines:
        log(line.split("] ")[-1])
    return result


def medians(results: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in EVENTS["full"]:
        rs = [r for r in results if r["event"] == kind]
        if not rs:
            continue
        m: dict[str, Any] = {"events": len(rs)}
        for key in ("promote_s", "epoch_s", "rejoin_s"):
            values = [r[key] for r in rs if r[key] is not None]
            m[key] = statistics.median(values) if values else None
        for client in ("sql", "api", "workers"):
            values = [r["downtime_s"][client] for r in rs if r["downtime_s"].get(client) is not None]
            m[f"downtime_s.{client}"] = statistics.median(values) if values else None
        for key in ("jobs", *INVARIANTS):
            m[key + "_total"] = sum(r[key] for r in rs)
        m["callback_moved_total"] = sum(r["callback"]["moved"] for r in rs)
        out[kind] = m
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="the scaled-down drill tests/test_ha.py runs")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of a kill and a switchover, then medians")
    ap.add_argument("--strict", action="store_true", help="synchronous_mode_strict: true")
    ap.add_argument("--events", help="comma-separated events of a round (default: kill,switchover[,host])")
    ap.add_argument("--keep", action="store_true", help="leave the cluster's files and logs under .ha/")
    args = ap.parse_args()
    size = SIZES["small" if args.small else "full"]
    base = reachable_by_postgres(ROOT / ".ha") / f"run-{os.getpid()}"
    base.mkdir()
    if os.getuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    ha = Ha(base.resolve(), args.strict)
    results: list[dict[str, Any]] = []
    try:
        built_s = ha.build()
        ports = [n.port for n in ha.nodes]
        log(f"etcd :{ETCD_CLIENT}, Patroni nodes {ports}, built in {built_s:.1f} s; {ha.dsn}")
        kinds = args.events.split(",") if args.events else EVENTS["small" if args.small else "full"]
        for n in range(1, args.rounds + 1):
            for i, kind in enumerate(kinds):
                r = event(ha, kind, size, base, n, last=n == args.rounds and i == len(kinds) - 1)
                r["built_s"] = round(built_s, 1)
                print(json.dumps(r), flush=True)
                print_table(r)
                results.append(r)
    finally:
        ha.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    if not args.small:
        with open(ROOT / "benchmarks" / "results" / "ha_drill.jsonl", "w") as out:
            for r in results:
                out.write(json.dumps(r) + "\n")
    summary = {"medians": medians(results), "rounds": args.rounds, "strict": args.strict}
    print(json.dumps(summary), flush=True)
    for kind, m in summary["medians"].items():
        print(f"--- {kind}: medians of {m['events']}")
        print_table(m)


if __name__ == "__main__":
    main()
