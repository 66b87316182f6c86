"""Moving a tenant between shards (jobctl.shard_move, sql/functions/shard/_move_*.sql).

The shards are databases of the test cluster, migrated and made shards 0 and 1 as the sharding
contract says (ids step by 64, id % 64 = shard); the router database is the real PL/Proxy router
(sql/router/, jobctl.shards.install_router). Workers claim on the shards directly; the submitter
routes by placement itself, as the router does, and the key resender goes through the router's
jobctl.submit_job and straight to the source shard. Effects: each job's
handler writes a ledger row in the transaction that completes it (tests/worker_handlers.py), on the
shard it ran on; the ledgers of both shards together must hold every job exactly once.

- a crash after each step of the move (an exception from the step hook), then a rerun: one copy of
  every unfinished job, on the target, with its attempts, run_at, priority, keys and payload;
- real worker processes on both shards, a submitter following the placement, a backlog of pending
  jobs (SHARD_MOVE_JOBS: 2,000 in `make test`, 10,000 in `make shard-move`) plus delayed, retrying,
  running, keyed and dedup-keyed ones, and a kill -9 of the mover in the middle of its copy, then a
  rerun: 0 lost, 0 duplicated;
- repeats of held dedup keys sent throughout a move (from the first page to after the flip and the
  move's end) through the router and directly to the source: one job per key, answered as
  duplicates; the tenant's role grants and API tokens come along;
- durable jobs (a saved step, a sleep, a wait for an event: tests/durable_handlers.py) parked on
  the source while emitters send their events through the router throughout the move: each job
  completes once with its event's first payload, and its step ran once (SHARD_MOVE_JOBS / 10 jobs,
  at least 200);
- SHARD_MOVE_ROUNDS=n (`make shard-move`): n clean moves of a 10,000-job backlog back and forth
  under the same load, with the median move time and pause window.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from jobctl import migrate as mig
from jobctl import shard_move, shards
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb
from test_durable import TABLES as DURABLE_TABLES
from test_worker import LEDGER_DDL, WorkerProcess

Conn = psycopg.Connection[tuple[Any, ...]]

QUICK_RETRY = {"strategy": "fixed", "base": "0.5 seconds", "max": "0.5 seconds", "jitter": False}
JOBS = int(os.environ.get("SHARD_MOVE_JOBS", "2000"))
DURABLE = max(200, JOBS // 10)
ROUNDS = int(os.environ.get("SHARD_MOVE_ROUNDS", "0"))
# what a moved job must keep
KEPT = """
select job_id, state, attempt, max_attempts, run_at, priority, dedup_key, concurrency_key, payload, created_at
from jobctl.job where tenant_id = %s and state in ('pending', 'failed') order by job_id
"""
UNFINISHED = (
    "select count(*) from jobctl.job where tenant_id = %s and state not in ('completed', 'dead', 'cancelled')"
)
TOKENS = """
select (select count(*) from jobctl._ready where tenant_id = %(t)s)
    + (select count(*) from jobctl._held where tenant_id = %(t)s)
    + (select count(*) from jobctl._delayed where tenant_id = %(t)s)
