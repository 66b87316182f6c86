"""The web dashboard in a real browser (Debian's chromium, driven by Playwright) against a real API
server process, a real worker and a database of its own (a fresh migrated one beside the test
database, so its pages show only what this module made).

Every page visit asserts that nothing was requested from another host and that no console error or
page error occurred. JOBCTL_SCREENSHOTS=1 rewrites docs/dashboard/<page>.png (docs/dashboard.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from test_api import Server

playwright_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, expect  # noqa: E402

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHOTS = ROOT / "docs" / "dashboard"
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
Conn = psycopg.Connection[tuple[Any, ...]]
FAST_RETRY = {"strategy": "fixed", "base": "0.2 seconds", "max": "1 second", "jitter": False}

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no chromium (bin/setup installs it)")


@pytest.fixture(scope="module")
def own_dsn(dsn: str) -> Iterator[str]:
    """A fresh database on the test cluster, migrated, dropped at the end."""
    name = f"jobctl_dashboard_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'drop database if exists "{name}" with (force)')
        c.execute(f'create database "{name}"')
    made = make_conninfo(**{**conninfo_to_dict(dsn), "dbname": name})
    try:
        subprocess.run(
            [sys.executable, "-m", "jobctl.cli", "migrate"],
            env={**os.environ, "JOBCTL_DSN": made}, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        yield made
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'drop database "{name}" with (force)')


@pytest.fixture(scope="module")
def db(own_dsn: str) -> Iterator[Conn]:
    with psycopg.connect(own_dsn, autocommit=True) as c:
        for tenant, weight, running in (("acme", 3, 20), ("globex", 2, 10), ("initech", 1, None)):
            c.execute("select jobctl.put_tenant(%s, %s, max_running => %s)", (tenant, weight, running))
        c.execute("select jobctl.put_queue('reports', 4, 50)")
        payload = '{"ledger": false}'
        c.execute(
            "select jobctl.put_schedule('acme', 'nightly-report', '30 2 * * 1-5', 'reports', %s)", (payload,)
        )
        c.execute("select jobctl.put_schedule('globex', 'sync', '*/15 * * * *', 'email', %s)", (payload,))
        c.execute(
            "select jobctl.put_schedule('acme', 'berlin-9am', '0 9 * * 1-5', 'reports', %s,"
            " time_zone => 'Europe/Berlin')",
            (payload,),
        )
        yield c


@pytest.fixture(scope="module")
def tokens(db: Conn) -> dict[str, str]:
    def make(tenant: str | None, scopes: list[str] | None = None) -> str:
        row = db.execute(
            "select jobctl.create_api_token(%s, coalesce(%s::text[], jobctl._api_scopes()), 'dashboard')",
            (tenant, scopes),
        ).fetchone()
        assert row is not None
        return str(row[0])

    return {
        "admin": make(None),
        "acme": make("acme"),
        "reader": make("acme", ["jobs:read", "schedules:read"]),
    }


@pytest.fixture(scope="module")
def server(own_dsn: str, db: Conn) -> Iterator[Server]:
    srv = Server(own_dsn)
    try:
        srv.wait_up()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def worker(
    own_dsn: str, db: Conn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen[bytes]]:
    log = tmp_path_factory.mktemp("dashboard") / "worker.log"
    args = ["--handler", "worker_handlers:handle", "--concurrency", "20", "--lease", "3",
            "--poll-interval", "0.2", "--worker-id", "dash-worker-1"]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()", *args],
            cwd=TESTS, env={**os.environ, "JOBCTL_DSN": own_dsn}, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            b.close()


class Guard:
    """What a page did that it must not: requests to another host, console errors, page errors."""

    def __init__(self, page: Page, base: str) -> None:
        self.host = urlsplit(base).netloc
        self.foreign: list[str] = []
        self.errors: list[str] = []
        self.expected: set[int] = set()  # statuses a test provokes (Chromium logs each as a console error)
        page.on("request", self.request)
        page.on("console", self.console)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("dialog", lambda d: d.accept())  # the confirm() of pause and cancel buttons

    def request(self, r: Request) -> None:
        parts = urlsplit(r.url)
        if parts.scheme not in ("data", "about", "blob") and parts.netloc != self.host:
            self.foreign.append(r.url)

    def console(self, m: ConsoleMessage) -> None:
        status = re.search(r"responded with a status of (\d+)", m.text)
        if m.type == "error" and not (status and int(status.group(1)) in self.expected):
            self.errors.append(f"console: {m.text}")

    def check(self) -> None:
        assert self.foreign == [], self.foreign
        assert self.errors == [], self.errors


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[tuple[Page, Guard]]:
    context = browser.new_context(base_url=server.url, viewport={"width": 1360, "height": 900})
    p = context.new_page()
    p.set_default_timeout(15000)
    guard = Guard(p, server.url)
    try:
        yield p, guard
        guard.check()
    finally:
        context.close()


def sign_in(p: Page, token: str, target: str = "/") -> None:
    p.goto(target)
    assert "/sign-in" in p.url
    p.fill("#token", token)
    p.click("button[type=submit]")
    p.wait_for_load_state()


def shot(p: Page, name: str, full_page: bool = True) -> None:
    if os.environ.get("JOBCTL_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        p.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def submit(db: Conn, tenant: str, queue: str, payloads: list[dict[str, Any]], **extra: Any) -> list[int]:
    jobs = [{"tenant_id": tenant, "queue": queue, "payload": p, **extra} for p in payloads]
    rows = db.execute("select job_id from jobctl.submit_jobs(%s::jsonb)", (json.dumps(jobs),)).fetchall()
    return [int(r[0]) for r in rows]


def count(db: Conn, ids: list[int], state: str) -> int:
    row = db.execute(
        "select count(*) from jobctl.job where job_id = any(%s) and state = %s", (ids, state)
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_sign_in_and_watch_a_job_submitted_through_the_api_finish(
    page: tuple[Page, Guard], server: Server, tokens: dict[str, str], worker: Any, db: Conn
) -> None:
    p, guard = page
    guard.expected.add(401)  # the unknown token's answer
    p.goto("/")
    assert "/sign-in" in p.url
    shot(p, "sign-in")
    p.fill("#token", "jct_1_" + "0" * 64)
    p.click("button[type=submit]")
    expect(p.locator(".flash.bad")).to_contain_text("unknown or revoked")
    p.fill("#token", tokens["admin"])
    p.click("button[type=submit]")
    expect(p.locator("h1")).to_have_text("Overview")
    # some history for the charts and the grid: completions, retries and a few dead jobs
    submit(db, "acme", "email", [{"ledger": False, "sleep": 0.05}] * 60)
    submit(db, "globex", "email", [{"ledger": False, "sleep": 0.05}] * 30)
    submit(db, "initech", "reports", [{"ledger": False, "fail_times": 1}] * 12, backoff=FAST_RETRY)
    submit(db, "globex", "email", [{"ledger": False, "fail_times": 1, "permanent": True}] * 3, max_attempts=1)
    r = httpx.post(
        f"{server.url}/api/v1/jobs",
        headers={"Authorization": f"Bearer {tokens['acme']}"},
        json={"queue": "email", "payload": {"ledger": False, "sleep": 1.5, "result": {"sent": True}},
              "dedup_key": "welcome-42"},
        timeout=10,
    )  # fmt: skip
    assert r.status_code == 201, r.text
    job_id = r.json()["job"]["job_id"]
    p.goto(f"/jobs/{job_id}")
    expect(p.locator("h1")).to_contain_text(f"Job {job_id}")
    # the live block polls every 2 s: the job goes from pending or running to completed by itself
    expect(p.locator("h1 .state")).to_have_text("completed", timeout=15000)
    expect(p.locator(".timeline")).to_contain_text("completed")
    expect(p.locator("pre.json").nth(1)).to_contain_text('"sent": true')
    shot(p, "job")
    p.goto("/jobs?tenant=acme")
    expect(p.locator(f"a[href='/jobs/{job_id}']")).to_be_visible()
    # a backlog for the grid and the fairness strip: more than the worker's 20 at once
    submit(db, "acme", "email", [{"ledger": False, "sleep": 1}] * 60)
    submit(db, "globex", "email", [{"ledger": False, "sleep": 1}] * 40)
    submit(db, "initech", "reports", [{"ledger": False, "sleep": 1}] * 20)
    p.goto("/")
    expect(p.locator("table.grid")).to_contain_text("acme")
    expect(p.locator("table.fair")).to_contain_text("globex")
    p.wait_for_timeout(2200)  # a poll: the live block redraws with the backlog being worked off
    shot(p, "overview")


def test_filter_jobs(page: tuple[Page, Guard], tokens: dict[str, str], db: Conn, worker: Any) -> None:
    p, _ = page
    ids = submit(db, "acme", "filters", [{"ledger": False, "n": i} for i in range(5)])
    keyed = submit(db, "acme", "invoices", [{"ledger": False}], dedup_key="invoice-7")
    sign_in(p, tokens["admin"], "/jobs")
    p.fill("input[name=tenant]", "acme")
    p.fill("input[name=dedup_key]", "invoice-7")
    p.click("form.filters button[type=submit]")
    rows = p.locator("table.jobs tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(str(keyed[0]))
    p.goto("/jobs?tenant=acme&queue=filters")
    expect(p.locator("table.jobs tbody tr")).to_have_count(len(ids))
    p.goto(f"/jobs?tenant=acme&job={ids[0]},{ids[1]}")
    expect(p.locator("table.jobs tbody tr")).to_have_count(2)


def test_bulk_retry_of_200_dead_jobs(
    page: tuple[Page, Guard], tokens: dict[str, str], db: Conn, worker: Any
) -> None:
    p, _ = page
    # fail on the first attempt, max_attempts 1: dead at once; a retry's second attempt succeeds
    ids = submit(
        db, "acme", "imports", [{"ledger": False, "fail_times": 1, "permanent": True}] * 200, max_attempts=1
    )
    wait_for(lambda: count(db, ids, "dead") == 200, 30, "200 dead jobs")
    sign_in(p, tokens["acme"], "/jobs?queue=imports&state=dead")
    expect(p.locator("#bulk .bar")).to_contain_text("200 hot jobs match")
    p.click("button[value=retry-all]")
    expect(p.locator("h1")).to_have_text("Retry 200 jobs?")
    shot(p, "bulk-confirm")
    p.click("button:has-text('Yes, retry 200 jobs')")
    expect(p.locator("h1")).to_have_text("Retried 200 jobs")
    wait_for(lambda: count(db, ids, "completed") == 200, 30, "the retried jobs to complete")


def test_cancel_a_running_job(
    page: tuple[Page, Guard], tokens: dict[str, str], db: Conn, worker: Any
) -> None:
    p, _ = page
    (job_id,) = submit(db, "acme", "slow", [{"ledger": False, "sleep": 60}])
    wait_for(lambda: count(db, [job_id], "running") == 1, 15, "the job to run")
    sign_in(p, tokens["acme"], f"/jobs/{job_id}")
    expect(p.locator("h1 .state")).to_have_text("running")
    expect(p.locator(".lease")).to_contain_text("dash-worker-1")
    p.click("button:has-text('Cancel')")
    expect(p.locator(".flash.ok")).to_have_text("Job cancelled.")
    expect(p.locator("h1 .state")).to_have_text("cancelled")
    assert count(db, [job_id], "cancelled") == 1
    expect(p.locator(".timeline")).to_contain_text("cancelled")


def test_pause_a_queue_and_watch_its_claims_stop(
    page: tuple[Page, Guard], tokens: dict[str, str], db: Conn, worker: Any
) -> None:
    p, _ = page
    sign_in(p, tokens["admin"], "/queues")
    row = p.locator("tr", has=p.locator("a", has_text="reports")).first
    row.locator("button:has-text('Pause')").click()
    expect(p.locator(".flash.ok")).to_have_text("Paused.")
    row = p.locator("tr", has=p.locator("a", has_text="reports")).first
    expect(row.locator(".badge.paused")).to_be_visible()
    ids = submit(db, "globex", "reports", [{"ledger": False}] * 5)
    time.sleep(2.5)  # the worker polls every 0.2 s: nothing is claimed from a paused queue
    assert count(db, ids, "pending") == 5
    expect(row.locator("td").nth(1)).to_have_text("5")  # live: pending 5
    shot(p, "queues")
    row.locator("button:has-text('Resume')").click()
    expect(p.locator(".flash.ok")).to_have_text("Resumed.")
    wait_for(lambda: count(db, ids, "completed") == 5, 15, "the resumed queue's jobs to complete")
    # limits edited in place
    row = p.locator("tr", has=p.locator("a", has_text="reports")).first
    row.locator("input[name=max_running]").fill("7")
    row.locator("input[name=claim_rate]").fill("")
    row.locator("button:has-text('Save')").click()
    expect(p.locator(".flash.ok")).to_have_text("Saved.")
    saved = db.execute(
        "select max_running, claim_rate, paused from jobctl.list_queues() where queue = 'reports'"
    )
    assert saved.fetchone() == (7, None, False)


def test_other_pages_and_a_read_only_token(
    page: tuple[Page, Guard], tokens: dict[str, str], worker: Any
) -> None:
    p, guard = page
    guard.expected.add(403)  # the queues page refuses the read-only tenant token
    sign_in(p, tokens["admin"], "/tenants")
    expect(p.locator("table.grid").first).to_contain_text("initech")
    shot(p, "tenants")
    p.goto("/schedules")
    expect(p.locator("table.grid")).to_contain_text("at 02:30, on Monday to Friday (UTC)")
    nightly = p.locator("tr", has_text="nightly-report")
    nightly.locator("button:has-text('Pause')").click()
    expect(p.locator("tr", has_text="nightly-report").locator(".badge.paused")).to_be_visible()
    p.locator("tr", has_text="nightly-report").locator("button:has-text('Run now')").click()
    expect(p.locator(".flash.ok")).to_have_text("Schedule run: a job was submitted.")
    expect(p.locator("h1")).to_contain_text("Job ")
    expect(p.locator("dl").first).to_contain_text("from schedule nightly-report, fire time")
    job_title = p.locator("h1").inner_text()
    p.goto("/schedules")
    expect(p.locator("tr", has_text="nightly-report").locator("a[href^='/jobs/']")).to_be_visible()
    berlin = p.locator("tr", has_text="berlin-9am")
    expect(berlin).to_contain_text("Europe/Berlin")
    expect(berlin).to_contain_text("on Monday to Friday (Europe/Berlin)")
    expect(berlin).to_contain_text(" CE")  # the next fire time's wall time there: CET or CEST
    shot(p, "schedules")
    p.locator("tr", has_text="nightly-report").locator("a[href^='/schedules/runs']").click()
    expect(p.locator("h1")).to_have_text("Schedule nightly-report")
    expect(p.locator("table.grid")).to_contain_text(job_title.split()[1])
    shot(p, "schedule-runs")
    p.goto("/workers")
    expect(p.locator("table.grid")).to_contain_text("dash-worker-1")
    shot(p, "workers")
    p.goto("/jobs?tenant=acme")
    shot(p, "jobs", full_page=False)
    p.click("button:has-text('Sign out')")
    assert "/sign-in" in p.url
    p.goto("/jobs")
    assert "/sign-in" in p.url  # the cookie is gone
    sign_in(p, tokens["reader"], "/jobs")
    expect(p.locator(".badge.ro")).to_have_text("read-only")
    expect(p.locator("#bulk button")).to_have_count(0)
    expect(p.locator("input[name=job_id]")).to_have_count(0)
    p.goto("/queues")
    expect(p.locator("h1")).to_have_text("Not for this token")


def test_a_waiting_child_links_its_parent_and_is_released(
    page: tuple[Page, Guard], tokens: dict[str, str], db: Conn, worker: Any
) -> None:
    """A job's page shows the jobs it waits for (links, states), its workflow's jobs, its
    batch; the live block shows the child released once its parent completed."""
    p, _ = page
    jobs = [
        {"name": "extract", "tenant_id": "acme", "queue": "etl",
         "payload": {"ledger": False, "sleep": 3, "result": {"rows": 120}}},
        {"name": "load", "tenant_id": "acme", "queue": "etl",
         "payload": {"ledger": False, "result": {"ok": 1}}, "depends_on": ["extract"]},
    ]  # fmt: skip
    rows = db.execute(
        "select name, job_id from jobctl.submit_workflow(%s::jsonb)", (json.dumps(jobs),)
    ).fetchall()
    ids = {str(n): int(i) for n, i in rows}
    parent, child = ids["extract"], ids["load"]
    sign_in(p, tokens["acme"], f"/jobs/{child}")
    expect(p.locator("h1 .state")).to_have_text("waiting")
    expect(p.locator("#parents h2").first).to_contain_text("Waits for")
    link = p.locator(f"#parents a[href='/jobs/{parent}']")
    expect(link).to_be_visible()
    expect(p.locator("#workflow h2")).to_contain_text(f"Workflow {parent}")
    expect(p.locator("#workflow tbody tr")).to_have_count(2)
    # the names the jobs were given at submit, beside their ids; depends_on by name
    expect(p.locator("#workflow thead th").nth(1)).to_have_text("name")
    expect(p.locator("#workflow tbody tr").nth(0).locator("td").nth(1)).to_have_text("extract")
    expect(p.locator("#workflow tbody tr").nth(1).locator("td").nth(1)).to_have_text("load")
    expect(p.locator("#workflow tbody tr").nth(1).locator("td").last).to_have_text("extract")
    expect(p.locator("#parents tbody tr").first.locator("td").nth(1)).to_have_text("extract")
    wait_for(lambda: count(db, [parent], "running") == 1, 15, "the parent to run")
    p.reload()
    expect(p.locator("#parents tbody tr").first).to_contain_text("running")
    shot(p, "job-workflow")
    # the live block (a poll every 2 s): released when the parent completed, then run
    expect(p.locator("h1 .state")).to_have_text(re.compile("pending|running|completed"), timeout=20000)
    expect(p.locator("h1 .state")).to_have_text("completed", timeout=20000)
    expect(p.locator("#parents h2").first).to_contain_text("Depends on")
    expect(p.locator("#parents tbody tr").first).to_contain_text("completed")
    expect(p.locator("#parents pre.json")).to_contain_text('"rows": 120')
    link.click()
    expect(p.locator("h1")).to_contain_text(f"Job {parent}")
    # a batch's callback shows its batch: size, outcomes, callbacks
    batch = db.execute(
        "select batch_id, on_finish_id from jobctl.submit_batch(%s::jsonb, on_finish => %s::jsonb)",
        (json.dumps([{"tenant_id": "acme", "queue": "etl", "payload": {"ledger": False}}] * 3),
         json.dumps({"queue": "etl", "payload": {"ledger": False}})),
    ).fetchone()  # fmt: skip
    assert batch is not None
    batch_id, callback = int(batch[0]), int(batch[1])
    wait_for(lambda: count(db, [callback], "completed") == 1, 20, "the batch's callback to run")
    p.goto(f"/jobs/{callback}")
    expect(p.locator("#batch h2")).to_have_text(f"Batch {batch_id}")
    expect(p.locator("#batch")).to_contain_text("3 jobs")
    expect(p.locator("#batch .counts")).to_contain_text("completed 3")
    expect(p.locator("#batch")).to_contain_text("this job")
    # the jobs page's state filter lists the jobs that wait
    later = db.execute(
        "select job_id from jobctl.submit_job('acme', 'etl-later', '{}', run_at => now() + interval '1 hour')"
    ).fetchone()
    assert later is not None
    (waiting,) = submit(db, "acme", "etl-later", [{"ledger": False}], depends_on=[int(later[0])])
    p.goto("/jobs")
    expect(p.locator("fieldset.states input[value=waiting]")).to_have_count(1)
    p.goto("/jobs?tenant=acme&queue=etl-later&state=waiting")
    expect(p.locator("table.jobs tbody tr")).to_have_count(1)
    expect(p.locator("table.jobs tbody tr").first).to_contain_text(str(waiting))


def tenant_token(db: Conn, tenant: str, scopes: list[str] | None = None) -> str:
    row = db.execute(
        "select jobctl.create_api_token(%s, coalesce(%s::text[], jobctl._api_scopes()), 'dashboard')",
        (tenant, scopes),
    ).fetchone()
    assert row is not None
    return str(row[0])


def test_waiting_jobs_are_counted_and_the_chips_follow_an_id_filter(
    page: tuple[Page, Guard], db: Conn, worker: Any
) -> None:
    """Jobs waiting for their parents have a tile, a grid column and a chip of their
    own (they were in no count); with job ids in the filter the chips count those jobs only."""
    p, _ = page
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    (root,) = submit(db, "umbrella", "flow", [{"ledger": False}], run_at=later)
    children = submit(db, "umbrella", "flow", [{"ledger": False}] * 3, depends_on=[root])
    sign_in(p, tenant_token(db, "umbrella"), "/")
    expect(p.locator(".tile", has_text="waiting").locator("b")).to_have_text("3")
    expect(p.locator(".tile", has_text="delayed").locator("b")).to_have_text("1")
    header = p.locator("table.grid thead th")
    expect(header.nth(4)).to_have_text("waiting")
    expect(p.locator("table.grid tbody tr").first.locator("td").nth(4)).to_have_text("3")
    p.goto("/jobs")
    chip = p.locator("#counts .chip", has_text="waiting").locator("b")
    expect(chip).to_have_text("3")
    p.goto(f"/jobs?job={root},{children[0]}")
    expect(p.locator("table.jobs tbody tr")).to_have_count(2)
    expect(chip).to_have_text("1")
    expect(p.locator("#counts .chip", has_text="delayed").locator("b")).to_have_text("1")
    expect(p.locator("#counts .chip", has_text="pending").locator("b")).to_have_text("0")


def test_a_failed_job_shows_its_traceback_escaped(
    page: tuple[Page, Guard], server: Server, tokens: dict[str, str], db: Conn, worker: Any
) -> None:
    """A handler's exception leaves its traceback (the worker's, bounded by
    fail_job) on the job: the job's page shows it under the error, collapsed, innermost frame last,
    escaped (markup as text, control characters as escapes); the API's job JSON has it."""
    p, _ = page
    hostile = "<script>window.pwned = 1</script> & \x1b[31mred"
    (job_id,) = submit(db, "acme", "flaky", [{"ledger": False, "raise_deep": hostile}], max_attempts=1)
    wait_for(lambda: count(db, [job_id], "dead") == 1, 20, "the job to die")
    sign_in(p, tokens["acme"], f"/jobs/{job_id}")
    expect(p.locator("h1 .state")).to_have_text("dead")
    shown = "ValueError: <script>window.pwned = 1</script> & \\x1b[31mred"  # ESC as an escape
    expect(p.locator("pre.error")).to_have_text(shown)
    details = p.locator("details.traceback")
    expect(details).to_have_count(1)
    assert details.get_attribute("open") is None  # collapsed until asked for
    trace = details.locator("pre")
    expect(trace).to_be_hidden()
    details.locator("summary").click()
    expect(trace).to_be_visible()
    p.wait_for_timeout(2500)  # a poll of the live block: an opened traceback stays open
    expect(trace).to_be_visible()
    text = trace.inner_text()
    assert text.startswith("Traceback (most recent call last):"), text[:200]
    assert "KeyError: 'missing'" in text  # the chained exception is kept
    inner = text.rindex("in _innermost_frame_of_the_test")
    assert text.rindex("in _middle_frame") < inner  # innermost last, as Python prints it
    assert text.rstrip().endswith(shown), text[-200:]
    assert "\x1b" not in text  # the raw control character is not in the page
    assert p.evaluate("typeof window.pwned") == "undefined"
    assert p.locator("script", has_text="pwned").count() == 0
    html = p.content()
    assert "&lt;script&gt;window.pwned" in html
    shot(p, "job-error")
    auth = {"Authorization": f"Bearer {tokens['acme']}"}
    r = httpx.get(f"{server.url}/api/v1/jobs/{job_id}", headers=auth, timeout=10)
    assert r.status_code == 200, r.text
    traceback = r.json()["job"]["last_traceback"]
    assert "in _innermost_frame_of_the_test" in traceback
    assert traceback.rstrip().endswith(f"ValueError: {hostile}")  # JSON: as stored (\\u001b escaped by JSON)


