"""Recurring schedules under concurrency: racing expanders, expansion from the claim path, and
schedules in time zones expanded by another session."""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest
from croniter import croniter
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[tuple[object, ...]]
EXPANDERS = 4
SCHEDULES = 40
PERIOD = 5  # seconds


@pytest.fixture
def drop_schedules(conn: Conn, name: str) -> Iterator[None]:
    """Schedules keep firing: drop this test's at the end (its queue is the test's name)."""
    yield
    conn.execute("delete from jobctl.schedule where queue = %s", (name,))


def _expander(dsn: str, barrier: object, seconds: float) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()  # type: ignore[attr-defined]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            c.execute("select jobctl.expand_schedules()")


@pytest.mark.usefixtures("drop_schedules")
def test_racing_expanders_enqueue_each_fire_time_once(conn: Conn, dsn: str, name: str) -> None:
    # every schedule starts 60 s back: twelve on-time fire times each are due at once, then more
    # come while four sessions expand in a tight loop for six seconds
    start = conn.execute(
        "select to_timestamp(floor(extract(epoch from now()) / %s) * %s) - interval '60 seconds'",
        (PERIOD, PERIOD),
    ).fetchone()
    assert start is not None
    for i in range(SCHEDULES):
        conn.execute(
            "select jobctl.put_schedule(%s, %s, %s, %s, %s)",
            (f"{name}_{i % 4}", f"s{i}", f"@every {PERIOD} seconds", name, Jsonb({"s": i})),
        )
    conn.execute("update jobctl.schedule set next_fire_at = %s where queue = %s", (start[0], name))
    barrier = mp.get_context("fork").Barrier(EXPANDERS)
    procs = [
        mp.get_context("fork").Process(target=_expander, args=(dsn, barrier, 6.0)) for _ in range(EXPANDERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    rows = conn.execute(
        """select s.name, s.next_fire_at, count(j.job_id), count(distinct j.run_at),
               min(j.run_at), max(j.run_at)
           from jobctl.schedule as s
           left join jobctl.job as j on j.tenant_id = s.tenant_id and j.queue = s.queue
               and j.run_at >= %s and j.payload = s.payload
           where s.queue = %s
           group by s.tenant_id, s.name, s.next_fire_at""",
        (start[0], name),
    ).fetchall()
    assert len(rows) == SCHEDULES
    total = 0
    for sched, next_fire, jobs, distinct, first, last in rows:
        assert jobs == distinct, f"{sched}: a fire time was enqueued twice"
        assert first == start[0], f"{sched}: the first on-time fire time is missing"
        expected = int((next_fire - start[0]) / timedelta(seconds=PERIOD))  # type: ignore[operator]
        assert jobs == expected, f"{sched}: {jobs} runs for {expected} fire times"
        assert last == next_fire - timedelta(seconds=PERIOD)  # type: ignore[operator]
        total += jobs
    assert total >= SCHEDULES * 13


@pytest.mark.usefixtures("drop_schedules")
def test_a_ticking_worker_expands_due_schedules_within_a_second(conn: Conn, name: str) -> None:
    """A worker calls tick(false) every 0.25 s (here: before each claim, every 50 ms)."""
    conn.execute("select jobctl.put_schedule(%s, 'tick', '@every 1 second', %s, '{\"s\": 1}')", (name, name))
    claimed: dict[int, datetime] = {}  # job id -> when its claim ended
    end = time.monotonic() + 4
    while time.monotonic() < end:
        conn.execute("select jobctl.tick(false)")
        for (job_id,) in conn.execute("select job_id from jobctl.claim_job('w', array[%s], 10)", (name,)):
            claimed[int(job_id)] = datetime.now(UTC)  # type: ignore[call-overload]
        time.sleep(0.05)
    # (a claim's own statement cannot see the job rows it created: read run_at afterwards)
    seen = conn.execute(
        "select j.job_id, j.run_at from jobctl.job as j where j.job_id = any(%s)", (list(claimed),)
    ).fetchall()
    assert len(seen) >= 3, "ticks should have expanded the schedule about every second"
    late = [(claimed[job_id] - fire).total_seconds() for job_id, fire in seen]  # type: ignore[index, operator]
    assert max(late) < 1.5, f"a run was claimed {max(late):.2f} s after its fire time"


ZONED = [
    ("0 9 * * *", "America/New_York"),
    ("30 2 * * 1-5", "Europe/Berlin"),
    ("15 */6 * * *", "Asia/Kolkata"),
    ("45 23 * * *", "Australia/Adelaide"),
]


@pytest.mark.usefixtures("drop_schedules")
def test_zoned_schedules_after_downtime_enqueue_croniters_fire_times_and_list_them_as_runs(
    conn: Conn, dsn: str, name: str
) -> None:
    """Four schedules in four zones, down for ten days, expanded by another session: their runs
    (schedule_runs) are consecutive fire times of croniter in the zone (the oracle), the latest
    catch_up missed ones, and each job records its schedule and fire time as its run_at."""
    for i, (cron, zone) in enumerate(ZONED):
        conn.execute(
            "select jobctl.put_schedule(%s, %s, %s, %s, '{}', catch_up => 5, time_zone => %s)",
            (name, f"s{i}", cron, name, zone),
        )
    conn.execute(
        "update jobctl.schedule set next_fire_at = now() - interval '10 days' where tenant_id = %s", (name,)
    )
    row = conn.execute("select now()").fetchone()
    assert row is not None
    before: datetime = row[0]  # type: ignore[assignment]
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("select jobctl.expand_schedules()")
    for i, (cron, zone) in enumerate(ZONED):
        runs = conn.execute(
            "select r.fire_time, j.run_at, j.schedule_name from jobctl.schedule_runs(%s, %s) as r"
            " join jobctl.job as j on j.job_id = r.job_id order by r.job_id",
            (name, f"s{i}"),
        ).fetchall()
        fires: list[datetime] = [r[0] for r in runs]  # type: ignore[misc]
        assert len(fires) >= 5, (cron, zone, runs)
        assert all(run_at == fire and sched == f"s{i}" for fire, run_at, sched in runs)
        for earlier, later in zip(fires, fires[1:], strict=False):
            assert croniter(cron, earlier.astimezone(ZoneInfo(zone))).get_next(datetime) == later, (
                cron,
                zone,
            )
        assert croniter(cron, fires[-1].astimezone(ZoneInfo(zone))).get_next(datetime) > before, (cron, zone)