"""


def _dsn_for(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


@pytest.fixture(scope="module")
def shard_set() -> Iterator[dict[str, str]]:
    """router, 0, 1: DSNs of three new databases of the test cluster."""
    dsn = os.environ["JOBCTL_DSN"]
    tag = "mv_" + uuid.uuid4().hex[:8]
    names = {"router": f"{tag}_router", "0": f"{tag}_s0", "1": f"{tag}_s1"}
    with psycopg.connect(dsn, autocommit=True) as c:
        for n in names.values():
            c.execute(f'create database "{n}"')
    dsns = {k: _dsn_for(dsn, n) for k, n in names.items()}
    try:
        for shard in (0, 1):
            with psycopg.connect(dsns[str(shard)], autocommit=True) as c:
                mig.migrate(c)
                for seq in ("jobctl.job_id_seq", "jobctl.batch_id_seq"):
                    c.execute(f"alter sequence {seq} increment by 64 minvalue 0 restart with {64 + shard}")
                c.execute(LEDGER_DDL)
        with psycopg.connect(dsns["router"], autocommit=True) as c:
            shards.install_router(c, {0: dsns["0"], 1: dsns["1"]})
        yield dsns
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            for n in names.values():
                c.execute(f'drop database if exists "{n}" with (force)')


class Cluster:
    """Connections to the router and both shards of shard_set."""

    def __init__(self, dsns: dict[str, str]) -> None:
        self.dsns = dsns
        self.router: Conn = psycopg.connect(dsns["router"], autocommit=True)
        self.shards: dict[int, Conn] = {n: psycopg.connect(dsns[str(n)], autocommit=True) for n in (0, 1)}

    def close(self) -> None:
        self.router.close()
        for c in self.shards.values():
            c.close()

    def placement(self, tenant: str) -> tuple[Any, ...] | None:
        return self.router.execute(
            "select shard, moving_to from jobctl_router.placement where tenant_id = %s", (tenant,)
        ).fetchone()

    def submit(self, jobs: list[dict[str, Any]]) -> list[int]:
        """Submit as the router does: on the tenant's placed shard; again when that shard says the
        tenant moved (JC011: the placement flipped between the lookup and the submit)."""
        for _ in range(200):
            placed = self.placement(jobs[0]["tenant_id"])
            assert placed is not None
            try:
                sql = "select job_id from jobctl.submit_jobs(%s)"
                return [r[0] for r in self.shards[placed[0]].execute(sql, (Jsonb(jobs),))]
            except psycopg.Error as e:
                if e.sqlstate != "JC011":
                    raise
                time.sleep(0.01)  # fenced before the flip: the router's placement changes in a moment
        pytest.fail("the submit kept meeting a moved tenant")

    def one(self, shard: int, sql: str, params: Any = None) -> Any:
        row = self.shards[shard].execute(sql, params).fetchone()
        assert row is not None
        return row[0]


@pytest.fixture
def cluster(shard_set: dict[str, str]) -> Iterator[Cluster]:
    c = Cluster(shard_set)
    yield c
    c.close()


def backlog(cl: Cluster, tenant: str, queue: str, pending: int) -> list[int]:
    """Slow jobs (3 s: running when the move starts), pending ones, delayed ones (due 3 s from now),
    ones that fail once (then retry after 0.5 s), dedup-keyed ones and ones with a concurrency key
    limited to 2 at once."""

    def job(**payload: Any) -> dict[str, Any]:
        return {"tenant_id": tenant, "queue": queue, "payload": payload}

    shard = cl.placement(tenant)
    assert shard is not None
    due = cl.one(shard[0], "select (now() + interval '3 seconds')::text")
    cl.shards[shard[0]].execute("select jobctl.put_tenant(%s)", (tenant,))
    cl.shards[shard[0]].execute("select jobctl.put_concurrency_limit(%s, 'ck', 2)", (tenant,))
    ids = cl.submit([job(s=i, sleep=3) for i in range(20)])  # claimed first: running at the move
    for lo in range(0, pending, 10000):
        ids += cl.submit([job(i=i) for i in range(lo, min(pending, lo + 10000))])
    ids += cl.submit([{**job(d=i), "run_at": due} for i in range(200)])
    ids += cl.submit([{**job(f=i, fail_times=1), "backoff": QUICK_RETRY} for i in range(100)])
    ids += cl.submit([{**job(k=i), "dedup_key": f"key-{i}"} for i in range(50)])
    ids += cl.submit([{**job(c=i, sleep=0.05), "concurrency_key": "ck"} for i in range(30)])
    return ids


def ledger(dsns: dict[str, str]) -> Counter[int]:
    seen: Counter[int] = Counter()
    for shard in ("0", "1"):
        with psycopg.connect(dsns[shard]) as c:
            seen.update(r[0] for r in c.execute("select job_id from public.worker_ledger"))
    return seen


def wait_all_finished(cl: Cluster, tenant: str, workers: list[WorkerProcess], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while any(cl.one(n, UNFINISHED, (tenant,)) for n in (0, 1)):
        assert time.monotonic() < deadline, [w.log[-2000:] for w in workers]
        time.sleep(0.2)


class Submitter(threading.Thread):
    """One routed submit every 10 ms until stopped: the tenant's traffic during the move."""

    def __init__(self, dsns: dict[str, str], tenant: str, queue: str) -> None:
        super().__init__()
        self.dsns, self.tenant, self.queue = dsns, tenant, queue
        self.ids: list[int] = []
        self.errors: list[BaseException] = []
        self.halt = threading.Event()

    def run(self) -> None:
        cl = Cluster(self.dsns)
        try:
            i = 0
            while not self.halt.is_set():
                self.ids += cl.submit(
                    [{"tenant_id": self.tenant, "queue": self.queue, "payload": {"live": i}}]
                )
                i += 1
                time.sleep(0.01)
        except BaseException as e:  # noqa: BLE001 (the test reports it)
            self.errors.append(e)
        finally:
            cl.close()

    def stop(self) -> list[int]:
        self.halt.set()
        self.join(10)
        assert not self.errors, self.errors
        return self.ids


REPEAT = "select job_id, duplicate from jobctl.submit_job(%s, %s, %s::jsonb, dedup_key => %s)"


class Resender(threading.Thread):
    """Repeats of dedup keys, round and round until stopped, on one connection: the router's
    jobctl.submit_job (PL/Proxy: the tenant's placed shard) or a shard's own. Each answer is kept as
    (key, job_id, duplicate, the move's step at the time); a JC011 (the tenant moved: sent by a
    placement that has just flipped, or straight to a fenced source) is counted, and the router's
    is sent again, as the router's callers do."""

    def __init__(self, dsn: str, tenant: str, queue: str, keys: list[str], phase: list[str]) -> None:
        super().__init__()
        self.dsn, self.tenant, self.queue, self.keys, self.phase = dsn, tenant, queue, keys, phase
        self.answers: list[tuple[str, int, bool, str]] = []
        self.refused = 0
        self.rounds = 0
        self.errors: list[BaseException] = []
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                while not self.halt.is_set():
                    for key in self.keys:
                        step = self.phase[-1]
                        try:
                            row = c.execute(
                                REPEAT, (self.tenant, self.queue, '{"again": true}', key)
                            ).fetchone()
                        except psycopg.Error as e:
                            if e.sqlstate != "JC011":
                                raise
                            self.refused += 1
                            continue
                        assert row is not None
                        self.answers.append((key, int(row[0]), bool(row[1]), step))
                    self.rounds += 1
                    time.sleep(0.002)
        except BaseException as e:  # noqa: BLE001 (the test reports it)
            self.errors.append(e)

    def stop(self) -> None:
        self.halt.set()
        self.join(10)
        assert not self.errors, self.errors