def test_a_parked_job_shows_its_steps_and_what_it_waits_for(
    page: tuple[Page, Guard], server: Server, tokens: dict[str, str], db: Conn
) -> None:
    """A job that saved a step and waits for an event (docs/durable.md): its page says what it waits
    for and until when and lists the step; the jobs list marks it."""
    p, _ = page
    with db.transaction():  # submitted, claimed and parked before any worker sees it
        (job_id,) = submit(db, "acme", "durable-dash", [{}])
        lease = db.execute(
            "select job_id, lease_epoch from jobctl.claim_job('dash-sql', array['durable-dash'], 1)"
        ).fetchone()
        assert lease is not None and lease[0] == job_id
        db.execute("select jobctl.save_step(%s, %s, 'reserve', '{\"seat\": \"12A\"}')", lease)
        db.execute("select * from jobctl.await_event(%s, %s, 'order-7/approved', interval '1 hour')", lease)
    sign_in(p, tokens["acme"], f"/jobs/{job_id}")
    expect(p.locator("h1 .state")).to_have_text("pending")
    expect(p.locator("#parked")).to_contain_text("Waiting for the event order-7/approved, until")
    expect(p.locator("#steps tbody tr")).to_have_count(1)
    expect(p.locator("#steps tbody tr")).to_contain_text('{"seat": "12A"}')
    shot(p, "job-durable")
    p.goto(f"{server.url}/jobs?tenant=acme&queue=durable-dash")
    expect(p.locator("span.badge.parked")).to_have_text("awaits event")
