"""Correctness under concurrency, with real sessions and real processes."""

from __future__ import annotations

import collections
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

Conn = psycopg.Connection[tuple[object, ...]]


def submit_many(conn: Conn, tenant: str, queue: str, n: int, **extra: object) -> list[int]:
    jobs = [{"tenant_id": tenant, "queue": queue, "payload": {"i": i}, **extra} for i in range(n)]
    ids: list[int] = []
    for start in range(0, n, 5000):
        rows = conn.execute(
            "select job_id from jobctl.submit_jobs(%s::jsonb)", (json.dumps(jobs[start : start + 5000]),)
        ).fetchall()
        ids += [int(r[0]) for r in rows]
    return ids


def load(path: str) -> Any:
    with open(path) as f:
        return json.load(f)


def run_parallel(target: Callable[..., None], args_list: list[tuple[object, ...]]) -> None:
    procs = [mp.Process(target=target, args=args) for args in args_list]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"


def _claimer(dsn: str, queue: str, out: str, barrier: object, batch: int) -> None:
    claimed: list[tuple[int, int]] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        empty = 0
        while empty < 3:
            rows = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job(%s, array[%s], %s)",
                (f"w{os.getpid()}", queue, batch),
            ).fetchall()
            if not rows:
                empty += 1
                time.sleep(0.05)
                continue
            empty = 0
            claimed += [(int(r[0]), int(r[1])) for r in rows]
            c.execute("select jobctl.complete_jobs(%s, %s)", ([r[0] for r in rows], [r[1] for r in rows]))
    with open(out, "w") as f:
        json.dump(claimed, f)


def test_eight_processes_claim_twenty_thousand_jobs_exactly_once(conn: Conn, name: str, tmp_path) -> None:
    queue = name + "_q"
    ids = set()
    for t in range(4):  # several tenants, so the fair claim spreads work over lanes
        ids |= set(submit_many(conn, f"{name}_t{t}", queue, 5000))
    assert len(ids) == 20000
    barrier = mp.Barrier(8)
    outs = [str(tmp_path / f"claims{i}.json") for i in range(8)]
    run_parallel(_claimer, [(conn.info.dsn, queue, out, barrier, 7) for out in outs])

    per_worker = [load(o) for o in outs]
    claimed = [job for w in per_worker for job, _ in w]
    dupes = [j for j, n in collections.Counter(claimed).items() if n > 1]
    assert dupes == [], f"{len(dupes)} jobs claimed twice"
    assert set(claimed) == ids
    assert all(len(w) > 0 for w in per_worker), "every process got work"
    states = dict(
        conn.execute(
            "select state, count(*) from jobctl.job where queue = %s group by state", (queue,)
        ).fetchall()
    )
    assert states == {"completed": 20000}


