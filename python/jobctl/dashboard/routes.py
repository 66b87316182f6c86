"""The dashboard's pages and actions. Each page authenticates the session's token for one scope and
reads through the app's AsyncClient on the request's connection, as the API's endpoints do: the SQL
functions decide what the token's tenant may see and do. Figures come from the counters
(job_overview, job_rates, fairness), never from a scan of the jobs."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar
from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from jobctl import errors
from jobctl.api import auth
from jobctl.api.auth import Caller
from jobctl.client import JobInfo, JobOverview, StateCounts
from jobctl.contract import STATES
from jobctl.dashboard import charts, web
from jobctl.dashboard.pages import Me, action, clear_cookie, me_for, page, render
from jobctl.dashboard.pages import field as form_field

router = APIRouter(include_in_schema=False)
T = TypeVar("T")

WINDOW = timedelta(minutes=5)  # the rates' and fairness' window
GRID_ROWS = 100  # the overview's tenant x queue rows, busiest first, unless ?all=1
FAIR_ROWS = 24  # the fairness strip's tenants, most claims first
PAGE = 50  # jobs per page
BULK_SECONDS = 20.0  # a bulk action runs batches this long, then offers to continue
BULK_BATCH = 1000
NOTES = {
    "cancelled": "Job cancelled.",
    "retried": "Job made pending again.",
    "paused": "Paused.",
    "resumed": "Resumed.",
    "saved": "Saved.",
    "ran": "Schedule run: a job was submitted.",
}


def _note(request: Request) -> str | None:
    return NOTES.get(request.query_params.get("note", ""))


def _back(path: str, note: str) -> Response:
    return RedirectResponse(f"{path}?note={note}", status_code=303)


# --- signing in and out


@router.get("/sign-in")
async def sign_in_form(request: Request) -> Response:
    nonce = request.cookies.get(web.PRE_COOKIE) or web.new_secret().hex()
    context = {
        "title": "Sign in",
        "csrf": web.csrf_for(web.secret_of(request), nonce),
        "next": _next(request.query_params.get("next")),
        "expired": bool(request.query_params.get("expired")),
        "error": None,
    }
    response = render(request, "sign_in.html", context)
    _pre_cookie(response, request, nonce)
    return response


def _pre_cookie(response: Response, request: Request, nonce: str) -> None:
    response.set_cookie(
        web.PRE_COOKIE, nonce, max_age=3600, path="/sign-in", httponly=True, samesite="strict",
        secure=web.is_https(request),
    )  # fmt: skip


def _next(target: str | None) -> str:
    """Only a path of this site (never //host or a scheme)."""
    if (
        not target
        or not target.startswith("/")
        or target.startswith("//")
        or any(c == "\\" or ord(c) < 0x21 or ord(c) == 0x7F for c in target)  # browsers drop tabs: /\t/x
    ):
        return "/"
    return target


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    nonce = request.cookies.get(web.PRE_COOKIE, "")
    try:
        form = await web.read_form(request)
        if not nonce:
            raise web.Refused("no sign-in nonce")
        web.check_post(request, form, nonce)
    except web.Refused:
        return render(
            request,
            "problem.html",
            {"heading": "Refused", "text": "Open the sign-in page again and retry.", "title": "Refused",
             "status": 403},
            status=403,
        )  # fmt: skip
    token = form_field(form, "token")
    target = _next(form_field(form, "next"))
    error = None
    if not token or any(c.isspace() for c in token) or len(token) > 200:
        error = "Paste an API token: jct_…"
    else:
        try:
            # a valid token lacking jobs:read may still sign in: each page checks its own scope
            async with auth.session(request, token, "jobs:read"):
                pass
        except errors.Forbidden:
            pass
        except errors.Unauthorized:
            error = "This token is unknown or revoked."
    if error is not None:
        context = {"title": "Sign in", "csrf": web.csrf_for(web.secret_of(request), nonce), "next": target,
                   "expired": False, "error": error}  # fmt: skip
        return render(request, "sign_in.html", context, status=401)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        web.COOKIE, token, path="/", httponly=True, samesite="strict", secure=web.is_https(request)
    )
    response.delete_cookie(web.PRE_COOKIE, path="/sign-in")
    return response


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    try:
        form = await web.read_form(request)
        web.check_post(request, form, web.session_token(request))
    except (web.Refused, web.NotSignedIn):
        return Response("refused", status_code=403)
    response = RedirectResponse("/sign-in", status_code=303)
    clear_cookie(response, request)
    return response


