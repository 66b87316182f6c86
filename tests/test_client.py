"""jobctl.Client and jobctl.AsyncClient on the real database: each call, its typed results, its errors
(sqlstate, field, detail, hint), and enqueue inside the caller's own transaction."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import jobctl
import psycopg
import pytest
from jobctl import (
    AsyncClient,
    Client,
    HistoryEntry,
    JobInfo,
    JobSpec,
    Schedule,
    ScheduleRun,
    Submitted,
    Tenant,
    errors,
)
from jobctl.client import (
    ApiToken,
    ClaimMetrics,
    ConcurrencyLimit,
    HealthCheck,
    Queue,
    Stats,
    TenantGrant,
)

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def client(dsn: str) -> Iterator[Client]:
    with Client(dsn) as c:
        yield c


def count_jobs(conn: Conn, tenant: str) -> int:
    row = conn.execute("select count(*) from jobctl.list_jobs(%s)", (tenant,)).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_submit_with_every_option_and_read_it_back(client: Client, name: str) -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    made = client.submit(
        name,
        "email",
        {"to": "a@example.com"},
        priority=5,
        run_at=at,
        dedup_key="welcome-42",
        max_attempts=4,
        backoff={"strategy": "fixed", "base": "5 seconds"},
        timeout=timedelta(minutes=2),
        subject_key="user-42",
        concurrency_key="smtp",
    )
    assert isinstance(made, Submitted) and made.duplicate is False
    assert client.submit(name, "email", {}, dedup_key="welcome-42") == Submitted(made.job_id, True)

    job = client.get_job(made.job_id)
    assert isinstance(job, JobInfo)
    assert (job.tenant_id, job.queue, job.state, job.priority, job.payload) == (
        name,
        "email",
        "pending",
        5,
        {"to": "a@example.com"},
    )
    assert (job.run_at, job.max_attempts, job.timeout, job.dedup_key) == (
        at,
        4,
        timedelta(minutes=2),
        "welcome-42",
    )
    assert (job.backoff["strategy"], job.concurrency_key, job.attempt) == ("fixed", "smtp", 0)
    with pytest.raises(AttributeError):
        job.state = "running"  # type: ignore[misc]  # frozen

    plain = client.submit(name, "email", {"n": 1}, timeout="5 minutes")
    assert client.get_job(plain.job_id).timeout == timedelta(minutes=5)  # type: ignore[union-attr]
    assert client.get_job(2**63 - 1) is None


def test_delay_is_counted_by_the_database_clock(client: Client, name: str, conn: Conn) -> None:
    row = conn.execute("select now()").fetchone()
    assert row is not None
    before = row[0]
    assert isinstance(before, datetime)
    job = client.get_job(client.submit(name, "q", {}, delay=timedelta(hours=1)).job_id)
    assert job is not None and timedelta(minutes=59) < job.run_at - before < timedelta(minutes=61)
    seconds = client.get_job(client.submit(name, "q", {}, delay=90).job_id)
    assert seconds is not None and timedelta(seconds=80) < seconds.run_at - before < timedelta(seconds=100)
    with pytest.raises(errors.InvalidInput, match="not both"):
        client.submit(name, "q", {}, delay=5, run_at=datetime.now(UTC))


def test_submit_many_list_history_cancel_retry(client: Client, name: str) -> None:
    made = client.submit_many(
        [
            JobSpec(name, "bulk", {"i": 0}, priority=1),
            {"tenant_id": name, "queue": "bulk", "payload": {"i": 1}},
        ]
    )
    assert [m.duplicate for m in made] == [False, False]
    ids = [m.job_id for m in made]

    listed = client.list_jobs(name)
    assert [j.job_id for j in listed] == ids[::-1] and all(isinstance(j, JobInfo) for j in listed)
    assert [j.job_id for j in client.list_jobs(name, before_id=ids[1], max_rows=5)] == [ids[0]]
    assert client.list_jobs(name, state="dead") == [] and client.list_jobs(name, queue="other") == []

    assert client.cancel_job(ids[0]) == "cancelled"
    assert client.retry_job(ids[0]) == "pending"
    history = client.job_history(ids[0])
    assert [h.event for h in history] == ["submitted", "cancelled", "retried"]
    assert isinstance(history[0], HistoryEntry) and history[0].at.tzinfo is not None
    assert client.job_history(2**63 - 1) == []


def test_errors_carry_sqlstate_field_detail_and_hint(client: Client, name: str, conn: Conn) -> None:
    with pytest.raises(errors.InvalidInput) as bad:
        client.submit(name, "q", {}, priority=999)
    e = bad.value
    assert (e.sqlstate, e.field, e.detail, e.hint) == (
        "JC001",
        "priority",
        "field: priority",
        "Nothing was submitted.",
    )
    assert str(e).startswith("priority must be an integer from -100 to 100")
    assert isinstance(e.__cause__, psycopg.Error)

    with pytest.raises(errors.InvalidInput) as batch:  # which job of a batch: index
        client.submit_many([JobSpec(name, "q", {}), JobSpec(name, "q", {}, max_attempts=0)])
    assert (batch.value.index, batch.value.field) == (1, "max_attempts")

    with pytest.raises(errors.InvalidInput) as weight:
        client.put_tenant(name, weight=0)
    assert weight.value.field == "weight" and "1..10000" in (weight.value.hint or "")

    client.put_tenant(name, max_pending=0)
    with pytest.raises(errors.OverLimit) as over:
        client.submit(name, "q", {})
    assert over.value.sqlstate == "JC004" and over.value.field == "tenant_id"
    assert "retry_after: 1" in (over.value.detail or "")

    with pytest.raises(errors.NotFound) as missing:
        client.cancel_job(2**63 - 1)
    assert missing.value.sqlstate == "P0002"
    client.put_tenant(name)
    done = client.submit(name, "q", {}).job_id
    client.cancel_job(done)
    with pytest.raises(errors.IllegalTransition):
        client.cancel_job(done)
    assert count_jobs(conn, name) == 1, "nothing of the failed calls was written"


def test_bad_values_are_refused_before_the_database(client: Client, name: str) -> None:
    for bad in (0, -1, 2**63, 10**30):
        with pytest.raises(errors.InvalidInput) as e:
            client.get_job(bad)
        assert (e.value.field, e.value.sqlstate) == ("job_id", "22003")
    with pytest.raises(errors.InvalidInput, match="before_id"):
        client.list_jobs(name, before_id=2**64)
    with pytest.raises(errors.InvalidInput, match="time zone") as naive:
        client.submit(name, "q", {}, run_at=datetime(2030, 1, 1))
    assert naive.value.field == "run_at"
    with pytest.raises(errors.InvalidInput, match="not JSON"):
        client.submit(name, "q", {"at": datetime.now(UTC)})
    with pytest.raises(errors.InvalidInput, match="not JSON"):
        client.submit(name, "q", {"x": float("nan")})


def test_submit_on_the_callers_connection_rolls_back_and_commits_with_it(
    client: Client, dsn: str, name: str, conn: Conn
) -> None:
    with psycopg.connect(dsn) as mine:  # not autocommit: the caller's transaction
        mine.execute("create temporary table sent (job_id bigint)")
        mine.commit()
        job = client.submit(name, "email", {"n": 1}, conn=mine)
        mine.execute("insert into sent values (%s)", (job.job_id,))
        assert client.get_job(job.job_id, conn=mine) is not None, "visible inside the transaction"
        assert client.get_job(job.job_id) is None, "not to another session before the commit"
        mine.rollback()
        assert client.get_job(job.job_id) is None and count_jobs(conn, name) == 0

        kept = client.submit(name, "email", {"n": 2}, conn=mine)
        client.put_tenant(name, weight=2, conn=mine)  # several statements: in the caller's transaction too
        mine.execute("insert into sent values (%s)", (kept.job_id,))
        assert mine.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS, (
            "the client commits nothing"
        )
        mine.commit()
        assert client.get_job(kept.job_id) is not None
        tenant = client.get_tenant(name)
        assert tenant is not None and tenant.weight == 2


def test_schedules(client: Client, name: str) -> None:
    saved = client.put_schedule(name, "nightly", "0 2 * * *", "reports", {"k": 1}, priority=3, catch_up=2)
    assert isinstance(saved, Schedule)
    assert (saved.cron, saved.queue, saved.payload, saved.priority, saved.catch_up, saved.skip_overlap) == (
        "0 2 * * *",
        "reports",
        {"k": 1},
        3,
        2,
        False,
    )
    assert saved.next_fire_at is not None and (saved.next_fire_at.hour, saved.next_fire_at.minute) == (2, 0)
    assert [s.name for s in client.list_schedules(name)] == ["nightly"]
    assert client.get_schedule(name, "nightly") == saved
    assert client.get_schedule(name, "none") is None
    times = client.next_fire_times("*/15 * * * *", 3)
    assert len(times) == 3 and all(t.minute % 15 == 0 and t.tzinfo is not None for t in times)
    assert times == sorted(times)
    with pytest.raises(errors.InvalidInput) as bad:
        client.put_schedule(name, "bad", "0 25 * * *", "q", {})
    assert bad.value.field == "cron" and "hour" in str(bad.value)
    assert client.drop_schedule(name, "nightly") is True
    assert client.drop_schedule(name, "nightly") is False


def test_schedules_in_a_time_zone_and_their_runs(client: Client, name: str) -> None:
    berlin = ZoneInfo("Europe/Berlin")
    saved = client.put_schedule(name, "nine", "0 9 * * *", "reports", {}, time_zone="europe/berlin")
    assert saved.time_zone == "Europe/Berlin"  # as pg_timezone_names spells it
    assert saved.next_fire_at is not None
    assert (saved.next_fire_at.astimezone(berlin).hour, saved.next_fire_at.minute) == (9, 0)
    assert client.put_schedule(name, "utc", "0 9 * * *", "reports", {}).time_zone == "UTC"
    times = client.next_fire_times("30 2 * * *", 400, time_zone="America/New_York")
    assert all(
        t.astimezone(ZoneInfo("America/New_York")).strftime("%H:%M") in ("02:30", "03:00") for t in times
    )
    for zone in ("Mars/Olympus", "CEST", "UTC+3"):
        with pytest.raises(errors.InvalidInput) as bad:
            client.put_schedule(name, "bad", "0 9 * * *", "q", {}, time_zone=zone)
        assert (bad.value.sqlstate, bad.value.field) == ("JC001", "time_zone"), zone
    assert client.get_schedule(name, "bad") is None

    assert client.schedule_runs(name, "nine") == []
    first, second = client.run_schedule(name, "nine"), client.run_schedule(name, "nine")
    runs = client.schedule_runs(name, "nine")
    assert [r.job_id for r in runs] == [second, first] and all(isinstance(r, ScheduleRun) for r in runs)
    assert runs[0].state == "pending" and runs[0].fire_time is not None
    assert [r.job_id for r in client.schedule_runs(name, "nine", before_id=second)] == [first]
    job = client.get_job(first)
    assert job is not None and (job.schedule_name, job.fire_time) == ("nine", runs[1].fire_time)
    plain = client.get_job(client.submit(name, "reports", {}).job_id)
    assert plain is not None and (plain.schedule_name, plain.fire_time) == (None, None)
    with pytest.raises(errors.InvalidInput) as bad:
        client.schedule_runs(name, "nine", max_rows=1001)
    assert bad.value.field == "max_rows"


def test_tenants(client: Client, name: str) -> None:
    tenant = client.put_tenant(name, weight=3, max_pending=100, claim_rate=2.5, submit_burst=10)
    assert isinstance(tenant, Tenant)
    assert (
        tenant.weight,
        tenant.max_pending,
        tenant.claim_rate,
        tenant.submit_burst,
        tenant.max_running,
    ) == (
        3,
        100,
        Decimal("2.5"),
        10,
        None,
    )
    assert client.get_tenant(name) == tenant
    assert name in [t.tenant_id for t in client.list_tenants()]
    assert client.get_tenant(name + "-none") is None
    assert client.pause_tenant(name) is True and client.pause_tenant(name) is False
    assert client.get_tenant(name).paused is True  # type: ignore[union-attr]
    assert client.resume_tenant(name) is True
    with pytest.raises(errors.NotFound) as missing:
        client.pause_tenant(name + "-none")
    assert missing.value.field == "tenant_id"
    reset = client.put_tenant(name)  # every setting is replaced: back to the defaults
    assert (reset.weight, reset.max_pending, reset.claim_rate) == (1, None, None)


def test_queues(client: Client, name: str, conn: Conn) -> None:
    queue = f"{name}-q"
    saved = client.put_queue(queue, max_running=5, claim_rate=2.5, claim_burst=10)
    assert isinstance(saved, Queue)
    assert (saved.queue, saved.max_running, saved.claim_rate, saved.claim_burst, saved.paused) == (
        queue,
        5,
        Decimal("2.5"),
        10,
        False,
    )
    assert (saved.due, saved.running) == (0, 0) and saved.updated_at is not None
    assert client.get_queue(queue) == saved and saved in client.list_queues()
    assert client.get_queue(f"{name}-none") is None
    assert client.pause_queue(queue) is True and client.pause_queue(queue) is False
    assert client.get_queue(queue).paused is True  # type: ignore[union-attr]
    assert client.resume_queue(queue) is True and client.resume_queue(queue) is False
    with pytest.raises(errors.InvalidInput) as bad:
        client.put_queue(queue, max_running=-1)
    assert bad.value.field == "max_running"
    # in the caller's transaction: gone with its rollback
    with psycopg.connect(client.dsn) as mine:
        client.put_queue(queue, max_running=7, conn=mine)
        assert client.get_queue(queue, conn=mine).max_running == 7  # type: ignore[union-attr]
        mine.rollback()
    assert client.get_queue(queue).max_running == 5  # type: ignore[union-attr]
    reset = client.put_queue(queue)  # every setting back to its default
    assert (reset.max_running, reset.claim_rate, reset.paused) == (None, None, False)


def test_concurrency_limits(client: Client, name: str) -> None:
    client.put_tenant(name)
    client.put_concurrency_limit(name, "stripe", 5)
    client.put_concurrency_limit(name, None, 2)  # the tenant's default
    client.submit(name, "q", {}, concurrency_key="stripe")
    limits = client.list_concurrency_limits(name)
    assert all(isinstance(k, ConcurrencyLimit) for k in limits)
    by_key = {k.concurrency_key: k for k in limits}
    assert (by_key["stripe"].max_running, by_key[None].max_running) == (5, 2)
    assert by_key[None].active is None
    client.put_concurrency_limit(name, "stripe", None)  # removed: the default applies again
    assert "stripe" not in {k.concurrency_key for k in client.list_concurrency_limits(name)}
    with pytest.raises(errors.InvalidInput) as bad:
        client.put_concurrency_limit(name, "stripe", -1)
    assert bad.value.field == "max_running"


def test_api_tokens(client: Client, name: str) -> None:
    token = client.create_api_token(name, ["jobs:read"], "ci")
    assert token.startswith("jct_")
    token_id = int(token.split("_")[1])
    listed = client.list_api_tokens(name)
    assert [(t.token_id, t.tenant_id, t.scopes, t.label, t.revoked_at) for t in listed] == [
        (token_id, name, ["jobs:read"], "ci", None)
    ]
    assert isinstance(listed[0], ApiToken)
    assert client.revoke_api_token(token_id) is True and client.revoke_api_token(token_id) is False
    assert client.list_api_tokens(name)[0].revoked_at is not None
    with pytest.raises(errors.InvalidInput, match="unknown scope"):
        client.create_api_token(name, ["jobs:fly"])
    with pytest.raises(errors.InvalidInput) as bad:
        client.revoke_api_token(0)
    assert (bad.value.field, bad.value.sqlstate) == ("token_id", "22003")


def test_tenant_grants(client: Client, name: str, conn: Conn) -> None:
    conn.execute(f'create role "{name}" in role jobctl_writer')
    try:
        assert client.grant_tenant(name, f"{name}a") is True
        assert client.grant_tenant(name, f"{name}a") is False
        assert client.grant_tenant(name) is True  # every tenant
        mine = [g for g in client.list_tenant_grants() if g.role_name == name]
        assert all(isinstance(g, TenantGrant) for g in mine)
        assert [g.tenant_id for g in mine] == [None, f"{name}a"]
        assert client.revoke_tenant(name) is True and client.revoke_tenant(name) is False
        assert client.revoke_tenant(name, f"{name}a") is True
        with pytest.raises(errors.JobctlError, match="no role"):
            client.grant_tenant(f"{name}_nobody", "x")
    finally:
        conn.execute("delete from jobctl._role_tenant where role_oid = %s::regrole", (name,))
        conn.execute(f'drop role "{name}"')


def test_stats_claim_metrics_health_checks_and_the_clock(client: Client, name: str, conn: Conn) -> None:
    client.submit(name, "a", {})
    client.submit(name, "a", {})
    client.submit(name, "b", {}, delay=3600)
    stats = client.stats(name)
    assert all(isinstance(s, Stats) for s in stats)
    assert sorted((s.queue, s.state, s.jobs) for s in stats) == [("a", "pending", 2), ("b", "pending", 1)]
    assert [s.queue for s in client.stats(name, "b")] == ["b"]
    now = client.now()
    assert isinstance(now, datetime) and now.tzinfo is not None
    # the run_at of the oldest due job: b's is not due for an hour
    assert {s.queue: s.oldest_run_at is not None for s in stats} == {"a": True, "b": False}
    metrics = client.claim_metrics(timedelta(minutes=5), name)
    assert metrics == [] or all(isinstance(m, ClaimMetrics) and m.tenant_id == name for m in metrics)
    assert client.claim_metrics(30, name, "a") == client.claim_metrics(timedelta(seconds=30), name, "a")
    checks = client.health_checks()
    assert checks and all(isinstance(c, HealthCheck) for c in checks)
    assert {c.verdict for c in checks} <= {"ok", "warn", "fail"}


def test_the_own_connection_is_opened_again_after_it_broke(client: Client, name: str, conn: Conn) -> None:
    client.submit(name, "q", {})
    assert client._conn is not None
    conn.execute("select pg_terminate_backend(%s)", (client._conn.info.backend_pid,))
    with pytest.raises(psycopg.OperationalError):
        client.list_jobs(name)
    assert len(client.list_jobs(name)) == 1


def test_the_async_client(dsn: str, name: str, conn: Conn) -> None:
    async def scenario() -> None:
        async with AsyncClient(dsn) as client:
            made = await client.submit(name, "q", {"n": 1}, priority=2, delay=60)
            job = await client.get_job(made.job_id)
            assert job is not None and (job.priority, job.payload, job.state) == (2, {"n": 1}, "pending")
            many = await client.submit_many([JobSpec(name, "q", {"n": 2})])
            assert [j.job_id for j in await client.list_jobs(name)] == [many[0].job_id, made.job_id]
            assert await client.cancel_job(made.job_id) == "cancelled"
            assert await client.retry_job(made.job_id) == "pending"
            assert [h.event for h in await client.job_history(made.job_id)][-1] == "retried"
            with pytest.raises(errors.InvalidInput) as bad:
                await client.submit(name, "q", {}, priority=999)
            assert (bad.value.sqlstate, bad.value.field, bad.value.hint) == (
                "JC001",
                "priority",
                "Nothing was submitted.",
            )

            zoned = await client.put_schedule(name + "z", "s", "0 9 * * *", "q", {}, time_zone="Asia/Kolkata")
            assert zoned.time_zone == "Asia/Kolkata"
            ran = await client.run_schedule(name + "z", "s")
            assert [r.job_id for r in await client.schedule_runs(name + "z", "s")] == [ran]
            times = await client.next_fire_times("0 9 * * *", 2, time_zone="Asia/Kolkata")
            assert [(t.hour, t.minute) for t in times] == [(3, 30), (3, 30)]

            tenant = await client.put_tenant(name, weight=4)
            assert tenant.weight == 4 and await client.get_tenant(name) == tenant
            assert await client.pause_tenant(name) and await client.resume_tenant(name)
            assert name in [t.tenant_id for t in await client.list_tenants()]
            schedule = await client.put_schedule(name, "hourly", "@hourly", "q", {})
            assert await client.list_schedules(name) == [schedule]
            assert await client.get_schedule(name, "hourly") == schedule
            assert len(await client.next_fire_times("@daily", 2)) == 2
            assert await client.drop_schedule(name, "hourly") is True

            queue = await client.put_queue(f"{name}-q", max_running=3)
            assert queue.max_running == 3 and await client.get_queue(f"{name}-q") == queue
            assert queue in await client.list_queues()
            assert await client.pause_queue(queue.queue) and await client.resume_queue(queue.queue)
            await client.put_queue(queue.queue)
            await client.put_concurrency_limit(name, "k", 1)
            assert [k.max_running for k in await client.list_concurrency_limits(name)] == [1]
            token = await client.create_api_token(name, ["jobs:read"])
            (listed,) = await client.list_api_tokens(name)
            assert token.startswith(f"jct_{listed.token_id}_")
            assert await client.revoke_api_token(listed.token_id) is True
            assert isinstance(await client.list_tenant_grants(), list)
            assert {s.state for s in await client.stats(name)} == {"pending"}
            assert isinstance(await client.claim_metrics(60, name), list)
            assert await client.health_checks()
            assert (await client.now()).tzinfo is not None

            async with await psycopg.AsyncConnection.connect(dsn) as mine:
                gone = await client.submit(name, "tx", {}, conn=mine)
                await mine.rollback()
                kept = await client.submit(name, "tx", {}, conn=mine)
                assert await client.get_job(kept.job_id) is None, "not committed yet"
                await mine.commit()
            assert await client.get_job(gone.job_id) is None
            assert await client.get_job(kept.job_id) is not None

    asyncio.run(scenario())
    assert count_jobs(conn, name) == 3


def test_the_dashboards_reads(client: Client, name: str) -> None:
    client.put_tenant(name)
    parent = client.submit(name, "q", {})
    client.submit(name, "q", {}, depends_on=[parent.job_id])
    (row,) = client.job_overview(60, name)
    assert (row.tenant_id, row.queue, row.pending, row.waiting) == (name, "q", 1, 1)
    counts = client.count_job_states({"tenant_id": name})
    assert (counts.pending, counts.waiting, counts.capped) == (1, 1, False)
    assert "q" in [q.queue for q in client.queue_overview(max_rows=1000)]
    assert "jobs" in client.caller_access()


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any place in it (also under TYPE_CHECKING and in functions)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_the_row_types_import_no_calls() -> None:
    """No import circle through the client: its row types, all the worker and the archive take from
    it, import no jobctl module but the errors."""
    package = Path(jobctl.__file__).parent
    assert {m for m in imported_modules(package / "client" / "rows.py") if m.startswith("jobctl")} == {
        "jobctl",
        "jobctl.errors",
    }
    for module in ("worker/job.py", "archive.py", "tracing.py", "errors.py"):
        imported = {m for m in imported_modules(package / module) if m.startswith("jobctl.client")}
        assert {m for m in imported if not m.startswith("jobctl.client.rows")} == set(), module