def jobs_with_key(cl: Cluster, tenant: str) -> Counter[str]:
    """How many jobs of the tenant hold each dedup key, on both shards together."""
    held: Counter[str] = Counter()
    for n in (0, 1):
        sql = "select dedup_key from jobctl.job where tenant_id = %s and dedup_key is not null"
        held.update(r[0] for r in cl.shards[n].execute(sql, (tenant,)))
    return held


def hold_keys(cl: Cluster, tenant: str, queue: str, tag: str, n: int = 50) -> dict[str, int]:
    """n dedup keys held throughout a move (jobs due in an hour: moved, never run); key -> job id."""
    due = cl.router.execute("select (now() + interval '1 hour')::text").fetchone()
    assert due is not None
    keys = [f"{tag}-{i}" for i in range(n)]
    jobs = [
        {"tenant_id": tenant, "queue": queue, "payload": {}, "dedup_key": k, "run_at": due[0]} for k in keys
    ]
    return dict(zip(keys, cl.submit(jobs), strict=True))


def repeats_seen(
    cl: Cluster, tenant: str, held: dict[str, int], resenders: list[Resender]
) -> tuple[int, int, int]:
    """Stop the resenders and cancel the held keys' jobs; returns (repeats answered, answers naming
    another job or not a duplicate, held keys with other than one job on the two shards)."""
    for r in resenders:
        r.stop()
    answers = [a for r in resenders for a in r.answers]
    wrong = sum(1 for key, job_id, dup, _ in answers if (job_id, dup) != (held[key], True))
    per_key = jobs_with_key(cl, tenant)
    for job_id in held.values():
        cl.router.execute("select jobctl.cancel_job(%s)", (job_id,))
    return len(answers), wrong, sum(1 for k in held if per_key[k] != 1)


def test_repeats_of_held_keys_during_a_move_make_one_job_per_key(cluster: Cluster) -> None:
    """A key held by a job on the source is repeated throughout the move, through
    the real PL/Proxy router and straight to the source: during the copy (the holder already on the
    target), at the fence and the flip, in the drain (holders still running on the source, or failed
    there and copied by the drain) and after the move. Every repeat answers the key's one job. The
    tenant's role grant and API token come along."""
    cl = cluster
    tenant = "keys-" + uuid.uuid4().hex[:6]
    queue, q_run = "q-" + tenant, "qr-" + tenant
    cl.router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))
    src = cl.shards[0]
    role = "mv_role_" + uuid.uuid4().hex[:6]
    src.execute(f'create role "{role}"')
    try:
        _repeat_held_keys_during_a_move(cl, tenant, queue, q_run, role)
    finally:
        for n in (0, 1):
            cl.shards[n].execute(f'drop owned by "{role}"')
        src.execute(f'drop role "{role}"')


