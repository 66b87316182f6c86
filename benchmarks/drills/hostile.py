"""The hostile probe: replay the holes a hostile tenant, a login with no jobctl role and hostile inputs
found, against a running jobctl database (and its HTTP API), and report each item's outcome.

Each item is one function that runs the attack and reports "held" or "open" with what it observed
("error" when the probe itself could not run it). The availability items (2, 3, 7) also measure a
second tenant B in real sessions of its own, threads beside the attack: submits (plain, and with a
dedup and a concurrency key), get_job and claims (completed at once), while a ticker calls
jobctl.tick(false) as a worker does; p99 of B's claim and submit just before the attack and during
it. Item 15 compares another tenant's API GET p50. Item 16 fills the cluster's NOTIFY
queue (8 GB of notifications, about a minute; quick: 1 % of it) and empties it at the end.

The probe makes its own login roles, dropped at the end: three tenant logins (members of
jobctl_writer and jobctl_worker, each granted its tenant with jobctl.grant_tenant) and a login with
no jobctl role at all ("nobody"). Its tenants, queues and roles carry a random tag; its jobs carry a
subject key and are forgotten (jobctl.forget_subject) at the end, its schedules dropped.

    .venv/bin/python benchmarks/drills/hostile.py                 # every item, full size (about 6 minutes)
    .venv/bin/python benchmarks/drills/hostile.py --quick         # smaller counts, 5 s holds (2 minutes)
    .venv/bin/python benchmarks/drills/hostile.py --items 2,3     # some items only
    .venv/bin/python benchmarks/drills/hostile.py --api http://127.0.0.1:8080 --write

--dsn defaults to JOBCTL_DSN or .pg/dsn (a superuser, or the schema owner); --api to a `jobctl serve`
the probe starts on a free port, only when an item needs it (2, 3, 4, 5, 15). An --api given must
serve the same database. --write appends one JSON line per item to benchmarks/results/hostile.jsonl.
Exits 0 whatever the outcomes (--strict: 1 when an item is open or failed to run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pty
import re
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from jobctl import contract, db
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "hostile.jsonl"
SLOW_MS = 1000.0  # the acceptance bar: each of B's calls under attack answers within 1 s
B_TIMEOUT_MS = 3000  # B's sessions' statement_timeout: a blocked call fails instead of hanging
PACE = 0.02  # seconds between the rounds of B's calls
DEPTH_BOUND = 100  # the JSON depth the fixes bound payloads and results to
# item 15: B's API GET p50 beside A's 16 threads listing its jobs, against its p50 beside 16 threads
# of A asking the health endpoint just before (the same share of the API's CPU, no database work):
# at most 3x, or 25 ms more where the baseline is a few ms (the issue saw 8 -> 424 ms, 53x). A ratio
# of the same run, not a fixed 100 ms: on a busy machine the baseline itself moves
GET_P50_RATIO, GET_P50_SLACK_MS = 3.0, 25.0

Result = dict[str, Any]


def describe(e: BaseException) -> str:
    if isinstance(e, psycopg.Error):
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        return f"{e.sqlstate or '-'} {lines[0] if lines else type(e).__name__}"[:300]
    return f"{type(e).__name__}: {e}"[:300]


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def nested(depth: int) -> str:
    """A JSON array nested depth levels deep, as text (json.dumps would recurse)."""
    return "[" * depth + "]" * depth


def one(cur: psycopg.Cursor[Any]) -> Any:
    """The first column of the one row a statement returned."""
    row = cur.fetchone()
    assert row is not None
    return row[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def jobctl_cli() -> list[str]:
    exe = Path(sys.executable).with_name("jobctl")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "jobctl.cli"]


def run_on_pty(args: list[str], env: dict[str, str], timeout: float = 30) -> bytes:
    """Everything a command writes to a pseudo-terminal, as the terminal would receive it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(master, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(0.5):
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    os.close(master)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return out


class Probe:
    """The probe's roles, tenants and connections, and the second tenant's load."""

    def __init__(self, dsn: str, api: str | None, quick: bool) -> None:
        self.dsn, self.api, self.quick = dsn, api, quick
        self.tag = uuid.uuid4().hex[:6]
        self.tenant = {k: f"hostile_{self.tag}_{k}" for k in ("a", "b", "c", "m")}
        self.role = {k: f"hostile_{self.tag}_{k}" for k in ("a", "b", "c", "nobody")}
        self.queue_b = f"hostile_{self.tag}_qb"
        self.subject = f"hostile-{self.tag}"
        self.hold = 5.0 if quick else 20.0
        self.base_s = 2.0 if quick else 5.0
        self.admin = psycopg.connect(dsn, autocommit=True, options="-c statement_timeout=300000")
        self.tokens: dict[str, str] = {}
        self.server: subprocess.Popen[bytes] | None = None
        self.server_log: Path | None = None

    def q(self, name: str) -> str:
        return f"hostile_{self.tag}_{name}"

    def connect(
        self, who: str = "admin", *, autocommit: bool = True, timeout_ms: int | None = B_TIMEOUT_MS
    ) -> psycopg.Connection[tuple[Any, ...]]:
        dsn = self.dsn if who == "admin" else make_conninfo(self.dsn, user=self.role[who])
        options = f"-c statement_timeout={timeout_ms}" if timeout_ms else None
        return psycopg.connect(dsn, autocommit=autocommit, options=options)

    # --- setup and cleanup -------------------------------------------------------------------------

    def setup(self, need_api: bool) -> None:
        a = self.admin
        for t in self.tenant.values():
            a.execute("select jobctl.put_tenant(%s)", (t,))
        a.execute("select jobctl.put_tenant(%s, max_pending => 20)", (self.tenant["m"],))
        # B's tenant and queue are limited, so that its claims take their tenant's and queue's locks
        a.execute("select jobctl.put_tenant(%s, max_running => 100000)", (self.tenant["b"],))
        a.execute("select jobctl.put_queue(%s, max_running => 100000)", (self.queue_b,))
        for k in ("a", "b", "c"):
            a.execute(f'create role "{self.role[k]}" login')
            a.execute(f'grant jobctl_writer, jobctl_worker to "{self.role[k]}"')
            a.execute("select jobctl.grant_tenant(%s, %s)", (self.role[k], self.tenant[k]))
        a.execute("select jobctl.grant_tenant(%s, %s)", (self.role["a"], self.tenant["m"]))
        a.execute(f'create role "{self.role["nobody"]}" login')
        # jobctl grants CONNECT to its roles only (sql/grants.sql): nobody gets it by name, as a DBA
        # might give it to a monitoring login, so that its attacks reach the database
        a.execute(f'grant connect on database "{a.info.dbname}" to "{self.role["nobody"]}"')
        if need_api:
            for k in ("a", "b"):
                row = a.execute(
                    "select jobctl.create_api_token(%s, %s::text[], 'hostile probe')",
                    (self.tenant[k], list(contract.SCOPES)),
                ).fetchone()
                assert row is not None
                self.tokens[k] = str(row[0])
            if not self.api:
                self.start_api()

    def start_api(self) -> None:
        port = free_port()
        self.api = f"http://127.0.0.1:{port}"
        self.server_log = Path(tempfile.mkstemp(prefix="jobctl-hostile-api-", suffix=".log")[1])
        with self.server_log.open("wb") as out:
            self.server = subprocess.Popen(
                [sys.executable, "-c", "from jobctl.api import serve_command; serve_command()"]
                + ["--port", str(port)],
                env={**os.environ, "JOBCTL_DSN": self.dsn},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise RuntimeError(f"jobctl serve exited:\n{self.server_log.read_text()}")
            try:
                httpx.get(f"{self.api}/api/v1/health", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("jobctl serve did not start")

    def cleanup(self) -> None:
        self.admin.close()
        for attempt in range(20):  # afresh: the probe's may have been cut off (or the lock table full)
            try:
                admin = psycopg.connect(self.dsn, autocommit=True)
                break
            except psycopg.OperationalError:
                if attempt == 19:
                    raise
                time.sleep(0.5)

        def step(what: str, sql: str, params: Any = None) -> None:
            try:
                admin.execute(sql, params)
            except psycopg.Error as e:
                print(f"cleanup: {what}: {describe(e)}", file=sys.stderr)

        if self.server:
            self.server.terminate()
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                self.server.kill()
            if self.server_log:
                self.server_log.unlink(missing_ok=True)
        roles, tenants = list(self.role.values()), list(self.tenant.values())
        step(
            "sessions",
            "select pg_terminate_backend(pid) from pg_stat_activity where usename = any(%s)",
            (roles,),
        )
        step("schedules", "delete from jobctl.schedule where tenant_id = any(%s)", (tenants,))
        for t in tenants:
            step("jobs", "select jobctl.forget_subject(%s, %s)", (t, self.subject))
        step(
            "unfinished jobs",
            "select count(jobctl.cancel_job(j.job_id)) from jobctl.job as j"
            " where j.tenant_id = any(%s) and j.state in ('pending', 'running', 'failed')",
            (tenants,),
        )
        for token in self.tokens.values():
            step("token", "select jobctl.revoke_api_token(%s)", (int(token.split("_")[1]),))
        step("queue", "delete from jobctl.queue where queue = %s", (self.queue_b,))
        for role in roles:
            step("grants", "delete from jobctl._role_tenant where role_oid = %s::regrole", (role,))
            step("connect", f'revoke all on database "{admin.info.dbname}" from "{role}"')
            step("role", f'drop role if exists "{role}"')
        admin.close()

    # --- helpers -----------------------------------------------------------------------------------

    def submit_many(self, tenant: str, queue: str, n: int, **extra: Any) -> list[int]:
        ids: list[int] = []
        for start in range(0, n, 1000):
            spec = {"tenant_id": tenant, "queue": queue, "payload": {"sleep": 0}, "subject_key": self.subject}
            rows = self.admin.execute(
                "select job_id from jobctl.submit_jobs(%s)", (Jsonb([spec | extra] * min(1000, n - start)),)
            ).fetchall()
            ids += [int(r[0]) for r in rows]
        return ids

    def measure(self, seconds: float, api: bool = False) -> Load:
        with Load(self, api) as load:
            time.sleep(seconds)
        return load

    def http(self) -> httpx.Client:
        assert self.api, "no API"
        return httpx.Client(base_url=self.api, timeout=15)

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


class Load:
    """Tenant B's calls, each kind in a session of its own, while something else happens; and a
    ticker (jobctl.tick(false) every 0.25 s, as a running worker calls it). Latencies by call (ms),
    B's errors, and how many of its jobs were submitted and claimed."""

    def __init__(self, p: Probe, api: bool = False) -> None:
        self.p, self.api = p, api
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.tick_errors: list[str] = []
        self.submitted = self.claimed = 0
        self.stop = threading.Event()
        self.mutex = threading.Lock()
        loops = [self._submitter, self._claimer, self._ticker] + ([self._api] if api else [])
        self.threads = [threading.Thread(target=self._guard, args=(f,), daemon=True) for f in loops]

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def _guard(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except Exception as e:  # a session that could not even connect
            with self.mutex:
                self.errors.append(f"{loop.__name__}: {describe(e)}")

    def call(self, op: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
            if isinstance(out, httpx.Response) and out.status_code >= 400:
                with self.mutex:
                    self.errors.append(f"{op}: HTTP {out.status_code} {out.text[:120]}")
            return out
        except (psycopg.Error, httpx.HTTPError) as e:
            with self.mutex:
                self.errors.append(f"{op}: {describe(e)}")
            return None
        finally:
            with self.mutex:
                self.ms[op].append((time.perf_counter() - t0) * 1000)

    def _submitter(self) -> None:
        p, b = self.p, self.p.tenant["b"]
        sql = "select job_id from jobctl.submit_job(%s, %s, '{}', subject_key => %s, dedup_key => %s,"
        sql += " concurrency_key => %s)"
        with p.connect("b") as c:
            i = 0
            while not self.stop.is_set():
                i += 1
                cur = self.call("submit", c.execute, sql, (b, p.queue_b, p.subject, None, None))
                row = cur.fetchone() if cur else None
                key = f"{p.tag}-{uuid.uuid4().hex[:8]}"
                if self.call("submit_dedup", c.execute, sql, (b, p.queue_b, p.subject, key, "ck")):
                    self.submitted += 1
                if row:
                    self.submitted += 1
                    self.call("get", c.execute, "select state from jobctl.get_job(%s)", (row[0],))
                self.stop.wait(PACE)

    def _claimer(self) -> None:
        with self.p.connect("b") as c:
            while not self.stop.is_set():
                cur = self.call(
                    "claim",
                    c.execute,
                    "select job_id, lease_epoch from jobctl.claim_job('hostile-b', %s, 10)",
                    ([self.p.queue_b],),
                )
                for job_id, epoch in cur.fetchall() if cur else []:
                    self.claimed += 1
                    self.call("complete", c.execute, "select jobctl.complete_job(%s, %s)", (job_id, epoch))
                self.stop.wait(PACE)

    def _ticker(self) -> None:
        with self.p.connect("admin") as c:
            while not self.stop.is_set():
                try:
                    c.execute("select jobctl.tick(false)")
                except psycopg.Error as e:
                    self.tick_errors.append(describe(e))
                self.stop.wait(0.25)

    def _api(self) -> None:
        body = {
            "queue": self.p.queue_b,
            "payload": {},
        }  # (the API takes no subject_key: cancelled at the end)
        with self.p.http() as h:
            while not self.stop.is_set():
                self.call("api_submit", h.post, "/api/v1/jobs", json=body, headers=self.p.auth("b"))
                self.call("api_health", h.get, "/api/v1/health")
                self.stop.wait(0.2)

    def p99(self, *ops: str) -> float | None:
        return pct([v for op in ops for v in self.ms.get(op, [])], 0.99)

    def summary(self) -> dict[str, Any]:
        ops = {
            op: {"n": len(v), "p50_ms": pct(v, 0.5), "p99_ms": pct(v, 0.99), "max_ms": max(v)}
            for op, v in sorted(self.ms.items())
        }
        return {
            "ops": ops,
            "submitted": self.submitted,
            "claimed": self.claimed,
            "errors": len(self.errors),
            "error_sample": self.errors[:3],
            "tick_errors": len(self.tick_errors),
        }

    def failures(self) -> list[str]:
        """What breaks the bar: a call of B over 1 s, an error, claims that stopped keeping up."""
        out = [
            f"{op} max {max(v):.0f} ms"
            for op, v in sorted(self.ms.items())
            if op != "complete" and v and max(v) >= SLOW_MS
        ]
        if self.errors:
            out.append(f"{len(self.errors)} errors, e.g. {self.errors[0]}")
        if self.submitted - self.claimed > max(20, self.submitted // 2):
            out.append(f"claims fell behind: {self.submitted} submitted, {self.claimed} claimed")
        return out


def slowed(base: float | None, during: float | None) -> bool:
    """A latency the attack raised well past its baseline (3x, and by 100 ms at least)."""
    return base is not None and during is not None and during > max(3 * base, base + 100)


def latency_fields(base: Load, during: Load) -> dict[str, Any]:
    return {
        "b_claim_p99_ms": [base.p99("claim"), during.p99("claim")],
        "b_submit_p99_ms": [base.p99("submit", "submit_dedup"), during.p99("submit", "submit_dedup")],
        "baseline": base.summary(),
        "during": during.summary(),
    }


def verdict(problems: list[str], notes: list[str]) -> tuple[str, str]:
    return ("open", "; ".join(problems + notes)) if problems else ("held", "; ".join(notes))


# --- the items ---------------------------------------------------------------------------------------

ITEMS: dict[int, tuple[str, Callable[[Probe], Result]]] = {}
API_ITEMS = {2, 3, 4, 5, 15, 21, 23}


def item(n: int, name: str) -> Callable[[Callable[[Probe], Result]], Callable[[Probe], Result]]:
    def register(fn: Callable[[Probe], Result]) -> Callable[[Probe], Result]:
        ITEMS[n] = (name, fn)
        return fn

    return register


@item(1, "poison payload")
def poison_payload(p: Probe) -> Result:
    """A payload nested 3,000 deep: refused on every path, or a worker survives it and the other
    tenant's jobs in its batch complete."""
    a, queue, deep = p.tenant["a"], p.q("poison"), nested(3000)
    notes: list[str] = []
    accepted: list[str] = []
    poison: int | None = None
    with p.connect("a") as c:
        try:
            row = c.execute(
                "select job_id from jobctl.submit_job(%s, %s, %s::jsonb, subject_key => %s)",
                (a, queue, deep, p.subject),
            ).fetchone()
            assert row is not None
            poison = int(row[0])
            accepted.append("submit_job")
        except psycopg.Error as e:
            notes.append(f"submit_job refused: {describe(e)}")
        # the other paths, rolled back whatever they do
        others = {
            "submit_jobs": (
                "select jobctl.submit_jobs(jsonb_build_array(jsonb_build_object("
                "'tenant_id', %s::text, 'queue', %s::text, 'payload', %s::jsonb)))"
            ),
            "put_schedule": "select jobctl.put_schedule(%s, 'poison', '0 0 1 1 *', %s, %s::jsonb)",
        }
        for path, sql in others.items():
            try:
                with c.transaction(force_rollback=True):
                    c.execute(sql, (a, queue, deep))
                accepted.append(path)
            except psycopg.Error as e:
                notes.append(f"{path} refused: {describe(e)}")
        if not accepted:
            # refused everywhere: the worker still meets the deepest payload allowed, beside C's jobs
            try:
                poison = one(
                    c.execute(
                        "select job_id from jobctl.submit_job(%s, %s, %s::jsonb, subject_key => %s)",
                        (a, queue, nested(DEPTH_BOUND), p.subject),
                    )
                )
                notes.append(f"the worker ran a payload at the bound, {DEPTH_BOUND} deep, instead")
            except psycopg.Error as e:
                return {"outcome": "held", "evidence": "; ".join(notes + [describe(e)])}
    if poison is None:
        return {
            "outcome": "open",
            "evidence": f"accepted a 3000-deep payload: {', '.join(accepted)}; " + "; ".join(notes),
        }
    # the poison job first, then 40 jobs of another tenant in the same queue: one batch holds both
    others_ids = p.submit_many(p.tenant["c"], queue, 40)
    log = Path(tempfile.mkstemp(prefix="jobctl-hostile-worker-", suffix=".log")[1])
    cmd = jobctl_cli() + ["worker", "--handler", "jobctl.demo:handle", "--queue", queue]
    cmd += ["--concurrency", "10", "--poll-interval", "0.2", "--lease", "5", "--grace", "1"]
    with log.open("wb") as out:
        worker = subprocess.Popen(
            cmd, env={**os.environ, "JOBCTL_DSN": p.dsn}, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + (30 if p.quick else 60)
    done = 0
    while time.monotonic() < deadline and worker.poll() is None:
        row = p.admin.execute(
            "select count(*) filter (where state = 'completed') from jobctl.job where job_id = any(%s)",
            (others_ids,),
        ).fetchone()
        done = int(row[0]) if row else 0
        if done == len(others_ids):
            break
        time.sleep(0.5)
    alive = worker.poll() is None
    if alive:
        worker.terminate()
        try:
            worker.wait(15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    states: dict[str, int] = dict(
        p.admin.execute(
            "select state, count(*) from jobctl.job where job_id = any(%s) group by state", (others_ids,)
        ).fetchall()
    )
    prow = p.admin.execute("select state, last_error from jobctl.get_job(%s)", (poison,)).fetchone()
    get = subprocess.run(
        jobctl_cli() + ["get", str(poison)],
        env={**os.environ, "JOBCTL_DSN": p.dsn},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = log.read_text(errors="replace").splitlines()
    log.unlink(missing_ok=True)
    problems = []
    if not alive:
        last = next((line for line in reversed(lines) if "died" in line or "Error" in line), "")
        problems.append(f"worker exited {worker.returncode}: {last[:160]}")
    if done < len(others_ids):
        problems.append(f"other tenant's jobs: {done}/{len(others_ids)} completed, states {states}")
    if "internal error" in get.stdout + get.stderr:
        problems.append(f"jobctl get: {(get.stdout + get.stderr).strip()[:120]}")
    if accepted:
        notes.append(f"accepted by {', '.join(accepted)}")
    notes.append(
        f"worker {'alive' if alive else 'dead'}, {done}/{len(others_ids)} of C's jobs completed;"
        f" poison job {prow}"
    )
    outcome, evidence = verdict(problems, notes)
    return {"outcome": outcome, "evidence": evidence, "other_states": states}


@item(2, "open claim transaction")
def open_claim(p: Probe) -> Result:
    """A worker role claims in an open transaction and holds it; B submits, claims, get_jobs (and
    submits through the API) meanwhile, each within 1 s."""
    base = p.measure(p.base_s, api=True)
    queue = p.q("held")
    p.submit_many(p.tenant["a"], queue, 40)
    holder = p.connect("a", autocommit=False, timeout_ms=None)
    try:
        pid = holder.info.backend_pid
        calls, exclusive = 0, False
        while calls < (3 if p.quick else 31) and not exclusive:
            calls += 1
            holder.execute("select count(*) from jobctl.claim_job('hostile-holder', %s, 1)", ([queue],))
            row = p.admin.execute(
                "select exists (select from pg_locks"
                " where pid = %s and granted and mode = 'AccessExclusiveLock')",
                (pid,),
            ).fetchone()
            exclusive = bool(row and row[0])
            if not exclusive:
                time.sleep(0.6)
        with Load(p, api=True) as during:
            holder.execute("select pg_sleep(%s)", (p.hold,))
        holder.rollback()
    finally:
        holder.close()
    notes = [
        f"holder: {calls} claims in one transaction, then held {p.hold:.0f} s;"
        f" AccessExclusiveLock {'held' if exclusive else 'not held'} by it"
    ]
    outcome, evidence = verdict(during.failures(), notes)
    return {"outcome": outcome, "evidence": evidence, **latency_fields(base, during)}


def lock_keys(p: Probe, queues: list[str], filters: list[list[str] | None]) -> list[tuple[int, int]]:
    """Every advisory-lock key jobctl took (before its lock tables) that bears on tenant B's calls,
    computed as jobctl computed them."""

    def h(text: str) -> int:
        row = p.admin.execute("select hashtext(%s)", (text,)).fetchone()
        assert row is not None
        return int(row[0])

    def filter_text(f: list[str] | None) -> str:
        row = p.admin.execute("select coalesce(%s::text[]::text, '*')", (f,)).fetchone()
        assert row is not None
        return str(row[0])

    keys = [(19011, k) for k in range(1, 5)] + [(19012, b) for b in range(256)]
    keys += [(19013, h(t)) for t in p.tenant.values()]
    keys += [(19014, h(filter_text(f))) for f in [None, *filters]]
    keys += [(19015, h(q)) for q in queues] + [(19016, 0)]
    keys += [(19017, h(p.tenant["b"] + chr(31) + "ck"))]
    keys += [(19018, h(q)) for q in queues]
    return list(dict.fromkeys(keys))


def take_locks(c: psycopg.Connection[Any], keys: list[tuple[int, int]], fn: str) -> str:
    """Take each key with fn (pg_try_advisory_lock or pg_try_advisory_xact_lock): how many were taken."""
    try:
        row = c.execute(
            f"select count(*) filter (where {fn}(k.a, k.b)) from unnest(%s::int[], %s::int[]) as k (a, b)",
            ([a for a, _ in keys], [b for _, b in keys]),
        ).fetchone()
        return f"{row[0] if row else 0}/{len(keys)} taken"
    except psycopg.Error as e:
        return f"refused ({describe(e)})"


def claim_new_job(p: Probe, queue: str, filter_: list[str] | None) -> tuple[float | None, str]:
    """Submit a job in a queue no job was in before, and claim it (filter_: the claim's queues, NULL
    for all): seconds from the submit's commit to the claim that got it (None: not within 3 s)."""
    with p.connect("b") as c:
        try:
            row = c.execute(
                "select job_id from jobctl.submit_job(%s, %s, '{}', subject_key => %s)",
                (p.tenant["b"], queue, p.subject),
            ).fetchone()
            assert row is not None
            job = int(row[0])
            t0 = time.monotonic()
            while time.monotonic() - t0 < 3:
                got = c.execute(
                    "select job_id, lease_epoch from jobctl.claim_job('hostile-new', %s, 100)", (filter_,)
                ).fetchall()
                for job_id, epoch in got:
                    c.execute("select jobctl.complete_job(%s, %s)", (job_id, epoch))
                if job in {int(j) for j, _ in got}:
                    return time.monotonic() - t0, "claimed"
                time.sleep(0.05)
            return None, "not claimed within 3 s"
        except psycopg.Error as e:
            return None, describe(e)


@item(3, "advisory locks of nobody")
def advisory_locks(p: Probe) -> Result:
    """The login with no jobctl role takes every key jobctl used, as session locks and then in an
    open transaction; B's calls stay under 1 s and a new job in a new queue is claimable."""
    base = p.measure(p.base_s, api=True)
    new = {phase: [p.q(f"new_{phase}_1"), p.q(f"new_{phase}_2")] for phase in ("session", "xact")}
    queues = [p.queue_b] + [q for pair in new.values() for q in pair]
    keys = lock_keys(p, queues, [[q] for q in [p.queue_b, *queues]])
    problems, notes, phases = [], [], {}
    for phase, fn in (("session", "pg_try_advisory_lock"), ("xact", "pg_try_advisory_xact_lock")):
        nobody = p.connect("nobody", autocommit=phase == "session", timeout_ms=None)
        try:
            taken = take_locks(nobody, keys, fn)
            with Load(p, api=True) as during:
                t0 = time.monotonic()
                time.sleep(1)
                filtered = claim_new_job(p, new[phase][0], [new[phase][0]])
                everything = claim_new_job(p, new[phase][1], None)
                time.sleep(max(0.0, p.hold - (time.monotonic() - t0)))
        finally:
            nobody.close()
        phases[phase] = {
            "locks": taken,
            "new_queue": filtered,
            "any_queue": everything,
            **latency_fields(base, during),
        }
        notes.append(f"{phase}: nobody {taken}")
        problems += [f"{phase}: {f}" for f in during.failures()]
        for what, (secs, how) in (("new queue", filtered), ("new queue, all queues", everything)):
            if secs is None or secs * 1000 >= SLOW_MS:
                problems.append(f"{phase}: {what}: {how}" + (f" after {secs:.2f} s" if secs else ""))
    outcome, evidence = verdict(problems, notes)
    # the table shows the phase with the slower claims
    worst = max(phases.values(), key=lambda ph: ph["b_claim_p99_ms"][1] or 0)
    return {
        "outcome": outcome,
        "evidence": evidence,
        "b_claim_p99_ms": worst["b_claim_p99_ms"],
        "b_submit_p99_ms": worst["b_submit_p99_ms"],
        "phases": phases,
    }


@item(4, "API and deep JSON")
def api_deep_json(p: Probe) -> Result:
    """Jobs with payloads or results nested 300 deep (if SQL takes them) read through the API; API
    submits nested 255, 256 and 1,000 deep. No answer may be a 5xx."""
    a, queue = p.tenant["a"], p.q("deep")
    notes, problems, deep_jobs = [], [], []
    try:
        row = p.admin.execute(
            "select job_id from jobctl.submit_job(%s, %s, %s::jsonb, subject_key => %s)",
            (a, queue, nested(300), p.subject),
        ).fetchone()
        assert row is not None
        deep_jobs.append(int(row[0]))
        notes.append("SQL accepted a payload 300 deep")
    except psycopg.Error as e:
        notes.append(f"SQL payload 300 deep refused: {describe(e)}")
    [job] = p.submit_many(a, p.q("deep_result"), 1)
    claim = p.admin.execute(
        "select job_id, lease_epoch from jobctl.claim_job('hostile-deep', %s, 1)", ([p.q("deep_result")],)
    ).fetchone()
    try:
        assert claim is not None
        p.admin.execute("select jobctl.complete_job(%s, %s, %s::jsonb)", (claim[0], claim[1], nested(300)))
        deep_jobs.append(job)
        notes.append("complete_job accepted a result 300 deep")
    except psycopg.Error as e:
        notes.append(f"result 300 deep refused: {describe(e)}")
    with p.http() as h:
        statuses: dict[str, int] = {}
        for j in deep_jobs:
            statuses[f"GET {j}"] = h.get(f"/api/v1/jobs/{j}", headers=p.auth("a")).status_code
        statuses["GET list"] = h.get("/api/v1/jobs", params={"limit": 1000}, headers=p.auth("a")).status_code
        for depth in (255, 256, 1000):
            body = f'{{"queue": "{queue}", "payload": {nested(depth)}}}'
            r = h.post(
                "/api/v1/jobs", content=body, headers=p.auth("a") | {"Content-Type": "application/json"}
            )
            statuses[f"POST {depth}"] = r.status_code
            if r.status_code in (200, 201):
                got = h.get(f"/api/v1/jobs/{r.json()['job']['job_id']}", headers=p.auth("a"))
                statuses[f"GET posted {depth}"] = got.status_code
    problems = [f"{k}: {v}" for k, v in statuses.items() if v >= 500]
    outcome, evidence = verdict(problems, notes + [", ".join(f"{k} {v}" for k, v in statuses.items())])
    return {"outcome": outcome, "evidence": evidence, "statuses": statuses}


def api_rss_kb(p: Probe) -> int | None:
    if not p.server:
        return None
    for line in Path(f"/proc/{p.server.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


@item(5, "/metrics label growth")
def metrics_growth(p: Probe) -> Result:
    """Unauthenticated requests with made-up methods (and 8 KB ones): /metrics must stay bounded."""
    short, long = (200, 20) if p.quick else (1000, 200)
    with p.http() as h:
        before, rss0 = len(h.get("/metrics").content), api_rss_kb(p)
        for i in range(short):
            h.request(f"X{p.tag.upper()}{i}", "/api/v1/health")
        for i in range(long):
            with contextlib.suppress(httpx.HTTPError):  # a server may refuse such a request line
                h.request(f"L{i}" + "A" * 8000, "/api/v1/health")
        after, rss1 = len(h.get("/metrics").content), api_rss_kb(p)
    growth = after - before
    evidence = f"/metrics {before:,} -> {after:,} bytes after {short} made-up and {long} 8 KB methods"
    if rss0 and rss1:
        evidence += f"; API RSS {rss0 // 1024} -> {rss1 // 1024} MB"
    return {"outcome": "open" if growth > 64 * 1024 else "held", "evidence": evidence, "growth_bytes": growth}


@item(6, "max_pending bypass")
def max_pending_bypass(p: Probe) -> Result:
    """A tenant at max_pending 20: cancel, resubmit, retry the cancelled ones; at most 20 unfinished."""
    m, queue = p.tenant["m"], p.q("pending")
    sql = "select job_id from jobctl.submit_job(%s, %s, '{}', subject_key => %s)"
    with p.connect("a") as c:
        ids = [one(c.execute(sql, (m, queue, p.subject))) for _ in range(20)]
        try:
            c.execute(sql, (m, queue, p.subject))
            over = "the 21st submit was accepted"
        except psycopg.Error as e:
            over = f"21st refused: {describe(e)}"
        for j in ids:
            c.execute("select jobctl.cancel_job(%s)", (j,))
        resubmitted = 0
        for _ in range(20):
            try:
                c.execute(sql, (m, queue, p.subject))
                resubmitted += 1
            except psycopg.Error:
                break
        retried, refusal = 0, ""
        for j in ids:
            try:
                c.execute("select jobctl.retry_job(%s)", (j,))
                retried += 1
            except psycopg.Error as e:
                refusal = describe(e)
    row = p.admin.execute(
        "select count(*) from jobctl.job where tenant_id = %s and state in ('pending', 'running', 'failed')",
        (m,),
    ).fetchone()
    pending = int(row[0]) if row else 0
    evidence = f"{over}; resubmitted {resubmitted} after cancelling 20; {retried} retries accepted"
    evidence += f" ({refusal})" if refusal else ""
    evidence += f"; {pending} unfinished at max_pending 20"
    return {"outcome": "open" if pending > 20 else "held", "evidence": evidence, "unfinished": pending}


@item(7, "schedules of one tenant")
def schedule_flood(p: Probe) -> Result:
    """Tenant A puts `@every 1 second` schedules (1,000; quick 200) until refused; B's claim p99 while
    they run."""
    n = 200 if p.quick else 1000
    a, queue = p.tenant["a"], p.q("sched")
    base = p.measure(p.base_s)
    accepted, refusal = 0, None
    with p.connect("a") as c:
        for i in range(n):
            try:
                c.execute(
                    "select jobctl.put_schedule(%s, %s, '@every 1 second', %s, '{}')", (a, f"s{i}", queue)
                )
                accepted += 1
            except psycopg.Error as e:
                refusal = describe(e)
                break
    during = p.measure(5 if p.quick else 15)
    row = p.admin.execute(
        "select count(*) from jobctl.job where tenant_id = %s and queue = %s", (a, queue)
    ).fetchone()
    made = int(row[0]) if row else 0
    p.admin.execute("delete from jobctl.schedule where tenant_id = %s", (a,))
    problems = [] if refusal else [f"all {n} schedules accepted"]
    if slowed(base.p99("claim"), during.p99("claim")):
        problems.append("B's claim p99 slowed")
    problems += during.failures()
    notes = [f"{accepted} accepted" + (f", then refused: {refusal}" if refusal else ""), f"{made} jobs made"]
    outcome, evidence = verdict(problems, notes)
    return {"outcome": outcome, "evidence": evidence, "accepted": accepted, **latency_fields(base, during)}


@item(8, "run_at far out of range")
def run_at_range(p: Probe) -> Result:
    """run_at in year 294276 and in 4713 BC: refused (each tried in a transaction rolled back)."""
    out, accepted = [], []
    with p.connect("a") as c:
        for when in ("294276-01-01 00:00:00+00", "4713-12-31 00:00:00+00 BC"):
            try:
                with c.transaction(force_rollback=True):
                    c.execute(
                        "select jobctl.submit_job(%s, 'q', '{}', run_at => %s::timestamptz)",
                        (p.tenant["a"], when),
                    )
                accepted.append(when)
                out.append(f"{when}: accepted")
            except psycopg.Error as e:
                out.append(f"{when}: {describe(e)}")
    return {"outcome": "open" if accepted else "held", "evidence": "; ".join(out)}


@item(9, "submit_jobs batch cap")
def batch_cap(p: Probe) -> Result:
    """One submit_jobs of 300,000 jobs: refused at once (in a transaction rolled back; a
    statement_timeout stops a batch the database would take)."""
    n, limit_s = 300_000, 5 if p.quick else 30
    jobs = Jsonb([{"tenant_id": p.tenant["c"], "queue": p.q("batch"), "payload": {}}] * n)
    with p.connect("admin", autocommit=False, timeout_ms=limit_s * 1000) as c:
        t0 = time.monotonic()
        try:
            c.execute("select count(*) from jobctl.submit_jobs(%s)", (jobs,))
            evidence, outcome = f"{n:,} jobs accepted in {time.monotonic() - t0:.1f} s (rolled back)", "open"
        except psycopg.errors.QueryCanceled:
            evidence, outcome = f"still running after {limit_s} s: no cap (cancelled, rolled back)", "open"
        except psycopg.Error as e:
            evidence, outcome = f"refused in {time.monotonic() - t0:.2f} s: {describe(e)}", "held"
        c.rollback()
    return {"outcome": outcome, "evidence": evidence}


@item(10, "LISTEN as nobody")
def listen_leak(p: Probe) -> Result:
    """The login with no jobctl role LISTENs on jobctl while B submits to named queues: no payload
    may hold a queue name."""
    queues = [p.q(f"payroll-layoffs-{i}") for i in range(3)]
    with p.connect("nobody") as nobody:
        try:
            nobody.execute("listen jobctl")
        except psycopg.Error as e:
            return {"outcome": "held", "evidence": f"LISTEN refused: {describe(e)}"}
        with p.connect("b") as c:
            for q in queues:
                c.execute(
                    "select jobctl.submit_job(%s, %s, '{}', subject_key => %s)", (p.tenant["b"], q, p.subject)
                )
                time.sleep(0.6)  # past the half-second hint window
        payloads = [n.payload for n in nobody.notifies(timeout=2)]
    leaked = [x for x in payloads if p.tag in x or any(q in x for q in queues)]
    evidence = f"{len(payloads)} notifications, e.g. {payloads[:2]!r}"
    return {"outcome": "open" if leaked else "held", "evidence": evidence, "leaked": leaked[:5]}


@item(16, "NOTIFY queue filled by nobody")
def notify_queue_full(p: Probe) -> Result:
    """The login with no jobctl role LISTENs in a transaction it keeps open and
    floods notifications of 7,900 bytes until the cluster's queue is full (its own NOTIFY fails with
    54000; quick: 1 % of it, with B's login given jobctl.hint_queue_limit 0.005). B's submits, claims
    and reads meanwhile: no error, submit p99 within twice its baseline. The queue is emptied at the
    end (the listener is terminated)."""
    base = p.measure(p.base_s)
    target = 0.01 if p.quick else 1.0
    if p.quick:
        p.admin.execute(f"alter role \"{p.role['b']}\" set jobctl.hint_queue_limit = '0.005'")
    stuck = p.connect("nobody", timeout_ms=None)
    flood = p.connect("nobody", timeout_ms=None)
    full_error, usage = None, 0.0
    try:
        stuck.execute("listen hostile_x")
        stuck.execute("begin")
        stuck.execute("select 1")  # and the transaction stays open: the queue is not trimmed past it
        deadline = time.monotonic() + (60 if p.quick else 300)
        i = 0
        while usage < target and time.monotonic() < deadline:
            try:  # 1,000 distinct payloads a transaction (equal ones would be folded into one)
                flood.execute(
                    "select count(pg_notify('hostile_y', repeat('x', 7890) || (%s * 1000 + g)))"
                    " from generate_series(1, 1000) as g",
                    (i,),
                )
            except psycopg.Error as e:
                full_error = describe(e)
                break
            i += 1
            row = p.admin.execute("select pg_notification_queue_usage()").fetchone()
            usage = float(row[0]) if row else 0.0
        with Load(p) as during:
            time.sleep(p.hold)
    finally:
        p.admin.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (p.role["nobody"],)
        )
        for c in (stuck, flood):
            with contextlib.suppress(psycopg.Error):
                c.close()
        if p.quick:
            p.admin.execute(f'alter role "{p.role["b"]}" reset jobctl.hint_queue_limit')
    fields = latency_fields(base, during)
    problems = during.failures()
    if not p.quick and full_error is None:
        problems.append(f"the queue did not fill (usage {usage:.3f})")
    base_p99, during_p99 = fields["b_submit_p99_ms"]
    if base_p99 is not None and during_p99 is not None and during_p99 > 2 * base_p99:
        problems.append(f"B's submit p99 {base_p99:.1f} -> {during_p99:.1f} ms")
    note = f"queue {usage:.1%} used" + (f", nobody's NOTIFY: {full_error}" if full_error else "")
    outcome, evidence = verdict(problems, [note])
    return {"outcome": outcome, "evidence": evidence, **fields}


@item(17, "lock table filled by nobody")
def lock_table_full(p: Probe) -> Result:
    """`select count(pg_advisory_lock(x)) from generate_series(1, 1000000) x` as a
    login with no jobctl role failed with 53200 but kept the locks it had taken, and until it
    disconnected every tenant's submit failed with 53200. A login with no grant must not connect to
    this database or to the cluster's postgres database; nobody (CONNECT granted by name) runs that
    and three more (shared locks, try-locks, a temporary table, then transaction locks in a transaction
    it keeps open). B's calls meanwhile: no error, submit p99 within twice its baseline."""
    base = p.measure(p.base_s)
    problems, notes = [], []
    bare = f"hostile_{p.tag}_bare"
    p.admin.execute(f'create role "{bare}" login')
    try:
        for dbname in (p.admin.info.dbname, "postgres"):
            try:
                psycopg.connect(make_conninfo(p.dsn, user=bare, dbname=dbname), connect_timeout=5).close()
                problems.append(f"a login with no grant connects to {dbname}")
            except psycopg.OperationalError as e:
                notes.append(f"{dbname}: {str(e).strip().splitlines()[-1][:60]}")
    finally:
        p.admin.execute(f'drop role "{bare}"')
    nobody = p.connect("nobody", timeout_ms=None)
    outcomes = []
    try:
        for attack in (
            "select count(pg_advisory_lock(x)) from generate_series(1, 1000000) as x",
            "select count(pg_advisory_lock_shared(x, x)) from generate_series(1, 1000000) as x",
            "select count(pg_try_advisory_lock(x)) from generate_series(1, 1000000) as x",
            "create temporary table hostile_t (x int)",
            "begin",  # and the session stays in a transaction it keeps open
            "select count(pg_advisory_xact_lock(x)) from generate_series(1, 1000000) as x",
        ):
            try:
                nobody.execute(attack)
                if attack != "begin":
                    outcomes.append("done")
            except psycopg.Error as e:
                outcomes.append(e.sqlstate or "?")
                if e.sqlstate != "42501":
                    problems.append(f"{attack.split(' from ')[0]}: {describe(e)}")
        with Load(p) as during:
            time.sleep(p.hold)
    finally:
        nobody.close()
    notes.append(f"nobody's attacks: {', '.join(outcomes)}")
    fields = latency_fields(base, during)
    problems += during.failures()
    base_p99, during_p99 = fields["b_submit_p99_ms"]
    if base_p99 is not None and during_p99 is not None and during_p99 > 2 * base_p99:
        problems.append(f"B's submit p99 {base_p99:.1f} -> {during_p99:.1f} ms")
    outcome, evidence = verdict(problems, notes)
    return {"outcome": outcome, "evidence": evidence, **fields}


@item(18, "archive stopped by nobody")
def archive_lease(p: Probe) -> Result:
    """`select pg_advisory_lock(hashtext('jobctl archive'))` by any login made every
    `jobctl archive run` exit 1. Nobody (CONNECT by name) tries that key, the lease table and the lease
    function, and keeps its session open; meanwhile the exporter's lease (jobctl._archive_lease, what
    `jobctl archive run` takes first) is taken and given back. No export runs: the probe moves none
    of this database's days (tests/test_archive.py runs the exporter itself)."""
    problems, notes = [], []
    with p.connect("nobody", timeout_ms=None) as nobody:
        for attempt in (
            "select pg_try_advisory_lock(hashtext('jobctl archive'))",
            "select holder from jobctl._archive_lease",
            "select jobctl._archive_lease(gen_random_uuid(), 3600)",
        ):
            try:
                nobody.execute(attempt)
                problems.append(f"nobody ran: {attempt}")
            except psycopg.Error as e:
                notes.append(e.sqlstate or "?")
        holder = str(uuid.uuid4())
        taken = p.admin.execute("select jobctl._archive_lease(%s, 60)", (holder,)).fetchone()
        if taken == (True,):
            p.admin.execute("select jobctl._archive_release(%s)", (holder,))
        else:  # another run holds it now: wait for it, as the exporter would (--lock-wait)
            problems.append(f"the exporter's lease was not free: {taken}")
    outcome, evidence = verdict(
        problems, [f"nobody refused ({', '.join(notes)}); the exporter's lease taken"]
    )
    return {"outcome": outcome, "evidence": evidence}


@item(19, "replayed hints")
def replayed_hints(p: Probe) -> Result:
    """Nobody hears a queue's tag on channel jobctl and NOTIFYs it again, a thousand
    times a second: held when an idle worker (`jobctl worker --poll-interval 1` on that queue) claims
    at most 5x as often as over the same time idle. The worker counts a hint only from a session of
    jobctl's roles (jobctl.hint_senders): nobody's wake nothing."""
    queue = p.q("replayed")
    port = free_port()
    cmd = [*jobctl_cli(), "worker", "--handler", "chaos_handlers:handle", "--queue", queue]
    cmd += ["--poll-interval", "1", "--metrics-port", str(port)]
    env = {**os.environ, "JOBCTL_DSN": p.dsn}
    worker = subprocess.Popen(
        cmd, cwd=ROOT / "benchmarks" / "drills", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def claims() -> float:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        m = re.search(r"^jobctl_worker_claim_duration_seconds_count (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0

    stop, sent = threading.Event(), [0]
    row = p.admin.execute("select (jobctl.hint_tags(array[%s]))[1]", (queue,)).fetchone()
    tag = str(row[0]) if row else ""

    def replay() -> None:
        with p.connect("nobody", timeout_ms=None) as c:
            while not stop.is_set():
                c.execute("select pg_notify('jobctl', %s)", (tag,))
                sent[0] += 1
                time.sleep(0.001)

    seconds = 4.0 if p.quick else 10.0
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                claims()
                break
            except httpx.TransportError:
                if worker.poll() is not None or time.monotonic() > deadline:
                    return {"outcome": "error", "evidence": "the worker did not start"}
                time.sleep(0.2)
        time.sleep(1.5)  # its listener is up, its first claims done
        start = claims()
        time.sleep(seconds)
        idle = claims() - start
        flood = threading.Thread(target=replay, daemon=True)
        flood.start()
        time.sleep(0.5)
        start = claims()
        time.sleep(seconds)
        during = claims() - start
    finally:
        stop.set()
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
    ratio = during / max(idle, 1)
    note = f"{sent[0]} replays in {seconds:.0f} s: the worker's claims {idle:.0f} idle"
    note += f" -> {during:.0f} ({ratio:.1f}x)"
    return {"outcome": "open" if ratio > 5 else "held", "evidence": note}


@item(20, "router tables of a writer")
def router_privileges(p: Probe) -> Result:
    """On the router, a writer granted one tenant inserted placements and read the
    shards' connect strings. A router and a shard are made for the item (databases of this cluster,
    dropped at the end); tenant B's login tries each, and submits through the router."""
    from jobctl import shards

    names = [f"hostile_{p.tag}_router", f"hostile_{p.tag}_shard"]
    problems, notes = [], []
    for n in names:
        p.admin.execute(f'create database "{n}"')
    try:
        router, shard = (make_conninfo(p.dsn, dbname=n) for n in names)
        with psycopg.connect(shard, autocommit=True) as c:
            shards.init_shard(c, 0)
            c.execute("select jobctl.grant_tenant(%s, %s)", (p.role["b"], p.tenant["b"]))
        with psycopg.connect(router, autocommit=True) as c:
            shards.install_router(c, {0: shard})
        with psycopg.connect(make_conninfo(router, user=p.role["b"]), autocommit=True) as w:
            for attempt in (
                "insert into jobctl_router.placement (tenant_id, shard) values ('victim', 0)",
                "select connstr from jobctl_router.shard",
                "update jobctl_router.job_route set shard = 0",
            ):
                try:
                    w.execute(attempt)
                    problems.append(f"B ran: {attempt}")
                except psycopg.Error as e:
                    notes.append(e.sqlstate or "?")
            try:
                w.execute("select jobctl.submit_job(%s, 'q', '{}')", (p.tenant["b"],))
            except psycopg.Error as e:
                problems.append(f"B's submit through the router: {describe(e)}")
    finally:
        for n in names:
            p.admin.execute(f'drop database if exists "{n}" with (force)')
    outcome, evidence = verdict(problems, [f"B refused ({', '.join(notes)}); B's submit routed"])
    return {"outcome": outcome, "evidence": evidence}


@item(21, "parent_results of 300 parents")
def parent_results_bound(p: Probe) -> Result:
    """300 parents with results of about 740 KB and one child depending on all made
    `GET /api/v1/jobs/{child}` build 222 MB of jsonb and answer 503 after 6 s while B's GETs failed.
    Here A's parents (quick: 30) carry such results; A's GET of the child must answer 200 within 2 s
    (parent_results bounded: null past 8 MiB), and B's GET p50 meanwhile stays within GET_P50_RATIO
    of its own."""
    a, queue = p.tenant["a"], p.q("parents")
    n = 30 if p.quick else 300
    big = {"blob": "x" * 740_000}
    parents = p.submit_many(a, queue, n)
    done = 0
    while done < n:
        claimed = p.admin.execute(
            "select job_id, lease_epoch from jobctl.claim_job('hostile-parents', %s, 100)", ([queue],)
        ).fetchall()
        for job_id, epoch in claimed:
            p.admin.execute("select jobctl.complete_job(%s, %s, %s)", (job_id, epoch, Jsonb(big)))
        done += len(claimed)
        if not claimed:
            time.sleep(0.05)
    row = p.admin.execute(
        "select job_id from jobctl.submit_job(%s, %s, '{}', depends_on => %s, subject_key => %s)",
        (a, p.q("child"), parents, p.subject),
    ).fetchone()
    assert row is not None
    child = int(row[0])
    [b_job] = p.submit_many(p.tenant["b"], p.q("get"), 1)
    problems, notes = [], []
    with p.http() as h:
        base, _ = get_p50(p, b_job, 2.0, h)
        results: list[tuple[int, float]] = []

        def reader() -> None:
            with p.http() as ah:
                for _ in range(3):
                    t0 = time.monotonic()
                    r = ah.get(f"/api/v1/jobs/{child}", headers=p.auth("a"))
                    results.append((r.status_code, time.monotonic() - t0))

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        during, bad = get_p50(p, b_job, 3.0, h)
        t.join(60)
    slowest = max((secs for _, secs in results), default=None)
    codes = sorted({code for code, _ in results})
    notes.append(f"A's GET of the child: {codes}, slowest {slowest or 0:.2f} s")
    notes.append(f"B's GET p50 {base or 0:.1f} -> {during or 0:.1f} ms")
    if codes != [200] or slowest is None or slowest > 2:
        problems.append(f"A's GET of the child answered {codes} in up to {slowest} s")
    if bad or base is None or during is None or during > max(GET_P50_RATIO * base, base + GET_P50_SLACK_MS):
        problems.append(f"B's GETs: p50 {base} -> {during} ms, non-200: {bad[:5]}")
    outcome, evidence = verdict(problems, notes)
    return {"outcome": outcome, "evidence": evidence}


@item(22, "1,000 waits of one client")
def client_waits(p: Probe) -> Result:
    """1,000 concurrent `AsyncClient.wait` calls opened 174 connections, and another
    tenant's connection attempts failed. A's client (quick: 300 waits) waits on jobs that complete
    while it waits: every wait gets its job, A's login holds at most 5 connections, and B connects
    meanwhile."""
    import asyncio

    from jobctl.client import AsyncClient

    n = 300 if p.quick else 1000
    queue = p.q("waits")
    jobs = p.submit_many(p.tenant["a"], queue, n)
    peak, b_errors = [0], []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            row = p.admin.execute(
                "select count(*) from pg_stat_activity where usename = %s", (p.role["a"],)
            ).fetchone()
            peak[0] = max(peak[0], int(row[0]) if row else 0)
            try:
                with p.connect("b") as c:
                    c.execute("select 1")
            except psycopg.Error as e:
                b_errors.append(describe(e))
            time.sleep(0.1)

    def completer() -> None:
        time.sleep(2)
        left = set(jobs)
        while left and not stop.is_set():
            for job_id, epoch in p.admin.execute(
                "select job_id, lease_epoch from jobctl.claim_job('hostile-waits', %s, 100)", ([queue],)
            ).fetchall():
                p.admin.execute("select jobctl.complete_job(%s, %s, '{\"ok\": true}')", (job_id, epoch))
                left.discard(int(job_id))
            time.sleep(0.05)

    async def waits() -> list[Any]:
        async with AsyncClient(make_conninfo(p.dsn, user=p.role["a"])) as client:
            return await asyncio.gather(*(client.wait(j, timeout=120) for j in jobs), return_exceptions=True)

    threads = [threading.Thread(target=f, daemon=True) for f in (watch, completer)]
    for t in threads:
        t.start()
    try:
        got = asyncio.run(waits())
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    ok = sum(1 for g in got if not isinstance(g, BaseException) and getattr(g, "state", None) == "completed")
    failed = [repr(g)[:100] for g in got if isinstance(g, BaseException)]
    problems = []
    if ok != n:
        problems.append(f"{n - ok} waits without their job, e.g. {failed[:2]}")
    if peak[0] > 5:
        problems.append(f"A's login held {peak[0]} connections")
    if b_errors:
        problems.append(f"B could not connect: {b_errors[:2]}")
    note = f"{ok}/{n} waits got their job; A's connections at most {peak[0]}"
    outcome, evidence = verdict(problems, [note])
    return {"outcome": outcome, "evidence": evidence}


@item(23, "10,000 queues in one submit")
def queue_cardinality(p: Probe) -> Result:
    """One submit_jobs into 10,000 queues made the admin /metrics 38 MB, still 38 MB
    after the jobs drained, and the dashboard's /queues 12 MB. A submits into 10,000 queues (quick:
    2,000), delayed a day (no worker runs them); the admin /metrics must stay under 1.5 MB and the
    queue list's first page under 300 KB. Forgotten at the end with A's other jobs."""
    n = 2000 if p.quick else 10000
    spec = [
        {"tenant_id": p.tenant["a"], "queue": p.q(f"wide{i:05}"), "payload": {}, "subject_key": p.subject,
         "run_at": (datetime.now(UTC) + timedelta(days=1)).isoformat()}
        for i in range(n)
    ]  # fmt: skip
    for start in range(0, n, 1000):
        p.admin.execute("select count(*) from jobctl.submit_jobs(%s)", (Jsonb(spec[start : start + 1000]),))
    row = p.admin.execute("select jobctl.create_api_token(null, jobctl._api_scopes())").fetchone()
    assert row is not None
    admin = str(row[0])
    problems = []
    try:
        with p.http() as h:
            t0 = time.monotonic()
            r = h.get("/metrics", headers={"Authorization": f"Bearer {admin}"}, timeout=60)
            metrics_s = time.monotonic() - t0
            c = httpx.Client(base_url=p.api or "", timeout=60, headers={"Origin": p.api or ""})
            form = c.get("/sign-in")
            csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', form.text)
            page_bytes = -1
            if csrf:
                c.post("/sign-in", data={"csrf": csrf.group(1), "token": admin, "next": "/queues"})
                page_bytes = len(c.get("/queues").content)
    finally:
        p.admin.execute("select jobctl.revoke_api_token(%s)", (int(admin.split("_")[1]),))
    if r.status_code != 200 or len(r.content) > 1_500_000:
        problems.append(f"/metrics {r.status_code}, {len(r.content):,} bytes")
    if page_bytes < 0 or page_bytes > 300_000:
        problems.append(f"/queues page: {page_bytes:,} bytes")
    note = f"{n:,} queues: /metrics {len(r.content):,} bytes in {metrics_s:.2f} s"
    note += f", /queues page {page_bytes:,} bytes"
    outcome, evidence = verdict(problems, [note])
    return {"outcome": outcome, "evidence": evidence}


@item(11, "CLI escapes")
def cli_escapes(p: Probe) -> Result:
    """A queue named with CSI, OSC and CR, and a schedule named with a newline: `jobctl list` and
    `jobctl schedule list` on a pseudo-terminal must not write them raw."""
    c_tenant = p.tenant["c"]
    evil_queue = f"{p.tag}\x1b[31mred\x1b]0;pwned\x07\rX"
    evil_name = f"evil{p.tag}\nname\x1b[2J"
    notes: list[str] = []
    problems: list[str] = []
    env = {**os.environ, "JOBCTL_DSN": p.dsn, "TERM": "xterm", "COLUMNS": "200"}
    checks: list[tuple[str, list[str]]] = []
    try:
        p.admin.execute(
            "select jobctl.submit_job(%s, %s, '{}', subject_key => %s)", (c_tenant, evil_queue, p.subject)
        )
        checks.append(("list", ["list", "--tenant", c_tenant, "--limit", "5"]))
    except psycopg.Error as e:
        notes.append(f"queue name refused: {describe(e)}")
    try:
        p.admin.execute("select jobctl.put_schedule(%s, %s, '0 0 1 1 *', 'q', '{}')", (c_tenant, evil_name))
        checks.append(("schedule list", ["schedule", "list", c_tenant]))
    except psycopg.Error as e:
        notes.append(f"schedule name refused: {describe(e)}")
    # free text that a tenant (payload) or a handler (error) writes reaches `jobctl get` whatever names allow
    queue = p.q("escapes")
    [job] = p.submit_many(c_tenant, queue, 1, payload={"note": evil_queue})
    claim = p.admin.execute(
        "select job_id, lease_epoch from jobctl.claim_job('hostile-escapes', %s, 1)", ([queue],)
    ).fetchone()
    if claim:
        p.admin.execute(
            "select jobctl.fail_job(%s, %s, %s, false)", (claim[0], claim[1], "boom " + evil_queue)
        )
    checks.append(("get", ["get", str(job)]))
    for what, args in checks:
        out = run_on_pty(jobctl_cli() + args, env)
        raw = [
            name
            for name, pattern in (
                ("ESC", rb"\x1b"),
                ("BEL", rb"\x07"),
                ("CR", rb"\r(?!\n)"),
                ("newline", rb"\r?\nname"),
            )
            if re.search(pattern, out)
        ]
        (problems if raw else notes).append(
            f"{what}: " + (f"raw {', '.join(raw)} on the terminal" if raw else "escaped")
        )
    outcome, evidence = verdict(problems, notes)
    return {"outcome": outcome, "evidence": evidence}


@item(12, "claim with 300 long queue names")
def many_queues(p: Probe) -> Result:
    """claim_job with 300 queue names of 32 characters: a claim (nothing to claim) or a clear refusal."""
    queues = [uuid.uuid4().hex for _ in range(300)]  # random: a filter that does not compress
    with p.connect("b") as c:
        try:
            c.execute("select count(*) from jobctl.claim_job('hostile-many', %s, 1)", (queues,))
            return {"outcome": "held", "evidence": "claimed (nothing due)"}
        except psycopg.Error as e:
            clear = (e.sqlstate or "").startswith(("JC", "22"))
            return {"outcome": "held" if clear else "open", "evidence": describe(e)}


@item(13, "submit_jobs value types")
def value_types(p: Probe) -> Result:
    """submit_jobs with an object as tenant_id, and an array as queue: refused (rolled back anyway)."""
    out, accepted = [], []
    cases = {
        "tenant_id object": {"tenant_id": {"a": 1}, "queue": "q", "payload": {}},
        "queue array": {"tenant_id": p.tenant["a"], "queue": ["q"], "payload": {}},
    }
    with p.connect("admin") as c:
        for what, spec in cases.items():
            try:
                with c.transaction(force_rollback=True):
                    c.execute("select jobctl.submit_jobs(%s)", (Jsonb([spec]),))
                accepted.append(what)
                out.append(f"{what}: accepted")
            except psycopg.Error as e:
                out.append(f"{what}: {describe(e)}")
    return {"outcome": "open" if accepted else "held", "evidence": "; ".join(out)}


def lane_cache(p: Probe) -> tuple[int, int]:
    row = p.admin.execute(
        "select (select count(*) from jobctl._lane_cache),"
        " (select coalesce(sum(pg_total_relation_size(relid)), 0)"
        "  from pg_partition_tree('jobctl._lane_cache'))"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@item(14, "lane cache bound")
def lane_cache_bound(p: Probe) -> Result:
    """20,000 (quick 2,000) distinct queue filters claimed once each, then ticks (every 5 s, for up to
    75 s: filters unused for a minute are pruned): the lane cache must keep under a tenth of them."""
    n = 2000 if p.quick else 20000
    rows0, size0 = lane_cache(p)
    with p.connect("b") as c:
        for i in range(n):
            c.execute("select count(*) from jobctl.claim_job('hostile-filters', %s, 1)", ([p.q(f"f{i}")],))
    rows1, size1 = lane_cache(p)
    t0 = time.monotonic()
    while True:
        time.sleep(1.2)
        p.admin.execute("select jobctl.tick()")
        rows2, size2 = lane_cache(p)
        if rows2 - rows0 <= n // 10 or time.monotonic() - t0 > 75:
            break
        time.sleep(3.8)
    waited = time.monotonic() - t0
    kept = rows2 - rows0
    evidence = f"_lane_cache rows {rows0:,} -> {rows1:,} after {n:,} filters"
    evidence += f" -> {rows2:,} after ticks for {waited:.0f} s"
    evidence += f"; {size0 / 1e6:.1f} -> {size1 / 1e6:.1f} -> {size2 / 1e6:.1f} MB"
    return {
        "outcome": "open" if kept > n // 10 else "held",
        "evidence": evidence,
        "rows": [rows0, rows1, rows2],
    }


def slowloris(p: Probe, count: int, wait: float) -> tuple[int, float]:
    """count sockets that send a request's headers a line every 2 s, never ending them: how many the
    server closed (or answered) within wait seconds, and how long that took."""
    assert p.api
    host, port = p.api.split("//")[1].split(":")
    socks = []
    for _ in range(count):
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: probe\r\n")
        s.setblocking(False)
        socks.append(s)
    closed: set[socket.socket] = set()
    t0 = time.monotonic()
    last_trickle = t0
    with selectors.DefaultSelector() as sel:
        for i, s in enumerate(socks):
            sel.register(s, selectors.EVENT_READ, data=i)
        while len(closed) < count and time.monotonic() - t0 < wait:
            for key, _ in sel.select(0.5):
                s = socks[key.data]
                sel.unregister(s)
                closed.add(s)  # data (an answer such as 408) or EOF: the server gave up on it
            if time.monotonic() - last_trickle >= 2:
                last_trickle = time.monotonic()
                for s in socks:
                    if s not in closed:
                        try:
                            s.send(b"X-Slow: 1\r\n")
                        except OSError:
                            sel.unregister(s)
                            closed.add(s)
    took = time.monotonic() - t0
    for s in socks:
        s.close()
    return len(closed), took


def get_p50(p: Probe, job: int, seconds: float, h: httpx.Client) -> tuple[float | None, list[int]]:
    ms, bad = [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        try:
            status = h.get(f"/api/v1/jobs/{job}", headers=p.auth("b")).status_code
        except httpx.HTTPError:
            status = 0
        ms.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            bad.append(status)
        time.sleep(0.02)
    return (statistics.median(ms) if ms else None), bad


@item(15, "API: slowloris, lists, backoff")
def api_smaller(p: Probe) -> Result:
    """Slowloris sockets (90 % must be closed within the wait); 16 concurrent filtered lists of one
    tenant beside another tenant's GET (each answered 200, p50 within GET_P50_RATIO of its baseline
    beside as many calls of the health endpoint);
    the error of a single submit's bad backoff (SQL and API) names backoff.base, not jobs[0]."""
    problems: list[str] = []
    notes: list[str] = []
    extra: dict[str, Any] = {}
    count, wait = (100, 15.0) if p.quick else (500, 30.0)
    closed, took = slowloris(p, count, wait)
    extra["slowloris_closed"] = closed
    (problems if closed < 0.9 * count else notes).append(
        f"slowloris: {closed}/{count} closed within {took:.0f} s"
    )
    # the lister's jobs are delayed a day: they are in its list, not in anyone's lanes
    jobs, window = (20_000, 5.0) if p.quick else (200_000, 15.0)
    t0 = time.monotonic()
    p.submit_many(
        p.tenant["a"], p.q("many"), jobs, run_at=(datetime.now(UTC) + timedelta(days=1)).isoformat()
    )
    notes.append(f"{jobs:,} jobs of A in {time.monotonic() - t0:.0f} s")
    [b_job] = p.submit_many(p.tenant["b"], p.q("get"), 1)
    with p.http() as h:
        statuses = defaultdict[Any, int](int)

        def beside(lists: bool, seconds: float) -> tuple[float | None, list[int]]:
            """B's GET p50 while 16 threads of A hit the API: its lists, or (the baseline) its health
            endpoint, which shares the API's CPU the same way and reads nothing."""
            stop = threading.Event()

            def hitter() -> None:
                with p.http() as lh:
                    while not stop.is_set():
                        params = {"queue": p.q("nothing-here"), "state": "failed", "limit": "1000"}
                        try:
                            if lists:
                                r = lh.get("/api/v1/jobs", params=params, headers=p.auth("a"))
                                statuses[r.status_code] += 1
                            else:
                                lh.get("/api/v1/health")
                        except httpx.HTTPError as e:
                            statuses[type(e).__name__] += 1

            threads = [threading.Thread(target=hitter, daemon=True) for _ in range(16)]
            for t in threads:
                t.start()
            time.sleep(0.5)
            try:
                return get_p50(p, b_job, seconds, h)
            finally:
                stop.set()
                for t in threads:
                    t.join(30)

        base, _ = beside(False, window / 2)
        during, bad = beside(True, window)
        lists = f"A's lists answered {dict(statuses)}"
        b_get = f"B's GET p50 {base or 0:.1f} -> {during or 0:.1f} ms" + (
            f", non-200: {bad[:5]}" if bad else ""
        )
        bar = None if base is None else max(GET_P50_RATIO * base, base + GET_P50_SLACK_MS)
        too_slow = during is None or bar is None or during > bar
        (problems if too_slow or bad else notes).append(f"{b_get} ({lists})")
        extra["b_get_p50_ms"] = [base, during]
        r = h.post(
            "/api/v1/jobs", json={"queue": "q", "payload": {}, "backoff": {"base": "x"}}, headers=p.auth("a")
        )
        api_error = f"API {r.status_code} field={r.json().get('field') if r.content else None}"
    with p.connect("a") as c:
        try:
            with c.transaction(force_rollback=True):
                c.execute(
                    "select jobctl.submit_job(%s, 'q', '{}', backoff => '{\"base\": \"x\"}')",
                    (p.tenant["a"],),
                )
            sql_error = "SQL accepted"
        except psycopg.Error as e:
            sql_error = f"SQL {describe(e)}"
    backoff = f"backoff: {sql_error}; {api_error}"
    (problems if "jobs[0]" in backoff or "accepted" in sql_error else notes).append(backoff)
    outcome, evidence = verdict(problems, notes)
    return {"outcome": outcome, "evidence": evidence, **extra}


# --- running -----------------------------------------------------------------------------------------


def ms(pair: Any) -> str:
    if not pair or pair[0] is None or pair[1] is None:
        return "-"
    return f"{pair[0]:.0f}->{pair[1]:.0f}"


def git_commit() -> str:
    run = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return run.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dsn", help="the database, as a superuser or the schema owner (default: JOBCTL_DSN or .pg/dsn)"
    )
    ap.add_argument("--api", help="URL of a running `jobctl serve` on the same database (default: start one)")
    ap.add_argument("--items", help="comma-separated item numbers (default: all, 1-16)")
    ap.add_argument("--quick", action="store_true", help="smaller counts and 5 s holds, for CI")
    ap.add_argument("--write", action="store_true", help=f"append JSON lines to {RESULTS.relative_to(ROOT)}")
    ap.add_argument("--strict", action="store_true", help="exit 1 when an item is open or could not run")
    args = ap.parse_args()
    chosen = sorted({int(x) for x in args.items.split(",")}) if args.items else sorted(ITEMS)
    unknown = [n for n in chosen if n not in ITEMS]
    if unknown:
        ap.error(f"no such item: {unknown}")
    probe = Probe(args.dsn or db.dsn(), args.api.rstrip("/") if args.api else None, args.quick)
    results: list[Result] = []
    mode = "quick" if args.quick else "full"
    print(f"hostile probe ({mode}, tag {probe.tag}): items {','.join(map(str, chosen))}", flush=True)
    header = f"{'#':>2}  {'item':<31}  {'outcome':<7}  {'B claim p99':>12}  {'B submit p99':>12}  evidence"
    print(header + "\n" + "-" * len(header), flush=True)
    try:
        probe.setup(need_api=bool(API_ITEMS & set(chosen)))
        for n in chosen:
            name, fn = ITEMS[n]
            t0 = time.monotonic()
            try:
                r = fn(probe)
            except Exception as e:  # the probe could not run the item: say so, and go on
                r = {"outcome": "error", "evidence": describe(e)}
            r = {"item": n, "name": name, **r, "seconds": round(time.monotonic() - t0, 1)}
            results.append(r)
            claim, submit = ms(r.get("b_claim_p99_ms")), ms(r.get("b_submit_p99_ms"))
            print(
                f"{n:>2}  {name:<31}  {r['outcome']:<7}  {claim:>12}  {submit:>12}  {r['evidence']}",
                flush=True,
            )
    finally:
        probe.cleanup()
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("held", "open", "error")}
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + " (B's latencies in ms, baseline->during)")
    if args.write:
        stamp = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "commit": git_commit(), "mode": mode}
        with RESULTS.open("a") as f:
            for r in results:
                f.write(json.dumps(stamp | r, default=str) + "\n")
    return 1 if args.strict and any(r["outcome"] != "held" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