# --- overview


GAUGES = ("pending", "delayed", "retrying", "running", "dead", "completed", "cancelled", "waiting")


@dataclass
class Totals:
    pending: int = 0
    delayed: int = 0
    retrying: int = 0
    running: int = 0
    dead: int = 0
    completed: int = 0
    cancelled: int = 0
    waiting: int = 0  # for their parents or their batch
    claims_per_second: float = 0.0
    completions_per_second: float = 0.0
    oldest_due_at: datetime | None = None
    rows: int = 0
    capped: bool = False  # counted by count_job_states, which stopped at its max_count

    def add(self, r: JobOverview) -> None:
        self.rows += 1
        for name in GAUGES:
            setattr(self, name, getattr(self, name) + getattr(r, name))
        self.claims_per_second += r.claims_per_second or 0.0
        self.completions_per_second += r.completions_per_second or 0.0
        if r.oldest_due_at is not None and (
            self.oldest_due_at is None or r.oldest_due_at < self.oldest_due_at
        ):
            self.oldest_due_at = r.oldest_due_at

    @classmethod
    def of_states(cls, c: StateCounts) -> Totals:
        return cls(**{name: getattr(c, name) for name in GAUGES}, capped=c.capped)


async def _beside(request: Request, scope: str, fetch: Callable[[Caller], Awaitable[T]]) -> T:
    """fetch on a pooled connection of its own, authenticated for scope as the page's is: a page's
    independent statements run at once instead of one after another."""
    async with web.signed_in(request, scope) as caller:
        return await fetch(caller)


def _backlog(r: JobOverview) -> tuple[int, int]:
    return (r.pending + r.running + r.retrying + r.dead, r.pending)


def _minutes(now: datetime) -> list[datetime]:
    start = (now - timedelta(hours=1)).replace(second=0, microsecond=0) + timedelta(minutes=1)
    return [start + timedelta(minutes=i) for i in range(60)]