def _repeat_held_keys_during_a_move(cl: Cluster, tenant: str, queue: str, q_run: str, role: str) -> None:
    src = cl.shards[0]
    src.execute("select jobctl.grant_tenant(%s, %s)", (role, tenant))
    token = cl.one(0, "select jobctl.create_api_token(%s, array['jobs:submit'], 'mv')", (tenant,))

    def job(q: str, key: str | None = None, **extra: Any) -> dict[str, Any]:
        return {"tenant_id": tenant, "queue": q, "payload": {"k": key}, "dedup_key": key, **extra}

    # pending holders among a backlog of several pages; holders running at the flip; one whose
    # attempt failed and waits out its retry (moved as failed)
    held = [f"h-{i}" for i in range(40)]
    first = dict(zip(held, cl.submit([job(queue, k) for k in held]), strict=True))
    cl.submit([job(queue) for _ in range(1500)])
    running = [f"r-{i}" for i in range(6)]
    first |= dict(zip(running, cl.submit([job(q_run, k) for k in running]), strict=True))
    claim = "select job_id, lease_epoch from jobctl.claim_job('w', %s, %s)"
    claimed = src.execute(claim, ([q_run], 10)).fetchall()
    assert len(claimed) == 6
    first["f-0"] = cl.submit([job(q_run, "f-0", backoff={"strategy": "fixed", "base": "1 hour"})])[0]
    src.execute(
        "select jobctl.fail_job(job_id, lease_epoch, 'boom') from jobctl.claim_job('w', %s, 1)", ([q_run],)
    )
    keys = [*held, *running, "f-0"]

    phase = ["before"]
    resenders = [
        Resender(cl.dsns["router"], tenant, queue, keys, phase),
        Resender(cl.dsns["0"], tenant, queue, keys, phase),
    ]
    for r in resenders:
        r.start()
    time.sleep(0.2)

    def step(name: str) -> None:
        phase.append(name)
        if name == "flip":  # the holders running on the source end there, in the drain
            time.sleep(0.2)
            for job_id, epoch in claimed[:3]:
                assert cl.one(0, "select jobctl.complete_job(%s, %s)", (job_id, epoch)) is True
            for job_id, epoch in claimed[3:]:  # a retry, pending on the paused source: the drain copies it
                src.execute("select jobctl.fail_job(%s, %s, 'again')", (job_id, epoch))
        if name == "finish":  # before the target forgets the source's keys: the holders that ended on
            # the source are finished history there, which the target does not see (docs/operations.md)
            for r in resenders:
                r.keys, seen = [k for k in keys if k not in running[:3]], r.rounds
                while r.rounds < seen + 2 and r.is_alive():
                    time.sleep(0.01)
        time.sleep(0.05)

    try:
        report = shard_move.move_tenant(cl.router, tenant, 1, page=150, drain_timeout=30, after_step=step)
        phase.append("moved")
        time.sleep(0.3)
    finally:
        for r in resenders:
            r.stop()

    answers = [a for r in resenders for a in r.answers]
    wrong = [a for a in answers if (a[1], a[2]) != (first[a[0]], True)]
    steps = Counter(a[3] for a in answers)
    per_key = jobs_with_key(cl, tenant)
    print(
        f"\nkey repeats during a move: {len(answers)} answered ({resenders[0].refused} JC011 sent again"
        f" through the router, {resenders[1].refused} JC011 straight to the fenced source); by step"
        f" {dict(steps)}; answers naming another job or not a duplicate: {len(wrong)};"
        f" keys with more than one job: {sum(1 for n in per_key.values() if n > 1)}; {report.line()}"
    )
    assert not wrong, wrong[:10]
    assert per_key == Counter(keys), {k: n for k, n in per_key.items() if n != 1}
    for name in ("take", "import", "copy", "flip", "finish", "moved"):
        assert steps[name] > 0, (name, steps)
    assert resenders[1].refused > 0  # the source refuses once it is fenced
    assert {a[3] for a in resenders[1].answers} >= {"take", "import"}  # and answered repeats before
    # each job on one shard: the finished on the source, the rest on the target; no key left behind
    of_tenant = "select job_id from jobctl.job where tenant_id = %s"
    ids = {n: {r[0] for r in cl.shards[n].execute(of_tenant, (tenant,))} for n in (0, 1)}
    assert not ids[0] & ids[1]
    ended = {first[k] for k in running[:3]}
    assert ended <= ids[0] and set(first.values()) - ended <= ids[1]
    for n in (0, 1):
        assert cl.one(n, "select count(*) from jobctl._move_key where tenant_id = %s", (tenant,)) == 0
    # after the move a repeat of a key whose holder moved is a duplicate on the target
    assert cl.router.execute(REPEAT, (tenant, queue, "{}", "h-0")).fetchone() == (first["h-0"], True)
    # the tenant's role grant and API token came along
    granted = "select count(*) from jobctl.list_tenant_grants() where tenant_id = %s and role_name = %s"
    assert cl.one(1, granted, (tenant, role)) == 1
    assert cl.one(1, "select tenant_id from jobctl.authenticate(%s, 'jobs:submit')", (token,)) == tenant


def start_workers(dsns: dict[str, str], tmp: Path, queue: str) -> list[WorkerProcess]:
    args = [
        "--handler",
        "worker_handlers:handle",
        "--queue",
        queue,
        "--poll-interval",
        "0.05",
        "--lease",
        "10",
    ]
    return [
        WorkerProcess(dsns[str(n)], tmp, [*args, "--concurrency", "20", "--worker-id", f"w{n}"])
        for n in (0, 1)
    ]


class Crash(Exception):
    pass