def _submitter(dsn: str, tenant: str, barrier: object, out: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        row = c.execute(
            "select job_id, duplicate from jobctl.submit_job(%s, 'q', %s::jsonb, dedup_key => 'same')",
            (tenant, json.dumps({"pid": os.getpid()})),
        ).fetchone()
    with open(out, "w") as f:
        json.dump(row, f)


def test_concurrent_submits_with_one_dedup_key_make_one_job(conn: Conn, name: str, tmp_path) -> None:
    for round_ in range(5):
        tenant = f"{name}_{round_}"
        barrier = mp.Barrier(8)
        outs = [str(tmp_path / f"s{round_}_{i}.json") for i in range(8)]
        run_parallel(_submitter, [(conn.info.dsn, tenant, barrier, o) for o in outs])
        results = [load(o) for o in outs]
        assert len({r[0] for r in results}) == 1, results
        assert sorted(r[1] for r in results) == [False] + [True] * 7
        count = conn.execute("select count(*) from jobctl.job where tenant_id = %s", (tenant,)).fetchone()
        assert count == (1,)


def test_zombie_completion_is_fenced_and_its_writes_roll_back(conn: Conn, name: str, dsn: str) -> None:
    queue = name + "_q"
    conn.execute(f"create table if not exists public.{name}_ledger (job_id bigint, worker text)")
    conn.execute("select jobctl.submit_job(%s, %s, '{}')", (name, queue))
    zombie = psycopg.connect(dsn)
    healthy = psycopg.connect(dsn, autocommit=True)
    try:
        job_id, epoch1 = zombie.execute(
            "select job_id, lease_epoch from jobctl.claim_job('zombie', array[%s], 1, '1 second')", (queue,)
        ).fetchone()
        zombie.commit()
        # The zombie starts its transaction and does its own writes, then stalls past its lease.
        zombie.execute(f"insert into public.{name}_ledger values (%s, 'zombie')", (job_id,))
        time.sleep(1.2)
        healthy.execute("select jobctl.reap_expired_leases()")  # or any claimer's housekeeping reaps it
        row = healthy.execute(
            "select job_id, lease_epoch from jobctl.claim_job('healthy', array[%s])", (queue,)
        ).fetchone()
        assert row is not None and row[0] == job_id and row[1] > epoch1
        with healthy.transaction():
            healthy.execute(f"insert into public.{name}_ledger values (%s, 'healthy')", (job_id,))
            assert healthy.execute("select jobctl.complete_job(%s, %s)", row).fetchone() == (True,)
        # The zombie wakes up: heartbeat says lost, completion is fenced, so it rolls back its writes.
        assert zombie.execute("select jobctl.heartbeat(%s, %s)", (job_id, epoch1)).fetchone() == ("lost",)
        assert zombie.execute("select jobctl.complete_job(%s, %s)", (job_id, epoch1)).fetchone() == (False,)
        zombie.rollback()
        ledger = conn.execute(f"select worker from public.{name}_ledger").fetchall()
        assert ledger == [("healthy",)]
        assert conn.execute("select state, attempt from jobctl.get_job(%s)", (job_id,)).fetchone() == (
            "completed",
            2,
        )
    finally:
        zombie.close()
        healthy.close()
        conn.execute(f"drop table if exists public.{name}_ledger")


HOLDER = r"""
import sys, time, psycopg
dsn, queue = sys.argv[1], sys.argv[2]
with psycopg.connect(dsn, autocommit=True) as c:
    rows = c.execute("select job_id from jobctl.claim_job('doomed', array[%s], 50)", (queue,)).fetchall()
    print(len(rows), flush=True)
    time.sleep(600)
"""


def test_jobs_of_a_killed_worker_run_again_within_sixty_seconds(conn: Conn, name: str, dsn: str) -> None:
    queue = name + "_q"
    ids = set(submit_many(conn, name, queue, 50))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, dsn, queue], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "50"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    killed_at = time.monotonic()
    seen: set[int] = set()
    while seen != ids and time.monotonic() - killed_at < 75:
        conn.execute("select jobctl.tick(false)")  # as every worker does, every 0.25 s: the reaper
        rows = conn.execute(
            "select job_id, lease_epoch from jobctl.claim_job('rescuer', array[%s], 50)", (queue,)
        ).fetchall()
        seen |= {int(r[0]) for r in rows}
        if rows:
            conn.execute("select jobctl.complete_jobs(%s, %s)", ([r[0] for r in rows], [r[1] for r in rows]))
        time.sleep(0.5)
    elapsed = time.monotonic() - killed_at
    assert seen == ids, f"{len(ids - seen)} jobs were not claimable again after {elapsed:.0f} s"
    assert elapsed < 60
    attempts = conn.execute(
        "select min(attempt), max(attempt) from jobctl.job where queue = %s", (queue,)
    ).fetchone()
    assert attempts == (2, 2)


def _fair_claimer(dsn: str, queue: str, barrier: object, n_claims: int, out: str) -> None:
    got: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        while len(got) < n_claims:
            rows = c.execute(
                "select tenant_id, job_id, lease_epoch from jobctl.claim_job('fair', array[%s], 5)", (queue,)
            ).fetchall()
            got += [str(r[0]) for r in rows]
            c.execute("select jobctl.complete_jobs(%s, %s)", ([r[1] for r in rows], [r[2] for r in rows]))
    with open(out, "w") as f:
        json.dump(got, f)


def test_weighted_fairness_three_to_two_to_one(conn: Conn, name: str, tmp_path) -> None:
    queue = name + "_q"
    weights = {f"{name}_a": 3, f"{name}_b": 2, f"{name}_c": 1}
    for tenant, w in weights.items():
        conn.execute("select jobctl.put_tenant(%s, weight => %s)", (tenant, w))
        submit_many(conn, tenant, queue, 4000)  # every tenant stays saturated for 6,000 claims
    barrier = mp.Barrier(4)
    outs = [str(tmp_path / f"f{i}.json") for i in range(4)]
    run_parallel(_fair_claimer, [(conn.info.dsn, queue, barrier, 1500, o) for o in outs])
    claims = [t for o in outs for t in load(o)]
    counts = collections.Counter(claims)
    total = sum(counts.values())
    assert total >= 6000
    for tenant, w in weights.items():
        share, want = counts[tenant] / total, w / 6
        assert abs(share - want) <= 0.1 * want, f"{tenant}: share {share:.3f}, want {want:.3f} ± 10%"


