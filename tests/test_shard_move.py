"""Moving a tenant between shards (jobctl.shard_move, sql/functions/_move_*.sql) with real worker
processes claiming on both shards during the move, a submitter that follows the placement as the
router does, and a kill -9 of the mover in the middle of its copy followed by a rerun.

The shards are databases of the test cluster, migrated and made shards 0 and 1 as the sharding
contract says (ids step by 64, id % 64 = shard); the router database holds the jobctl_router tables
as the contract defines them (the PL/Proxy functions are not needed: workers claim on the shards,
and the submitter routes by placement itself). Effects: each job's handler writes a ledger row in
the transaction that completes it (tests/worker_handlers.py), on the shard it ran on; the ledgers of
both shards together must hold every job exactly once.

SHARD_MOVE_JOBS (default 10000) sets the pending backlog; `make shard-move` runs it with the figures.
"""

from __future__ import annotations

import os
import signal
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
from jobctl import shard_move
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb
from test_worker import LEDGER_DDL, WorkerProcess

Conn = psycopg.Connection[tuple[Any, ...]]

ROUTER_DDL = """
create schema jobctl_router;
create table jobctl_router.shard (shard integer primary key, connstr text not null);
create table jobctl_router.placement (
    tenant_id text primary key,
    shard integer not null references jobctl_router.shard,
    moving_to integer null references jobctl_router.shard,
    updated_at timestamptz not null default now()
);
create table jobctl_router.job_route (
    job_id bigint primary key,
    shard integer not null references jobctl_router.shard
);
"""
QUICK_RETRY = {"strategy": "fixed", "base": "0.5 seconds", "max": "0.5 seconds", "jitter": False}
JOBS = int(os.environ.get("SHARD_MOVE_JOBS", "10000"))