@router.get("/")
async def overview(request: Request) -> Response:
    show_all = request.query_params.get("all") == "1"

    async def build(caller: Caller) -> dict[str, Any]:
        now = await caller.client.now(conn=caller.conn)

        async def checks() -> tuple[Sequence[Any], str | None]:
            if caller.tenant_id is not None or not caller.may("tenants:read"):
                return [], None  # the panel is left out
            return await _beside(
                request,
                "tenants:read",
                lambda c: _optional(c, "tenants:read", lambda: c.client.health_checks(conn=c.conn)),
            )

        # four statements at once, each on a connection (and a token check) of its own
        rows, rates, fair, (health, health_error) = await asyncio.gather(
            caller.client.job_overview(WINDOW, conn=caller.conn),
            _beside(
                request, "jobs:read", lambda c: c.client.minute_rates(now - timedelta(hours=1), conn=c.conn)
            ),
            _beside(request, "jobs:read", lambda c: c.client.fairness(WINDOW, conn=c.conn)),
            checks(),
        )
        totals = Totals()
        for r in rows:
            totals.add(r)
        rows.sort(key=_backlog, reverse=True)
        minutes = _minutes(now)
        by_minute = {m.minute.replace(second=0, microsecond=0): m for m in rates}
        series = [by_minute.get(m) for m in minutes]
        throughput = charts.line_chart(
            "Claims and completions per second, last hour",
            minutes,
            [
                ("submitted", "submitted", [(s.submitted / 60 if s else 0.0) for s in series]),
                ("claimed", "claimed", [(s.claimed / 60 if s else 0.0) for s in series]),
                ("succeeded", "succeeded", [(s.succeeded / 60 if s else 0.0) for s in series]),
                ("failed", "failed", [(s.failed / 60 if s else 0.0) for s in series]),
            ],
            unit="/s",
        )
        waits = charts.line_chart(
            "Wait from due to claimed, last hour",
            minutes,
            [
                ("p50", "p50", [s.wait_p50 if s else None for s in series]),
                ("p99", "p99", [s.wait_p99 if s else None for s in series]),
            ],
            formatter="seconds",
        )
        fair.sort(key=lambda f: (f.claims, f.running), reverse=True)
        return {
            "health": health,
            "health_error": health_error,
            "title": "Overview",
            "now": now,
            "rows": rows if show_all else rows[:GRID_ROWS],
            "row_count": len(rows),
            "show_all": show_all,
            "totals": totals,
            "throughput": throughput,
            "waits": waits,
            "fair": fair[:FAIR_ROWS],
            "fair_count": len(fair),
            "window_minutes": int(WINDOW.total_seconds() // 60),
            "live": True,
        }

    return await page(request, "jobs:read", "overview.html", build, "overview")


# --- jobs: filter, list, bulk

FILTER_FIELDS = ("tenant", "queue", "job", "dedup_key", "subject_key", "concurrency_key",
                 "created_after", "created_before", "error")  # fmt: skip
IDS = re.compile(r"[\s,]+")


@dataclass
class JobFilter:
    """The jobs page's filter, from its query string, as the bulk filter's JSON (find_jobs,
    count_jobs and the bulk actions take it as is)."""

    values: dict[str, str] = field(default_factory=dict)
    states: list[str] = field(default_factory=list)
    job_ids: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, params: Any) -> JobFilter:
        f = cls()
        for name in FILTER_FIELDS:
            value = str(params.get(name, "") or "").strip()
            if value:
                f.values[name] = value
        f.states = [s for s in params.getlist("state") if s in STATES]
        for part in IDS.split(f.values.get("job", "")):
            if part:
                if part.isdigit() and 0 < int(part) < 2**63:
                    f.job_ids.append(int(part))
                else:
                    f.problems.append(f"job id {part!r} is not a job id")
        return f

    def bulk(self) -> dict[str, Any]:
        """The filter as jobctl._job_filter takes it."""
        v = self.values
        out: dict[str, Any] = {
            "tenant_id": v.get("tenant"),
            "queue": v.get("queue"),
            "state": self.states or None,
            "job_ids": self.job_ids[:1000] or None,
            "dedup_key": v.get("dedup_key"),
            "subject_key": v.get("subject_key"),
            "concurrency_key": v.get("concurrency_key"),
            "created_after": _utc(v.get("created_after")),
            "created_before": _utc(v.get("created_before")),
            "error_contains": v.get("error"),
        }
        return {k: x for k, x in out.items() if x is not None}

    def query(self, keep_states: bool = True, **extra: Any) -> str:
        """The filter as a query string, with extra parameters (None: left out)."""
        pairs = list(self.values.items()) + [("state", s) for s in self.states if keep_states]
        pairs += [(k, str(x)) for k, x in extra.items() if x is not None]
        return urlencode(pairs)


def _utc(text: str | None) -> str | None:
    """A datetime-local value (no zone) read as UTC, ISO 8601."""
    when = _when(text)
    return when.isoformat() if when else None


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass
class Listing:
    jobs: list[JobInfo]
    next_before: int | None


async def _list(caller: Caller, f: JobFilter, before: int | None) -> Listing:
    """A page of the filter's jobs, newest first (find_jobs: the filter and the tenant rule are the
    SQL's), and where the next page starts."""
    jobs = await caller.client.find_jobs(f.bulk(), before, PAGE + 1, conn=caller.conn)
    more = len(jobs) > PAGE
    return Listing(jobs[:PAGE], jobs[PAGE - 1].job_id if more else None)


STATE_CHIPS = (  # the counters' gauges, and the job state each lists
    ("pending", "pending"), ("delayed", "pending"), ("retrying", "failed"), ("running", "running"),
    ("waiting", "waiting"), ("dead", "dead"), ("completed", "completed"), ("cancelled", "cancelled"),
)  # fmt: skip
# filter fields the counters cannot answer: with any of them the chips count the filter's jobs
NARROWING = ("job", "dedup_key", "subject_key", "concurrency_key", "created_after", "created_before", "error")