@pytest.mark.parametrize(
    "at", ["begin", "mark", "open", "take", "route", "import", "copy", "fence", "keys", "resume", "flip"]
)
def test_a_crash_after_any_step_and_a_rerun_converge(cluster: Cluster, at: str) -> None:
    tenant = f"crash-{at}-" + uuid.uuid4().hex[:6]
    queue = "q-" + tenant
    cl = cluster
    cl.router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))
    src = cl.shards[0]
    base = [
        {"tenant_id": tenant, "queue": queue, "payload": {"i": i, "x": "é" * i}, "priority": i % 5}
        for i in range(300)
    ]
    base += [
        {"tenant_id": tenant, "queue": queue, "payload": {"d": i}, "run_at": "2030-01-01T00:00:00Z"}
        for i in range(5)
    ]
    base += [
        {
            "tenant_id": tenant,
            "queue": queue,
            "payload": {"k": i},
            "dedup_key": f"k{i}",
            "concurrency_key": "ck",
        }
        for i in range(5)
    ]
    cl.submit(base)
    src.execute("select jobctl.put_concurrency_limit(%s, 'ck', 2)", (tenant,))
    # four running jobs (claimed, not finished) and four failed ones waiting out a retry
    claimed = src.execute(
        "select job_id, lease_epoch from jobctl.claim_job('w', %s, 8)", ([queue],)
    ).fetchall()
    for job_id, epoch in claimed[4:]:
        src.execute("select jobctl.fail_job(%s, %s, 'boom')", (job_id, epoch))
    running = claimed[:4]
    before = {r[0]: r for r in src.execute(KEPT, (tenant,))}
    assert len(before) == 310 - 4

    def crash(name: str) -> None:
        if name == at:
            raise Crash(name)

    with pytest.raises(Crash):
        shard_move.move_tenant(cl.router, tenant, 1, page=100, after_step=crash)
    # the running jobs end on the source meanwhile: three complete, one fails and leaves a retry there
    for job_id, epoch in running[:3]:
        assert cl.one(0, "select jobctl.complete_job(%s, %s)", (job_id, epoch)) is True
    src.execute("select jobctl.fail_job(%s, %s, 'again')", running[3])
    retried = src.execute(
        KEPT.replace("order by", "and job_id = %s order by"), (tenant, running[3][0])
    ).fetchone()
    assert retried is not None
    before[retried[0]] = retried

    report = shard_move.move_tenant(cl.router, tenant, 1, page=100, drain_timeout=30)
    assert report.resumed and report.source == 0
    after = {r[0]: r for r in cl.shards[1].execute(KEPT, (tenant,))}
    assert after == before  # every unfinished job once, as it was (ids, attempts, run_at, keys, payloads)
    assert cl.one(0, UNFINISHED, (tenant,)) == 0
    assert cl.one(1, TOKENS, {"t": tenant}) == len(before)  # each claimable once on the target
    assert cl.one(0, TOKENS, {"t": tenant}) == 0
    routed = cl.router.execute(
        "select count(*) from jobctl_router.job_route where job_id = any(%s) and shard = 1", (list(before),)
    ).fetchone()
    assert routed == (len(before),)
    assert cl.placement(tenant) == (1, None)
    assert cl.one(
        1, "select not paused and moved_to is null from jobctl.tenant where tenant_id = %s", (tenant,)
    )
    assert cl.one(1, "select max_running from jobctl.concurrency_limit where tenant_id = %s", (tenant,)) == 2
    assert cl.one(0, "select moved_to from jobctl.tenant where tenant_id = %s", (tenant,)) == 1
    # the finished history stays on the source, found by id there
    assert cl.one(0, "select state from jobctl.get_job(%s)", (running[0][0],)) == "completed"
    # claims on the target get the moved jobs; a third run has nothing to do
    got = cl.shards[1].execute("select job_id from jobctl.claim_job('w1', %s, 1000)", ([queue],)).fetchall()
    assert {r[0] for r in got} <= set(before) and got
    assert shard_move.move_tenant(cl.router, tenant, 1).source is None


def test_a_page_racing_a_promotion_leaves_no_queue_row_behind(cluster: Cluster) -> None:
    """A delayed job falls due as a page of the move takes it: a promotion (jobctl._promote_due)
    has deleted its _delayed row and made its _ready row, not committed yet, when the page's delete
    reaches it. The page waits for the promotion, then deletes the row it made: the job leaves the
    source with no queue row there (one left behind would be a second copy of the job)."""
    cl = cluster
    tenant = "race-" + uuid.uuid4().hex[:6]
    cl.router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))
    src = cl.shards[0]
    (job_id,) = cl.submit(
        [{"tenant_id": tenant, "queue": "q-" + tenant, "payload": {}, "run_at": "2030-01-01T00:00:00Z"}]
    )
    src.execute(
        "update jobctl._delayed set run_at = now() - interval '1 second' where job_id = %s", (job_id,)
    )
    src.execute("select jobctl._move_out_begin(%s, 1)", (tenant,))
    queue_rows = (
        "select (select count(*) from jobctl._ready where job_id = %(j)s)"
        " + (select count(*) from jobctl._held where job_id = %(j)s)"
        " + (select count(*) from jobctl._delayed where job_id = %(j)s)"
    )
    page: list[Any] = []
    with psycopg.connect(cl.dsns["0"]) as promoter, psycopg.connect(cl.dsns["0"], autocommit=True) as mover:
        promoter.execute("select jobctl._promote_due(1000000)")  # its transaction stays open
        assert promoter.execute(
            "select count(*) from jobctl._ready where job_id = %s", (job_id,)
        ).fetchone() == (1,)
        pid = mover.info.backend_pid
        taker = threading.Thread(
            target=lambda: page.append(
                mover.execute("select jobctl._move_out_jobs(%s, 0, 10)", (tenant,)).fetchone()
            )
        )
        taker.start()
        waiting = "select wait_event_type from pg_stat_activity where pid = %s"
        deadline = time.monotonic() + 10
        while cl.one(0, waiting, (pid,)) != "Lock":
            assert time.monotonic() < deadline and taker.is_alive(), "the page did not wait for the promotion"
            time.sleep(0.01)
        promoter.commit()
        taker.join(10)
    assert page and [j["job_id"] for j in page[0][0]["jobs"]] == [job_id]
    assert cl.one(0, queue_rows, {"j": job_id}) == 0