def _dsn_for(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


@pytest.fixture
def shard_set(dsn: str) -> Iterator[dict[str, str]]:
    """router, shard0, shard1: DSNs of three new databases of the test cluster."""
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
            c.execute(ROUTER_DDL)
            for shard in (0, 1):
                c.execute("insert into jobctl_router.shard values (%s, %s)", (shard, dsns[str(shard)]))
        yield dsns
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            for n in names.values():
                c.execute(f'drop database if exists "{n}" with (force)')


def routed_submit(router: Conn, shards: dict[int, Conn], jobs: list[dict[str, Any]]) -> list[int]:
    """Submit as the router does: on the tenant's placed shard, again when that shard says the tenant
    moved (JC011: the placement flipped between the lookup and the submit)."""
    tenant = jobs[0]["tenant_id"]
    for _ in range(50):
        row = router.execute(
            "select shard from jobctl_router.placement where tenant_id = %s", (tenant,)
        ).fetchone()
        assert row is not None
        try:
            rows = (
                shards[row[0]].execute("select job_id from jobctl.submit_jobs(%s)", (Jsonb(jobs),)).fetchall()
            )
            return [r[0] for r in rows]
        except psycopg.Error as e:
            if e.sqlstate != "JC011":
                raise
    pytest.fail("the submit kept meeting a moved tenant")


def ledger(dsns: dict[str, str]) -> Counter[int]:
    seen: Counter[int] = Counter()
    for shard in ("0", "1"):
        with psycopg.connect(dsns[shard]) as c:
            seen.update(r[0] for r in c.execute("select job_id from public.worker_ledger"))
    return seen


def unfinished(dsns: dict[str, str], tenant: str) -> dict[str, int]:
    out = {}
    for shard in ("0", "1"):
        with psycopg.connect(dsns[shard]) as c:
            row = c.execute(
                "select count(*) from jobctl.job where tenant_id = %s and state not in ('completed', 'dead', 'cancelled')",
                (tenant,),
            ).fetchone()
            assert row is not None
            out[shard] = int(row[0])
    return out


def mover(router_dsn: str, tmp: Path, tenant: str, page: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "JOBCTL_DSN": router_dsn}
    cmd = [
        sys.executable,
        "-m",
        "jobctl.cli",
        "shards",
        "move",
        "--tenant",
        tenant,
        "--to",
        "1",
        "--page",
        str(page),
    ]
    out = open(tmp / f"mover{time.monotonic_ns()}.out", "w")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.mark.slow
def test_move_under_load_with_a_killed_mover(shard_set: dict[str, str], tmp_path: Path) -> None:
    tenant, queue = "mover-" + uuid.uuid4().hex[:6], "q"
    router = psycopg.connect(shard_set["router"], autocommit=True)
    shards = {n: psycopg.connect(shard_set[str(n)], autocommit=True) for n in (0, 1)}
    router.execute("insert into jobctl_router.placement (tenant_id, shard) values (%s, 0)", (tenant,))

    def job(**payload: Any) -> dict[str, Any]:
        return {"tenant_id": tenant, "queue": queue, "payload": payload}

    submitted: list[int] = []
    # the backlog: pending jobs, delayed ones (due during the move), ones that fail once (retrying
    # with a backoff), slow ones (running when the move starts), and dedup-keyed ones
    submitted += routed_submit(router, shards, [job(i=i) for i in range(JOBS)])
    delayed = [{**job(d=i), "run_at": "2000-01-01"} for i in range(200)]
    for d in delayed:
        d.pop("run_at")
    rows = (
        shards[0]
        .execute(
            "select job_id from jobctl.submit_jobs((select jsonb_agg(j || jsonb_build_object('run_at', now() + interval '3 seconds'))"
            " from jsonb_array_elements(%s) as j))",
            (Jsonb(delayed),),
        )
        .fetchall()
    )
    submitted += [r[0] for r in rows]
    submitted += routed_submit(
        router,
        shards,
        [{**job(f=i, fail_times=1), "backoff": QUICK_RETRY, "max_attempts": 3} for i in range(100)],
    )
    submitted += routed_submit(router, shards, [job(s=i, sleep=2) for i in range(20)])
    submitted += routed_submit(router, shards, [{**job(k=i), "dedup_key": f"key-{i}"} for i in range(50)])

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
    workers = [
        WorkerProcess(shard_set[str(n)], tmp_path, [*args, "--concurrency", "20", "--worker-id", f"w{n}"])
        for n in (0, 1)
    ]
    stop = threading.Event()
    during: list[int] = []
    errors: list[BaseException] = []

    def submitter() -> None:
        r = psycopg.connect(shard_set["router"], autocommit=True)
        s = {n: psycopg.connect(shard_set[str(n)], autocommit=True) for n in (0, 1)}
        try:
            i = 0
            while not stop.is_set():
                during.extend(routed_submit(r, s, [job(live=i)]))
                i += 1
                time.sleep(0.01)
        except BaseException as e:  # noqa: BLE001 (reported by the test)
            errors.append(e)
        finally:
            r.close()
            for c in s.values():
                c.close()

    feeder = threading.Thread(target=submitter)
    try:
        # the slow jobs are running on the source when the move starts
        deadline = time.monotonic() + 20
        while shards[0].execute(
            "select count(*) from jobctl._running where tenant_id = %s", (tenant,)
        ).fetchone() == (0,):
            assert time.monotonic() < deadline, workers[0].log[-2000:]
            time.sleep(0.02)
        feeder.start()

        # first run: kill -9 once it has routed some pages
        first = mover(shard_set["router"], tmp_path, tenant, page=500)
        deadline = time.monotonic() + 30
        while router.execute("select count(*) from jobctl_router.job_route").fetchone() < (1000,):
            assert first.poll() is None, "the mover ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        first.send_signal(signal.SIGKILL)
        first.wait()
        routed_at_kill = router.execute("select count(*) from jobctl_router.job_route").fetchone()
        placement_at_kill = router.execute(
            "select shard, moving_to from jobctl_router.placement where tenant_id = %s", (tenant,)
        ).fetchone()
        assert placement_at_kill == (0, 1), "killed mid-copy: still placed on 0, moving to 1"

        # the rerun finishes the same move
        started = time.monotonic()
        report = shard_move.move_tenant(router, tenant, 1, page=2000, drain_timeout=60)
        rerun_s = time.monotonic() - started
        time.sleep(0.5)
        stop.set()
        feeder.join(10)
        assert not errors, errors

        # every job ends, completed, on one shard or the other
        deadline = time.monotonic() + 120
        while any(unfinished(shard_set, tenant).values()):
            assert time.monotonic() < deadline, (unfinished(shard_set, tenant), workers[1].log[-3000:])
            time.sleep(0.2)
    finally:
        stop.set()
        if feeder.is_alive():
            feeder.join(10)
        for w in workers:
            w.stop()

    all_ids = set(submitted) | set(during)
    seen = ledger(shard_set)
    duplicated = {j: n for j, n in seen.items() if n > 1}
    lost = all_ids - set(seen)
    print(
        f"\nshard move: {len(all_ids)} jobs ({JOBS} pending backlog, {len(during)} submitted during the move);"
        f" killed after {routed_at_kill[0] if routed_at_kill else 0} routed; rerun: {report.line()} ({rerun_s:.2f} s);"
        f" lost {len(lost)}, duplicated {len(duplicated)}"
    )
    assert not duplicated, list(duplicated.items())[:10]
    assert not lost, sorted(lost)[:10]
    assert set(seen) == all_ids
    assert report.resumed and report.source == 0
    assert router.execute(
        "select shard, moving_to from jobctl_router.placement where tenant_id = %s", (tenant,)
    ).fetchone() == (1, None)
    with psycopg.connect(shard_set["0"]) as c:
        assert c.execute(
            "select moved_to, paused from jobctl.tenant where tenant_id = %s", (tenant,)
        ).fetchone() == (1, True)
        assert c.execute(
            "select finished_at is not null from jobctl._tenant_move where tenant_id = %s", (tenant,)
        ).fetchone() == (True,)
        # a late submit routed by the old placement is refused, not stranded
        with pytest.raises(psycopg.Error) as refused:
            c.execute("select jobctl.submit_job(%s, %s, '{}')", (tenant, queue))
        assert refused.value.sqlstate == "JC011"
    with psycopg.connect(shard_set["1"]) as c:
        assert c.execute(
            "select paused, moved_to from jobctl.tenant where tenant_id = %s", (tenant,)
        ).fetchone() == (
            False,
            None,
        )
    # a third run finds nothing to do
    assert shard_move.move_tenant(router, tenant, 1).source is None
    router.close()
    for c in shards.values():
        c.close()