@router.get("/jobs")
async def jobs(request: Request) -> Response:
    f = JobFilter.of(request.query_params)
    before_text = request.query_params.get("before", "")
    before = int(before_text) if before_text.isdigit() and 0 < int(before_text) < 2**63 else None

    async def build(caller: Caller) -> dict[str, Any]:
        tenant = f.values.get("tenant") or caller.tenant_id
        totals = Totals()
        if any(k in f.values for k in NARROWING):
            # job ids, keys, times, error text: the filter's own jobs counted (count_job_states)
            if not f.problems:
                try:
                    async with caller.conn.transaction():  # a savepoint: a refusal leaves the page's
                        totals = Totals.of_states(
                            await caller.client.count_job_states(f.bulk(), conn=caller.conn)
                        )
                except errors.InvalidInput:
                    pass  # the count below says what is wrong with the filter
        else:
            for r in await caller.client.job_overview(
                WINDOW, tenant, f.values.get("queue"), conn=caller.conn
            ):
                totals.add(r)
        tenants = (
            []
            if caller.tenant_id
            else [t.tenant_id for t in await caller.client.list_tenants(conn=caller.conn)]
        )
        listing: Listing | None = None
        count = None
        problems = list(f.problems)
        if not problems:
            try:
                count = await caller.client.count_jobs(f.bulk(), conn=caller.conn)
            except errors.InvalidInput as e:
                problems.append(str(e))
        if not problems:
            listing = await _list(caller, f, before)
        return {
            "title": "Jobs",
            "now": await caller.client.now(conn=caller.conn),
            "f": f,
            "tenant": tenant,
            "tenants": tenants,
            "totals": totals,
            "chips": STATE_CHIPS,
            "states": STATES,
            "listing": listing,
            "count": count,
            "problems": problems,
            "before": before,
            "note": _note(request),
            "live": True,
        }

    return await page(request, "jobs:read", "jobs.html", build, "jobs")