def test_refusals(cluster: Cluster) -> None:
    cl = cluster
    tenant = "refuse-" + uuid.uuid4().hex[:6]
    cl.router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))
    cl.shards[0].execute("select jobctl.put_schedule(%s, 'nightly', '0 3 * * *', 'q', '{}')", (tenant,))
    with pytest.raises(psycopg.Error) as refused:
        shard_move.move_tenant(cl.router, tenant, 1)
    assert refused.value.sqlstate == "JC010" and "schedules" in str(refused.value)
    assert cl.placement(tenant) == (0, None)  # nothing changed
    assert cl.one(0, "select paused from jobctl.tenant where tenant_id = %s", (tenant,)) is False
    # the router's order: the move waits at its first step; a step reported out of order is refused,
    # and no page is routed before the copy
    assert cl.router.execute(
        "select step from jobctl_router.move where tenant_id = %s", (tenant,)
    ).fetchone() == ("begin",)
    with pytest.raises(psycopg.Error, match="at step begin, not copy") as refused:
        cl.router.execute("select * from jobctl_router.move_next(%s, 1, 'copy')", (tenant,))
    assert refused.value.sqlstate == "JC010"
    with pytest.raises(psycopg.Error, match="no move copying") as refused:
        cl.router.execute("select jobctl_router.move_route(%s, array[64]::bigint[])", (tenant,))
    assert refused.value.sqlstate == "JC010"
    with pytest.raises(shard_move.MoveError, match="no shard 7"):
        shard_move.move_tenant(cl.router, tenant, 7)
    with pytest.raises(shard_move.MoveError, match="not placed"):
        shard_move.move_tenant(cl.router, "nobody-" + tenant, 1)


class Emitter(threading.Thread):
    """Emits each of `events` once, in its own random order, spread over about `spread` seconds,
    through the router's jobctl.emit_event; a JC011 (the source fenced, the router not flipped yet)
    is sent again, as the router's callers do. Keeps (event, jobs woken, the move's step then)."""

    def __init__(self, dsn: str, tenant: str, events: list[str], seed: int, spread: float, phase: list[str]):
        super().__init__()
        self.dsn, self.tenant, self.events, self.seed, self.spread = dsn, tenant, events, seed, spread
        self.phase = phase
        self.answers: list[tuple[str, int, str]] = []
        self.refused = 0
        self.errors: list[BaseException] = []

    def run(self) -> None:
        rnd = random.Random(self.seed)
        emit = "select jobctl.emit_event(%s, %s, %s::jsonb)"
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                for event in rnd.sample(self.events, len(self.events)):
                    time.sleep(rnd.random() * 2 * self.spread / len(self.events))
                    while True:
                        try:
                            row = c.execute(
                                emit, (self.tenant, event, json.dumps({"from": self.seed}))
                            ).fetchone()
                            break
                        except psycopg.Error as e:
                            if e.sqlstate != "JC011":
                                raise
                            self.refused += 1
                            time.sleep(0.01)
                    assert row is not None
                    self.answers.append((event, int(row[0]), self.phase[-1]))
        except BaseException as e:  # noqa: BLE001 (the test reports it)
            self.errors.append(e)