def _greedy_claimer(dsn: str, queue: str, barrier: object, out: str) -> None:
    held = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        for _ in range(30):
            claim = "select job_id from jobctl.claim_job('greedy', array[%s], 3)"
            held += len(c.execute(claim, (queue,)).fetchall())
    with open(out, "w") as f:
        json.dump(held, f)


def test_max_running_holds_under_concurrent_claimers(conn: Conn, name: str, tmp_path) -> None:
    queue = name + "_q"
    conn.execute("select jobctl.put_tenant(%s, max_running => 4)", (name,))
    submit_many(conn, name, queue, 200)
    barrier = mp.Barrier(8)
    outs = [str(tmp_path / f"g{i}.json") for i in range(8)]
    run_parallel(_greedy_claimer, [(conn.info.dsn, queue, barrier, o) for o in outs])
    assert sum(load(o) for o in outs) == 4
    running = conn.execute("select count(*) from jobctl._running where tenant_id = %s", (name,)).fetchone()
    assert running == (4,)


def _steady_claimer(dsn: str, queue: str, seconds: float, barrier: object, out: str) -> None:
    """Claims (5 at a time) and completes for `seconds`, and ticks every 0.25 s as a worker does;
    writes [job_id, epoch claimed] pairs."""
    claimed = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        end = time.monotonic() + seconds
        tick_at = time.monotonic()
        while time.monotonic() < end:
            if time.monotonic() >= tick_at:
                c.execute("select jobctl.tick(false)")
                tick_at += 0.25
            rows = c.execute(
                "select job_id, lease_epoch from jobctl.claim_job('w', %s, 5)", ([queue],)
            ).fetchall()
            if not rows:
                time.sleep(0.002)
                continue
            claimed += [(int(r[0]), time.time()) for r in rows]
            c.execute("select jobctl.complete_jobs(%s, %s)", ([r[0] for r in rows], [r[1] for r in rows]))
    with open(out, "w") as f:
        json.dump(claimed, f)


def _producer(
    dsn: str, tenant: str, queue: str, seconds: float, hold: float, barrier: object, out: str
) -> None:
    """Submits a job every 5 ms (hold 0), or every 100 ms in a transaction that stays open `hold`
    seconds after the submit (its run_at, the transaction's start, is that much older than its
    commit); writes [job_id, epoch committed] pairs."""
    made = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with c.transaction():
                row = c.execute(
                    "select job_id from jobctl.submit_job(%s, %s, '{}')", (tenant, queue)
                ).fetchone()
                time.sleep(hold)
            assert row is not None
            made.append((int(row[0]), time.time()))
            time.sleep(0.005 if not hold else 0.1)
    with open(out, "w") as f:
        json.dump(made, f)