def _job_number(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 2**63:
        raise errors.NotFound(f"job {text} not found")
    return int(text)


@router.get("/jobs/{job_id}")
async def job_detail(request: Request, job_id: str) -> Response:
    async def build(caller: Caller) -> dict[str, Any]:
        number = _job_number(job_id)
        job = await caller.client.get_job(number, conn=caller.conn)
        if job is None:
            raise errors.NotFound(f"No job {number}, or it belongs to another tenant.")
        history = await caller.client.job_history(number, conn=caller.conn)
        actions = await caller.client.job_actions(job.state, conn=caller.conn)
        return {
            "title": f"Job {number}",
            "job": job,
            "history": history,
            **await _flow(caller, job),
            "now": await caller.client.now(conn=caller.conn),
            "can_cancel": "cancel" in actions,
            "can_retry": "retry" in actions,
            "note": _note(request),
            "live": True,
        }

    return await page(request, "jobs:read", "job.html", build, "jobs")


FLOW_ROWS = 200  # a workflow's jobs shown on a job's page


async def _flow(caller: Caller, job: JobInfo) -> dict[str, Any]:
    """What a job's page shows of its workflow: its parents with their states (find_jobs by
    id, hot or archived), its workflow's jobs (the client's workflow_jobs: find_jobs has no workflow
    filter) with the names they were given at submit, and its batch (get_batch)."""
    parents: list[JobInfo] = []
    if job.depends_on:
        ids = sorted(set(job.depends_on))[:1000]
        found = await caller.client.find_jobs({"job_ids": ids}, None, 1000, conn=caller.conn)
        parents = sorted(found, key=lambda p: p.job_id)
    flow: list[JobInfo] = []
    if job.workflow_id is not None:
        flow = await caller.client.workflow_jobs(job.workflow_id, conn=caller.conn)
    batch = None
    if job.batch_id is not None:
        batch = await caller.client.get_batch(job.batch_id, conn=caller.conn)
    shown = {p.job_id for p in parents}
    return {
        "parents": parents,
        "parents_gone": [i for i in sorted(set(job.depends_on or [])) if i not in shown],
        "flow": flow[:FLOW_ROWS],
        "flow_more": len(flow) > FLOW_ROWS,
        # the names submit_workflow gave them: the depends-on column shows those
        "flow_names": {w.job_id: w.workflow_name for w in flow if w.workflow_name is not None},
        "batch": batch,
    }


@router.post("/jobs/{job_id}/cancel")
async def cancel_job(request: Request, job_id: str) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        number = _job_number(job_id)
        await caller.client.cancel_job(number, conn=caller.conn)
        return _back(f"/jobs/{number}", "cancelled")

    return await action(request, "jobs:cancel", act, "jobs")


@router.post("/jobs/{job_id}/retry")
async def retry_job(request: Request, job_id: str) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        number = _job_number(job_id)
        await caller.client.retry_job(number, conn=caller.conn)
        return _back(f"/jobs/{number}", "retried")

    return await action(request, "jobs:retry", act, "jobs")


BULK = {"retry-selected": ("retry", True), "retry-all": ("retry", False),
        "cancel-selected": ("cancel", True), "cancel-all": ("cancel", False),
        "delete-selected": ("delete", True), "delete-all": ("delete", False)}  # fmt: skip
# the scope each bulk action authenticates for (delete_jobs checks jobs:delete itself)
BULK_SCOPES = {"retry": "jobs:retry", "cancel": "jobs:cancel", "delete": "jobs:delete"}


def _bulk_request(form: dict[str, list[str]]) -> tuple[str, dict[str, Any]]:
    """The action and the filter a bulk form asks for: the checked ids, or the page's filter."""
    what = BULK.get(form_field(form, "do"))
    if what is None:
        raise errors.InvalidInput("unknown bulk action", field="do")
    verb, selected = what
    if selected:
        ids = sorted({int(i) for i in form.get("job_id", []) if i.isdigit() and 0 < int(i) < 2**63})
        if not ids:
            raise errors.InvalidInput("Select at least one job first.", field="job_id")
        return verb, {"job_ids": ids[:1000]}
    params = {k: v[0] for k, v in form.items() if k in FILTER_FIELDS}

    class Params(dict[str, str]):
        def getlist(self, key: str) -> list[str]:
            return form.get(key, []) if key == "state" else []

    f = JobFilter.of(Params(params))
    if f.problems:
        raise errors.InvalidInput(f.problems[0], field="job")
    return verb, f.bulk()


@router.post("/jobs/bulk")
async def bulk_confirm(request: Request) -> Response:
    """The confirmation: what the action would take, counted first (count_jobs)."""
    try:
        form = await web.read_form(request)
    except web.Refused:
        return Response("refused", status_code=403)
    verb = (BULK.get(form_field(form, "do")) or ("retry", True))[0]

    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        verb, job_filter = _bulk_request(form)
        me = await me_for(caller, request)
        now = await caller.client.now(conn=caller.conn)
        if verb in ("retry", "delete"):
            # pinned: a job that dies again while the loop runs is not retried twice (nor a job
            # retried and finished again deleted)
            pinned = job_filter.get("finished_before")
            job_filter["finished_before"] = min(pinned, now.isoformat()) if pinned else now.isoformat()
        count = await caller.client.count_jobs(job_filter, verb, conn=caller.conn)
        context = {"title": f"Confirm {verb}", "verb": verb, "count": count, "filter": job_filter,
                   "filter_json": json.dumps(job_filter), "section": "jobs", "now": now}  # fmt: skip
        return render(request, "bulk_confirm.html", context, me=me)

    return await action(request, BULK_SCOPES[verb], act, "jobs")  # (starlette keeps the body read above)


@dataclass
class BulkReport:
    acted: int = 0
    skipped: int = 0
    batches: int = 0
    last_id: int | None = None
    done: bool = False
    stopped: str | None = None
    retry_after: Decimal | None = None


@router.post("/jobs/bulk/run")
async def bulk_run(request: Request) -> Response:
    """The confirmed action: retry_jobs or cancel_jobs, one batch a transaction, each re-authenticated,
    until done, stopped by a tenant's room, or BULK_SECONDS; then what it did."""
    try:
        form = await web.read_form(request)
        web.check_post(request, form, web.session_token(request))
    except (web.Refused, web.NotSignedIn):
        return Response("refused", status_code=403)
    verb = form_field(form, "verb")
    if verb not in BULK_SCOPES:
        return Response("unknown action", status_code=400)
    try:
        job_filter = json.loads(form_field(form, "filter", "{}"))
        after_text = form_field(form, "after_id")
        after = int(after_text) if after_text.isdigit() else None
    except ValueError:
        return Response("bad filter", status_code=400)
    report = BulkReport(last_id=after)
    started = time.monotonic()
    me: Me | None = None
    scope = BULK_SCOPES[verb]
    try:
        while not report.done and report.stopped is None and time.monotonic() - started < BULK_SECONDS:
            async with web.signed_in(request, scope) as caller:
                me = Me.of(caller, request)
                runs = {"retry": caller.client.retry_jobs, "cancel": caller.client.cancel_jobs,
                        "delete": caller.client.delete_jobs}  # fmt: skip
                run = runs[verb]
                batch = await run(job_filter, BULK_BATCH, report.last_id, conn=caller.conn)
            report.batches += 1
            report.acted += batch.acted
            report.skipped += batch.skipped
            report.last_id = batch.last_id if batch.last_id is not None else report.last_id
            report.done = batch.done
            report.stopped, report.retry_after = batch.stopped, batch.retry_after
    except errors.Unauthorized:
        return Response(status_code=303, headers={"location": "/sign-in"})
    except errors.JobctlError as e:
        if report.batches == 0:
            from jobctl.dashboard.pages import problem

            return problem(request, e, scope, me, "jobs")
        report.stopped = str(e)
    context = {"title": f"{verb.capitalize()}: done" if report.done else f"{verb.capitalize()}: paused",
               "verb": verb, "report": report, "filter_json": json.dumps(job_filter), "section": "jobs",
               "filter": job_filter}  # fmt: skip
    return render(request, "bulk_done.html", context, me=me)


# --- queues


QUEUE_PAGE = 100  # queues a page (jobctl.queue_overview, keyset by name: ?after=<last name>)


@router.get("/queues")
async def queues(request: Request) -> Response:
    after = request.query_params.get("after") or None

    async def build(caller: Caller) -> dict[str, Any]:
        rows = await caller.client.queue_overview(after, QUEUE_PAGE + 1, WINDOW, conn=caller.conn)
        more = len(rows) > QUEUE_PAGE
        rows = rows[:QUEUE_PAGE]
        return {"title": "Queues", "queues": rows, "note": _note(request), "live": True, "after": after,
                "next_after": rows[-1].queue if more else None,
                "now": await caller.client.now(conn=caller.conn)}  # fmt: skip

    return await page(request, "queues:read", "queues.html", build, "queues")


def _queue_name(name: str) -> str:
    if not 0 < len(name) <= 200:
        raise errors.InvalidInput("a queue name is 1 to 200 characters", field="queue")
    return name


# The actions name what they act on in form fields, not in the path: any name fits a field.


@router.post("/queues/pause")
async def pause_queue(request: Request) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        await caller.client.pause_queue(_queue_name(form_field(form, "queue")), conn=caller.conn)
        return _back("/queues", "paused")

    return await action(request, "queues:write", act, "queues")


@router.post("/queues/resume")
async def resume_queue(request: Request) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        await caller.client.resume_queue(_queue_name(form_field(form, "queue")), conn=caller.conn)
        return _back("/queues", "resumed")

    return await action(request, "queues:write", act, "queues")


def _optional_int(text: str, name: str) -> int | None:
    if not text:
        return None
    if not re.fullmatch(r"\d{1,9}", text):
        raise errors.InvalidInput(f"{name} must be a whole number (empty: no limit)", field=name)
    return int(text)


def _optional_rate(text: str, name: str) -> Decimal | None:
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise errors.InvalidInput(f"{name} must be a number (empty: no limit)", field=name) from None
    return value


@router.post("/queues/limits")
async def queue_limits(request: Request) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        queue = _queue_name(form_field(form, "queue"))
        current = await caller.client.get_queue(queue, conn=caller.conn)
        await caller.client.put_queue(
            queue,
            max_running=_optional_int(form_field(form, "max_running"), "max_running"),
            claim_rate=_optional_rate(form_field(form, "claim_rate"), "claim_rate"),
            claim_burst=_optional_int(form_field(form, "claim_burst"), "claim_burst"),
            paused=current.paused if current is not None else False,
            conn=caller.conn,
        )
        return _back("/queues", "saved")

    return await action(request, "queues:write", act, "queues")


# --- tenants


@router.get("/tenants")
async def tenants(request: Request) -> Response:
    async def build(caller: Caller) -> dict[str, Any]:
        client, conn = caller.client, caller.conn
        listed = await client.list_tenants(conn=conn)
        tokens, tokens_error = await _optional(
            caller, "tenants:read", lambda: client.list_api_tokens(conn=conn)
        )
        grants, grants_error = await _optional(
            caller, "tenants:read", lambda: client.list_tenant_grants(conn=conn)
        )
        audit, audit_error = await _optional(caller, "audit:read", lambda: client.list_audit(conn=conn))
        return {"title": "Tenants", "tenants": listed, "note": _note(request), "tokens": tokens,
                "tokens_error": tokens_error, "grants": grants, "grants_error": grants_error, "audit": audit,
                "audit_error": audit_error}  # fmt: skip

    return await page(request, "jobs:read", "tenants.html", build, "tenants")


async def _optional(
    caller: Caller, scope: str, fetch: Callable[[], Awaitable[Sequence[Any]]]
) -> tuple[Sequence[Any], str | None]:
    """Rows of a part of a page this token may not see: ([], why) instead of failing the page. The
    database decides (the token's scope, every tenant or one); a savepoint keeps the page's
    transaction usable after a refusal."""
    try:
        async with caller.conn.transaction():
            return await fetch(), None
    except errors.Forbidden:
        return [], f"Not for this token: it needs the scope {scope}" + (
            "." if caller.tenant_id is None else ", and some parts need a token of every tenant."
        )


def _tenant_name(name: str) -> str:
    if not 0 < len(name) <= 200:
        raise errors.InvalidInput("a tenant id is 1 to 200 characters", field="tenant_id")
    return name


@router.post("/tenants/pause")
async def pause_tenant(request: Request) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        await caller.client.pause_tenant(_tenant_name(form_field(form, "tenant")), conn=caller.conn)
        return _back("/tenants", "paused")

    return await action(request, "tenants:write", act, "tenants")


@router.post("/tenants/resume")
async def resume_tenant(request: Request) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        await caller.client.resume_tenant(_tenant_name(form_field(form, "tenant")), conn=caller.conn)
        return _back("/tenants", "resumed")

    return await action(request, "tenants:write", act, "tenants")


# --- schedules


@router.get("/schedules")
async def schedules(request: Request) -> Response:
    async def build(caller: Caller) -> dict[str, Any]:
        listed = await caller.client.list_schedules(conn=caller.conn)
        return {"title": "Schedules", "schedules": listed, "note": _note(request),
                "now": await caller.client.now(conn=caller.conn), "live": True}  # fmt: skip

    return await page(request, "schedules:read", "schedules.html", build, "schedules")


@router.get("/schedules/runs")
async def schedule_runs(request: Request) -> Response:
    """One schedule (tenant and name in the query) and its recent runs (jobctl.schedule_runs)."""
    tenant, name = request.query_params.get("tenant", ""), request.query_params.get("name", "")

    async def build(caller: Caller) -> dict[str, Any]:
        tenant_id = _tenant_name(tenant)
        runs = await caller.client.schedule_runs(tenant_id, name, max_rows=50, conn=caller.conn)
        found = await caller.client.get_schedule(tenant_id, name, conn=caller.conn)
        return {"title": f"Schedule {name}", "tenant": tenant_id, "name": name, "schedule": found,
                "runs": runs, "now": await caller.client.now(conn=caller.conn), "live": True}  # fmt: skip

    return await page(request, "jobs:read", "schedule_runs.html", build, "schedules")


ScheduleCall = Callable[..., Awaitable[Any]]


async def _schedule_action(request: Request, pick: str, note: str) -> Response:
    async def act(caller: Caller, form: dict[str, list[str]]) -> Response:
        calls: dict[str, ScheduleCall] = {
            "pause": caller.client.pause_schedule,
            "resume": caller.client.resume_schedule,
            "run": caller.client.run_schedule,
        }
        tenant, name = _tenant_name(form_field(form, "tenant")), form_field(form, "name")
        result = await calls[pick](tenant, name, conn=caller.conn)
        if pick == "run":
            return RedirectResponse(f"/jobs/{int(result)}?note=ran", status_code=303)
        return _back("/schedules", note)

    return await action(request, "schedules:write", act, "schedules")


@router.post("/schedules/pause")
async def pause_schedule(request: Request) -> Response:
    return await _schedule_action(request, "pause", "paused")


@router.post("/schedules/resume")
async def resume_schedule(request: Request) -> Response:
    return await _schedule_action(request, "resume", "resumed")


@router.post("/schedules/run")
async def run_schedule(request: Request) -> Response:
    return await _schedule_action(request, "run", "ran")


# --- workers


@router.get("/workers")
async def workers(request: Request) -> Response:
    async def build(caller: Caller) -> dict[str, Any]:
        listed = await caller.client.list_workers(conn=caller.conn)
        return {"title": "Workers", "workers": listed, "now": await caller.client.now(conn=caller.conn),
                "live": True}  # fmt: skip

    return await page(request, "workers:read", "workers.html", build, "workers")