def test_durable_jobs_and_racing_emits_cross_a_move(cluster: Cluster, tmp_path: Path) -> None:
    """DURABLE jobs each save a step (its effect row written in the step's transaction), a quarter
    sleep a second, then wait for one of 50 events, run by workers on both shards; once half of them
    wait on the source, 4 emitters send every event through the router, spread over the move. Each
    job completes once, with the payload its event has on the target, which is the source's where
    the source had it (the first emit wins across the move); each step ran once; and jobs parked on
    the source woke and finished on the target."""
    cl = cluster
    tenant = "dur-" + uuid.uuid4().hex[:6]
    queue = "q-" + tenant
    cl.router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))
    for n in (0, 1):
        cl.shards[n].execute(DURABLE_TABLES)
    events = [f"ev-{i}" for i in range(50)]
    ids = cl.submit(
        [
            {
                "tenant_id": tenant,
                "queue": queue,
                "payload": {"event": events[i % 50], "sleep": 1 if i % 4 == 0 else 0},
            }
            for i in range(DURABLE)
        ]
    )
    args = ["--handler", "durable_handlers:step_sleep_wait", "--queue", queue, "--poll-interval", "0.05"]
    workers = [
        WorkerProcess(cl.dsns[str(n)], tmp_path, [*args, "--concurrency", "20", "--worker-id", f"w{n}"])
        for n in (0, 1)
    ]
    phase = ["before"]
    emitters = [Emitter(cl.dsns["router"], tenant, events, seed, 6.0, phase) for seed in range(4)]
    waiting = "select count(*) from jobctl._awaiting where tenant_id = %s"
    try:
        deadline = time.monotonic() + 60
        while cl.one(0, waiting, (tenant,)) < DURABLE // 2:
            assert time.monotonic() < deadline, workers[0].log[-2000:]
            time.sleep(0.05)
        for e in emitters:
            e.start()

        def step(name: str) -> None:  # a slower move, so that the emits meet each of its steps
            phase.append(f"flipped {name}" if "flip" in phase else name)
            time.sleep(0.1)

        report = shard_move.move_tenant(
            cl.router, tenant, 1, page=max(20, DURABLE // 10), drain_timeout=60, after_step=step
        )
        phase.append("moved")
        for e in emitters:
            e.join(60)
            assert not e.errors, e.errors
        wait_all_finished(cl, tenant, workers)
    finally:
        for w in workers:
            w.stop()
    rows: dict[int, tuple[int, str, str, Any]] = {}
    of_jobs = "select job_id, payload ->> 'event', state, result from jobctl.job where job_id = any(%s)"
    for n in (0, 1):
        for job_id, event, state, result in cl.shards[n].execute(of_jobs, (ids,)):
            assert job_id not in rows, f"job {job_id} on both shards"
            rows[job_id] = (n, event, state, result)
    assert set(rows) == set(ids)
    emitted = "select event, payload from jobctl._emitted where tenant_id = %s"
    target = dict(cl.shards[1].execute(emitted, (tenant,)).fetchall())
    source = dict(cl.shards[0].execute(emitted, (tenant,)).fetchall())
    assert set(target) == set(events)
    assert {e: target[e] for e in source} == source, "the source's first payloads are the target's"
    wrong = [j for j, (_, ev, st, res) in rows.items() if (st, res) != ("completed", {"payload": target[ev]})]
    effects: Counter[int] = Counter()
    stepped_on: dict[int, int] = {}
    for n in (0, 1):
        for (job_id,) in cl.shards[n].execute(
            "select job_id from public.durable_effect where job_id = any(%s)", (ids,)
        ):
            effects[job_id] += 1
            stepped_on[job_id] = n
    crossed = sum(1 for j, (n, *_) in rows.items() if n == 1 and stepped_on.get(j) == 0)
    phases = Counter(p for e in emitters for _, _, p in e.answers)
    print(
        f"\ndurable jobs across a move: {len(ids)} jobs on 50 events, {sum(len(e.answers) for e in emitters)}"
        f" emits through the router by step {dict(phases)} ({sum(e.refused for e in emitters)} JC011 sent"
        f" again); {len(source)} events recorded on the source, all of them on the target with the same"
        f" payload; {crossed} jobs stepped on the source and completed on the target; wrong results"
        f" {len(wrong)}; steps run other than once {sum(1 for j in ids if effects[j] != 1)}; {report.line()}"
    )
    assert not wrong, [rows[j] for j in wrong[:5]]
    assert all(effects[j] == 1 for j in ids), {j: effects[j] for j in ids if effects[j] != 1}
    assert crossed > 0
    after_flip = sum(n for p, n in phases.items() if p.startswith("flipped") or p in ("flip", "moved"))
    assert after_flip > 0 and sum(phases.values()) - phases["before"] - after_flip > 0, phases


def mover(router_dsn: str, tmp: Path, tenant: str, to: int, page: int) -> subprocess.Popen[bytes]:
    """`jobctl shards move` in a subprocess, with JOBCTL_DSN the router."""
    env = {**os.environ, "JOBCTL_DSN": router_dsn}
    cmd = [sys.executable, "-m", "jobctl.cli", "shards", "move", "--tenant", tenant, "--to", str(to)]
    out = open(tmp / f"mover{time.monotonic_ns()}.out", "w")  # noqa: SIM115 (the process holds it)
    return subprocess.Popen([*cmd, "--page", str(page)], env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.mark.slow
def test_move_under_load_with_a_killed_mover(cluster: Cluster, tmp_path: Path) -> None:
    cl = cluster
    tenant, queue = "load-" + uuid.uuid4().hex[:6], "q-" + uuid.uuid4().hex[:6]
    cl.router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))
    submitted = backlog(cl, tenant, queue, JOBS)
    held = hold_keys(cl, tenant, queue, "held")
    workers = start_workers(cl.dsns, tmp_path, queue)
    feeder = Submitter(cl.dsns, tenant, queue)
    step = ["move"]
    resenders = [Resender(cl.dsns[d], tenant, queue, list(held), step) for d in ("router", "0")]
    routed = "select count(*) from jobctl_router.job_route where job_id = any(%s)"
    try:
        deadline = time.monotonic() + 20  # the slow jobs run on the source when the move starts
        while cl.one(0, "select count(*) from jobctl._running where tenant_id = %s", (tenant,)) == 0:
            assert time.monotonic() < deadline, workers[0].log[-2000:]
            time.sleep(0.02)
        feeder.start()
        for r in resenders:
            r.start()

        first = mover(cl.dsns["router"], tmp_path, tenant, 1, page=250)
        deadline = time.monotonic() + 30
        while cl.router.execute(routed, (submitted,)).fetchone() < (500,):
            assert first.poll() is None, "the mover ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        first.send_signal(signal.SIGKILL)
        first.wait()
        routed_at_kill = cl.router.execute(routed, (submitted,)).fetchone()
        assert cl.placement(tenant) == (0, 1), "killed mid-copy: still placed on 0, moving to 1"

        rerun = mover(cl.dsns["router"], tmp_path, tenant, 1, page=2000)
        assert rerun.wait(90) == 0
        time.sleep(0.5)
        during = feeder.stop()
        repeats, wrong, keys_off = repeats_seen(cl, tenant, held, resenders)
        wait_all_finished(cl, tenant, workers)
    finally:
        if feeder.is_alive():
            feeder.halt.set()
            feeder.join(10)
        for r in resenders:
            r.halt.set()
        for w in workers:
            w.stop()
    line = sorted(tmp_path.glob("mover*.out"))[-1].read_text().strip()
    all_ids = set(submitted) | set(during)
    seen = ledger(cl.dsns)
    duplicated = {j: n for j, n in seen.items() if n > 1}
    lost = all_ids - set(seen)
    print(
        f"\nshard move under load: {len(all_ids)} jobs ({JOBS} pending, {len(during)} submitted"
        f" during the move);"
        f" mover killed -9 after {routed_at_kill[0] if routed_at_kill else 0} routed; rerun: {line};"
        f" lost {len(lost)}, duplicated {len(duplicated)}; {repeats} repeats of {len(held)} held keys"
        f" ({resenders[0].refused} JC011 sent again through the router, {resenders[1].refused} refused"
        f" straight to the fenced source): {wrong} answered another job or not as a duplicate,"
        f" {keys_off} keys with other than one job"
    )
    assert wrong == 0 and keys_off == 0
    assert resenders[1].refused > 0
    assert not duplicated, list(duplicated.items())[:10]
    assert not lost, sorted(lost)[:10]
    assert set(seen) == all_ids
    assert "(resumed an earlier run)" in line
    assert cl.placement(tenant) == (1, None)
    assert cl.one(
        0, "select finished_at is not null from jobctl._tenant_move where tenant_id = %s", (tenant,)
    )
    with pytest.raises(psycopg.Error) as refused:  # a late submit routed by the old placement
        cl.shards[0].execute("select jobctl.submit_job(%s, %s, '{}')", (tenant, queue))
    assert refused.value.sqlstate == "JC011"