@pytest.mark.parametrize("held", [False, True], ids=["horizon free", "horizon held"])
def test_jobs_committed_late_are_claimed_at_once_with_the_horizon_free_or_held(
    conn: Conn, dsn: str, name: str, held: bool, tmp_path
) -> None:
    """A job whose transaction began 300 ms before it committed (its run_at that much older) among
    jobs submitted every 5 ms and claimed at once: every claim starts at its lanes' heads, so such a
    job is found at once, also while a REPEATABLE READ transaction holds the xmin horizon back (and
    tick rotates the slots). Nothing is claimed twice or left behind."""
    queue, tenant = name + "_q", name + "_t"
    with psycopg.connect(dsn) as holder:
        if held:
            holder.execute("set transaction isolation level repeatable read")
            holder.execute("select 1")
            time.sleep(1.1)  # tick sees the horizon held once it is a second old
        barrier = mp.Barrier(5)
        outs = [str(tmp_path / f"claims{i}.json") for i in range(3)]
        fast, slow = str(tmp_path / "fast.json"), str(tmp_path / "slow.json")
        procs = [mp.Process(target=_steady_claimer, args=(dsn, queue, 6.0, barrier, o)) for o in outs]
        procs += [
            mp.Process(target=_producer, args=(dsn, tenant, queue, 4.0, 0.0, barrier, fast)),
            mp.Process(target=_producer, args=(dsn, tenant, queue, 4.0, 0.3, barrier, slow)),
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        holder.rollback()
    claimed = [(job, at) for o in outs for job, at in load(o)]
    ids = [job for job, _ in claimed]
    assert len(ids) == len(set(ids)), "a job was claimed twice"
    made = {job: at for job, at in load(fast) + load(slow)}
    assert set(ids) == set(made), f"{len(set(made) - set(ids))} jobs never claimed"
    late = dict(load(slow))
    waits = sorted(at - late[job] for job, at in claimed if job in late)
    assert len(waits) >= 8
    assert waits[-1] < 1.0, f"a job committed late waited {waits[-1]:.2f} s (all: {waits})"
    assert waits[len(waits) // 2] < 0.1, f"late jobs waited: {waits}"


def _share_lanes(conn: Conn, queue: str, tenant: str, *, lanes: list[tuple[str, str]], fresh_for: str) -> str:
    """Create `tenant` and share a lane list for `queue`: `lanes` (queue, tenant), each of width 1,
    fresh for the interval `fresh_for` (negative: stale), listed when it became fresh or just now.
    Returns the list's key."""
    conn.execute("select jobctl.put_tenant(%s)", (tenant,))
    row = conn.execute("select md5(%s::text[]::text)", ([queue],)).fetchone()
    assert row is not None
    key = str(row[0])  # as jobctl._lanes keys a filter
    conn.execute(
        "insert into jobctl._lane_cache"
        " (queues_key, fresh_until, queues, tenants, limited, lows, total, listed_at, generation)"
        " select %(key)s, clock_timestamp() + %(fresh)s::interval, %(queues)s, %(tenants)s,"
        " array_fill(false, array[%(n)s]), array(select generate_series(0, %(n)s - 1)::float8), %(n)s,"
        " least(clock_timestamp(), clock_timestamp() + %(fresh)s::interval), g.generation"
        " from jobctl._lane_generation as g",
        {
            "key": key,
            "fresh": fresh_for,
            "queues": [q for q, _ in lanes],
            "tenants": [t for _, t in lanes],
            "n": len(lanes),
        },
    )
    return key


def test_a_claim_that_got_nothing_lists_afresh_even_while_another_shares_a_listing(
    conn: Conn, dsn: str, name: str
) -> None:
    """A claim that got nothing from the shared list lists the lanes itself, also while another
    claimer holds the refresh lock (sharing its own listing until its claim commits): it takes the
    job at once, and leaves the sharing to the lock's holder."""
    queue, tenant = name + "_q", name + "_t"
    key = _share_lanes(conn, queue, tenant, lanes=[], fresh_for="1 hour")  # empty, fresh, listed just now
    conn.execute("select jobctl.submit_job(%s, %s, '{}')", (tenant, queue))
    claim = "select count(*) from jobctl.claim_job('w', %s, 10)"
    rows = "select count(*) from jobctl._lane_cache where queues_key = %s"
    with psycopg.connect(dsn) as lister:
        lister.execute("select jobctl._try_lock('lanes', %s)", (key,))
        assert conn.execute(claim, ([queue],)).fetchone() == (1,)
        assert conn.execute(rows, (key,)).fetchone() == (1,), "the lock's holder shares, not this claim"
        lister.rollback()


def test_a_stale_shared_list_is_refreshed_by_one_claimer_while_the_others_claim_from_it(
    conn: Conn, dsn: str, name: str
) -> None:
    """While one claimer holds the refresh lock (listing), another finds the shared list stale and
    claims from it as it is, listing nothing; once the lock is free, a claim lists and shares."""
    queue, tenant = name + "_q", name + "_t"
    key = _share_lanes(conn, queue, tenant, lanes=[(queue, tenant)], fresh_for="-100 milliseconds")  # stale
    conn.execute("select jobctl.submit_job(%s, %s, '{}') from generate_series(1, 2)", (tenant, queue))
    claim = "select count(*) from jobctl.claim_job('w', %s, 1)"
    cached = "select l.cached from jobctl._lanes(%s, %s) as l"
    rows = "select count(*) from jobctl._lane_cache where queues_key = %s"
    with psycopg.connect(dsn) as lister:
        lister.execute("select jobctl._try_lock('lanes', %s)", (key,))
        assert conn.execute(cached, ([queue], False)).fetchone() == (True,), "the stale list, as it is"
        assert conn.execute(cached, ([queue], True)).fetchone() == (False,), "asked for afresh: listed"
        assert conn.execute(claim, ([queue],)).fetchone() == (1,)
        assert conn.execute(rows, (key,)).fetchone() == (1,), "the lock's holder shares, not these calls"
        # stale for over a second: listed, lock or no lock (a held lock cannot freeze the list)
        conn.execute(
            "update jobctl._lane_cache set fresh_until = fresh_until - interval '1 second'"
            " where queues_key = %s",
            (key,),
        )
        assert conn.execute(cached, ([queue], False)).fetchone() == (False,), "too stale to use"
        lister.rollback()
    assert conn.execute(cached, ([queue], False)).fetchone() == (False,)
    assert conn.execute(claim, ([queue],)).fetchone() == (1,)
    assert conn.execute(rows, (key,)).fetchone() == (2,), "with the lock free, a claim lists and shares"