@pytest.mark.slow
@pytest.mark.skipif(ROUNDS == 0, reason="SHARD_MOVE_ROUNDS=n runs it (make shard-move)")
def test_move_figures(cluster: Cluster, tmp_path: Path) -> None:
    """Clean moves back and forth under load: move time, pause window, jobs moved; medians."""
    cl = cluster
    tenant, queue = "bench-" + uuid.uuid4().hex[:6], "q-" + uuid.uuid4().hex[:6]
    cl.router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))
    workers = start_workers(cl.dsns, tmp_path, queue)
    reports: list[shard_move.MoveReport] = []
    all_ids: set[int] = set()
    repeats = wrong = keys_off = refused = 0
    try:
        for r in range(ROUNDS):
            placed = cl.placement(tenant)
            assert placed is not None
            all_ids |= set(backlog(cl, tenant, queue, JOBS))
            held = hold_keys(cl, tenant, queue, f"held{r}")
            feeder = Submitter(cl.dsns, tenant, queue)
            feeder.start()
            step = ["move"]
            resenders = [
                Resender(cl.dsns[d], tenant, queue, list(held), step) for d in ("router", str(placed[0]))
            ]
            for s in resenders:
                s.start()
            time.sleep(0.5)
            reports.append(shard_move.move_tenant(cl.router, tenant, 1 - placed[0], drain_timeout=60))
            time.sleep(0.3)
            all_ids |= set(feeder.stop())
            n, bad, off = repeats_seen(cl, tenant, held, resenders)
            repeats, wrong, keys_off = repeats + n, wrong + bad, keys_off + off
            refused += resenders[1].refused
            print(
                f"\nround {r + 1}: {reports[-1].line()}; {n} repeats of {len(held)} held keys, {bad} answered"
                f" another job or not as a duplicate, {off} keys with other than one job"
            )
            wait_all_finished(cl, tenant, workers)
    finally:
        for w in workers:
            w.stop()
    seen = ledger(cl.dsns)
    lost = len(all_ids - set(seen))
    duplicated = sum(1 for n in seen.values() if n > 1)
    pause = [r.pause_s or 0.0 for r in reports]
    total = [r.total_s for r in reports]
    moved = [r.moved for r in reports]
    print(
        f"\nshard move, {ROUNDS} rounds of a {JOBS}-job backlog under load: jobs moved median"
        f" {statistics.median(moved):.0f}; move median {statistics.median(total):.2f} s"
        f" (min {min(total):.2f}, max {max(total):.2f});"
        f" tenant paused median {statistics.median(pause):.2f} s"
        f" (min {min(pause):.2f}, max {max(pause):.2f}); {len(all_ids)} jobs, lost {lost},"
        f" duplicated {duplicated}; {repeats} repeats of held keys through the router and straight to"
        f" the source ({refused} refused there once fenced): {wrong} answered another job or not as a"
        f" duplicate, {keys_off} keys with other than one job"
    )
    assert lost == 0 and duplicated == 0
    assert wrong == 0 and keys_off == 0
