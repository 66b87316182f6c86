"""The dashboard's pages and actions. Each page authenticates the session's token for one scope and
reads through the app's AsyncClient on the request's connection, as the API's endpoints do: the SQL
functions decide what the token's tenant may see and do. Figures come from the counters
(job_overview, job_rates, fairness), never from a scan of the jobs."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field, fields, replace
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
from jobctl.client import BulkBatch, JobOverview, StateCounts
from jobctl.contract import STATES
from jobctl.dashboard import charts, web
from jobctl.dashboard.pages import (
    Build,
    Form,
    Me,
    action,
    clear_cookie,
    me_for,
    page,
    problem,
    refused,
    render,
)
from jobctl.dashboard.pages import field as form_field

router = APIRouter(include_in_schema=False)
T = TypeVar("T")

WINDOW = timedelta(minutes=5)  # the rates' and fairness' window
GRID_ROWS = 100  # the overview's tenant x queue rows, busiest first, unless ?all=1
FAIR_ROWS = 24  # the fairness strip's tenants, most claims first
PAGE = 50  # jobs per page
BULK_SECONDS = 20.0  # a bulk action runs batches this long, then offers to continue
BULK_BATCH = 1000


def _back(path: str, note: str) -> Response:
    return RedirectResponse(f"{path}?note={note}", status_code=303)


def _paged(rows: list[T], size: int) -> tuple[list[T], T | None]:
    """A page of rows asked for one over size, and its last row when more follow."""
    return rows[:size], rows[size - 1] if len(rows) > size else None


def _page(path: str, scope: str, section: str, template: str = "") -> Callable[[Build], Build]:
    """A GET page (pages.page): the decorated build(request, caller) gathers its context for the template
    (default: <section>.html)."""

    def register(build: Build) -> Build:
        async def endpoint(request: Request) -> Response:
            return await page(request, scope, template or f"{section}.html", build, section)

        router.add_api_route(path, endpoint, methods=["GET"])
        return build

    return register


# --- signing in and out


def _sign_in_page(
    request: Request, nonce: str, target: str, expired: bool = False, error: str | None = None
) -> Response:
    context = {"title": "Sign in", "csrf": web.csrf_for(request, nonce), "next": target, "expired": expired,
               "error": error}  # fmt: skip
    return render(request, "sign_in.html", context, status=200 if error is None else 401)


@router.get("/sign-in")
async def sign_in_form(request: Request) -> Response:
    nonce, params = request.cookies.get(web.PRE_COOKIE) or secrets.token_hex(32), request.query_params
    response = _sign_in_page(request, nonce, _next(params.get("next")), expired=bool(params.get("expired")))
    response.set_cookie(
        web.PRE_COOKIE, nonce, max_age=3600, path="/sign-in", httponly=True, samesite="strict",
        secure=request.url.scheme == "https",
    )  # fmt: skip
    return response


def _next(target: str | None) -> str:
    """Only a path of this site (never //host or a scheme)."""
    path = target or ""
    unsafe = any(c == "\\" or ord(c) < 0x21 or ord(c) == 0x7F for c in path)  # browsers drop tabs: /\t/x
    return path if path.startswith("/") and not path.startswith("//") and not unsafe else "/"


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    nonce = request.cookies.get(web.PRE_COOKIE, "")
    try:
        if not nonce:
            raise web.Refused("no sign-in nonce")
        form = await web.checked_form(request, nonce)
    except web.Refused:
        return refused(request, "Open the sign-in page again and retry.")
    token = form_field(form, "token")
    target = _next(form_field(form, "next"))
    if not token or any(c.isspace() for c in token) or len(token) > 200:
        return _sign_in_page(request, nonce, target, error="Paste an API token: jct_…")
    try:
        # a valid token lacking jobs:read may still sign in: each page checks its own scope
        with suppress(errors.Forbidden):
            async with auth.session(request, token, "jobs:read"):
                pass
    except errors.Unauthorized:
        return _sign_in_page(request, nonce, target, error="This token is unknown or revoked.")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        web.COOKIE, token, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    response.delete_cookie(web.PRE_COOKIE, path="/sign-in")
    return response


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    try:
        await web.checked_form(request)
    except (web.Refused, web.NotSignedIn):
        return Response("refused", status_code=403)
    response = RedirectResponse("/sign-in", status_code=303)
    clear_cookie(response, request)
    return response


# --- overview


GAUGES = tuple(f.name for f in fields(StateCounts) if f.name != "capped")  # the counters' gauges


def _totals(rows: Sequence[JobOverview]) -> dict[str, Any]:
    """job_overview's rows summed: each gauge, claims/s, the oldest due time (the overview's tiles, the
    jobs page's chips: the same keys as count_job_states' StateCounts)."""
    return {name: sum(getattr(r, name) for r in rows) for name in GAUGES} | {
        "claims_per_second": sum(r.claims_per_second or 0.0 for r in rows),
        "oldest_due_at": min((r.oldest_due_at for r in rows if r.oldest_due_at is not None), default=None),
        "rows": len(rows),
        "capped": False,
    }


async def _beside(request: Request, scope: str, fetch: Callable[[Caller], Awaitable[T]]) -> T:
    """fetch on a pooled connection of its own, authenticated for scope as the page's is: a page's
    independent statements run at once instead of one after another."""
    async with auth.session(request, web.session_token(request), scope) as caller:
        return await fetch(caller)


@_page("/", "jobs:read", "overview")
async def overview(request: Request, caller: Caller) -> dict[str, Any]:
    now = await caller.client.now(conn=caller.conn)

    async def checks() -> tuple[Sequence[Any], str | None]:
        if caller.tenant_id is not None or not caller.may("tenants:read"):
            return [], None  # the panel is left out
        return await _beside(
            request, "tenants:read", lambda c: _optional(c, "tenants:read", c.client.health_checks)
        )

    # four statements at once, each on a connection (and a token check) of its own
    rows, rates, fair, (health, health_error) = await asyncio.gather(
        caller.client.job_overview(WINDOW, conn=caller.conn),
        _beside(request, "jobs:read", lambda c: c.client.minute_rates(now - timedelta(hours=1), conn=c.conn)),
        _beside(request, "jobs:read", lambda c: c.client.fairness(WINDOW, conn=c.conn)),
        checks(),
    )
    rows.sort(key=lambda r: (r.pending + r.running + r.retrying + r.dead, r.pending), reverse=True)
    start = (now - timedelta(hours=1)).replace(second=0, microsecond=0) + timedelta(minutes=1)
    minutes = [start + timedelta(minutes=i) for i in range(60)]
    by_minute = {m.minute.replace(second=0, microsecond=0): m for m in rates}
    series = [by_minute.get(m) for m in minutes]
    fair.sort(key=lambda f: (f.claims, f.running), reverse=True)
    return {
        "health": health,
        "health_error": health_error,
        "now": now,
        "rows": rows if request.query_params.get("all") == "1" else rows[:GRID_ROWS],
        "row_count": len(rows),
        "totals": _totals(rows),
        "throughput": charts.line_chart(
            "Claims and completions per second, last hour",
            minutes,
            [
                (name, [getattr(s, name) / 60 if s else 0.0 for s in series])
                for name in ("submitted", "claimed", "succeeded", "failed")
            ],
            lambda v: charts.number(v, "/s"),
        ),
        "waits": charts.line_chart(
            "Wait from due to claimed, last hour",
            minutes,
            [(q, [getattr(s, f"wait_{q}") if s else None for s in series]) for q in ("p50", "p99")],
            charts.seconds,
        ),
        "fair": fair[:FAIR_ROWS],
        "fair_count": len(fair),
        "window_minutes": int(WINDOW.total_seconds() // 60),
    }


# --- jobs: filter, list, bulk

# the jobs page's filter fields; the first two the counters can answer, the others narrow the chips
# to the filter's own jobs (count_job_states)
FILTER_FIELDS = ("tenant", "queue", "job", "dedup_key", "subject_key", "concurrency_key",
                 "created_after", "created_before", "error", "parked")  # fmt: skip
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
    def of(cls, form: Form) -> JobFilter:
        """From the query string or a form that carries it, each field's first value."""
        f = cls()
        f.values = {name: value for name in FILTER_FIELDS if (value := form_field(form, name))}
        f.states = [s for s in form.get("state", []) if s in STATES]
        for part in filter(None, IDS.split(f.values.get("job", ""))):
            if part.isdigit() and 0 < int(part) < 2**63:
                f.job_ids.append(int(part))
            else:
                f.problems.append(f"job id {part!r} is not a job id")
        return f

    def bulk(self) -> dict[str, Any]:
        """The filter as jobctl._job_filter takes it."""
        v = self.values
        out = {"tenant_id": v.get("tenant"), "queue": v.get("queue"), "state": self.states or None,
               "job_ids": self.job_ids[:1000] or None}  # fmt: skip
        out |= {name: v.get(name) for name in ("dedup_key", "subject_key", "concurrency_key")}
        out |= {name: _utc(v.get(name)) for name in ("created_after", "created_before")}
        out["error_contains"] = v.get("error")
        out["parked"] = v.get("parked")  # the database checks it (filter.parked)
        return {k: x for k, x in out.items() if x is not None}

    def query(self, keep_states: bool = True, **extra: Any) -> str:
        """The filter as a query string, with extra parameters (None: left out)."""
        pairs = list(self.values.items()) + [("state", s) for s in self.states if keep_states]
        pairs += [(k, str(x)) for k, x in extra.items() if x is not None]
        return urlencode(pairs)


def _utc(text: str | None) -> str | None:
    """A datetime-local value (no zone) read as UTC, ISO 8601 (None: none, or not a time)."""
    try:
        when = datetime.fromisoformat(text or "")
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat()


STATE_CHIPS = (  # the counters' gauges, and the job state each lists
    ("pending", "pending"), ("delayed", "pending"), ("retrying", "failed"), ("running", "running"),
    ("waiting", "waiting"), ("dead", "dead"), ("completed", "completed"), ("cancelled", "cancelled"),
)  # fmt: skip


@_page("/jobs", "jobs:read", "jobs")
async def jobs(request: Request, caller: Caller) -> dict[str, Any]:
    params = request.query_params
    f = JobFilter.of({name: params.getlist(name) for name in params})
    before_text = params.get("before", "")
    before = int(before_text) if before_text.isdigit() and 0 < int(before_text) < 2**63 else None
    client, conn = caller.client, caller.conn
    totals = _totals([])
    if all(name in ("tenant", "queue") for name in f.values):  # the counters answer
        tenant = f.values.get("tenant") or caller.tenant_id
        totals = _totals(await client.job_overview(WINDOW, tenant, f.values.get("queue"), conn=conn))
    elif not f.problems:  # job ids, keys, times, error text: the filter's own jobs counted
        with suppress(errors.InvalidInput):  # the count below says what is wrong with the filter
            async with conn.transaction():  # a savepoint: a refusal leaves the page's
                totals = asdict(await client.count_job_states(f.bulk(), conn=conn))
    tenants = [] if caller.tenant_id else [t.tenant_id for t in await client.list_tenants(conn=conn)]
    count = listed = last = None  # the jobs listed: none until the filter is one the database takes
    problems = list(f.problems)
    if not problems:
        try:
            count = await client.count_jobs(f.bulk(), conn=conn)
            listed, last = _paged(await client.find_jobs(f.bulk(), before, PAGE + 1, conn=conn), PAGE)
        except errors.InvalidInput as e:
            problems.append(str(e))
    return {"f": f, "tenants": tenants, "totals": totals, "chips": STATE_CHIPS, "states": STATES,
            "jobs": listed, "next_before": last.job_id if last else None, "count": count,
            "problems": problems, "before": before}  # fmt: skip


def _job_number(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 2**63:
        raise errors.NotFound(f"job {text} not found")
    return int(text)


FLOW_ROWS = 200  # a workflow's jobs shown on a job's page


@_page("/jobs/{job_id}", "jobs:read", "jobs", "job.html")
async def job_detail(request: Request, caller: Caller) -> dict[str, Any]:
    """A job, its history, its saved steps (job_steps) and what its state allows (job_actions); of its
    workflow: its parents with their states (find_jobs by id, hot or archived), its workflow's jobs (the
    client's workflow_jobs: find_jobs has no workflow filter) with the names they were given at submit,
    and its batch (get_batch)."""
    number = _job_number(request.path_params["job_id"])
    client, conn = caller.client, caller.conn
    job = await client.get_job(number, conn=conn)
    if job is None:
        raise errors.NotFound(f"No job {number}, or it belongs to another tenant.")
    ids = sorted(set(job.depends_on or []))
    found = await client.find_jobs({"job_ids": ids[:1000]}, None, 1000, conn=conn) if ids else []
    parents = sorted(found, key=lambda p: p.job_id)
    flow = [] if job.workflow_id is None else await client.workflow_jobs(job.workflow_id, conn=conn)
    shown = {p.job_id for p in parents}
    return {
        "title": f"Job {number}",
        "job": job,
        "history": await client.job_history(number, conn=conn),
        "steps": await client.job_steps(number, conn=conn),
        "parents": parents,
        "parents_gone": [i for i in ids if i not in shown],
        "flow": flow[:FLOW_ROWS],
        "flow_more": len(flow) > FLOW_ROWS,
        # the names submit_workflow gave them: the depends-on column shows those
        "flow_names": {w.job_id: w.workflow_name for w in flow if w.workflow_name is not None},
        "batch": None if job.batch_id is None else await client.get_batch(job.batch_id, conn=conn),
        "actions": await client.job_actions(job.state, conn=conn),
    }


# retry_jobs, cancel_jobs, delete_jobs, each authenticated for jobs:<verb> (delete_jobs checks
# jobs:delete itself)
BULK_VERBS = ("retry", "cancel", "delete")
# the bulk form's buttons: do=<verb>-selected (the checked jobs) or <verb>-all (the page's filter)
BULK = {
    f"{verb}-{which}": (verb, which == "selected") for verb in BULK_VERBS for which in ("selected", "all")
}


def _bulk_request(form: Form) -> tuple[str, dict[str, Any]]:
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
    f = JobFilter.of(form)
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

    async def act(caller: Caller, form: Form) -> Response:
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

    return await action(request, f"jobs:{verb}", act, "jobs")  # (starlette keeps the body read above)


@router.post("/jobs/bulk/run")
async def bulk_run(request: Request) -> Response:
    """The confirmed action: retry_jobs, cancel_jobs or delete_jobs, one batch a transaction, each
    re-authenticated, until done, stopped by a tenant's room, or BULK_SECONDS; then what it did."""
    try:
        form = await web.checked_form(request)
    except (web.Refused, web.NotSignedIn):
        return Response("refused", status_code=403)
    verb = form_field(form, "verb")
    if verb not in BULK_VERBS:
        return Response("unknown action", status_code=400)
    try:
        job_filter = json.loads(form_field(form, "filter", "{}"))
        after_text = form_field(form, "after_id")
        after = int(after_text) if after_text.isdigit() else None
    except ValueError:
        return Response("bad filter", status_code=400)
    # the report: the batches' counts summed, the last one's state and the last id any batch reached
    report, batches = BulkBatch(0, 0, after, False, None, None), 0
    started = time.monotonic()
    me: Me | None = None
    scope = f"jobs:{verb}"
    try:
        while not report.done and report.stopped is None and time.monotonic() - started < BULK_SECONDS:
            async with auth.session(request, web.session_token(request), scope) as caller:
                me = Me.of(caller, request)
                run = getattr(caller.client, f"{verb}_jobs")  # retry_jobs, cancel_jobs, delete_jobs
                batch = await run(job_filter, BULK_BATCH, report.last_id, conn=caller.conn)
            batches += 1
            report = replace(batch, acted=report.acted + batch.acted, skipped=report.skipped + batch.skipped,
                             last_id=report.last_id if batch.last_id is None else batch.last_id)  # fmt: skip
    except errors.Unauthorized:
        return Response(status_code=303, headers={"location": "/sign-in"})
    except errors.JobctlError as e:
        if batches == 0:
            return problem(request, e, scope, me, "jobs")
        report = replace(report, stopped=str(e))
    title = f"{verb.capitalize()}: {'done' if report.done else 'paused'}"
    context = {"verb": verb, "report": report, "batches": batches, "filter_json": json.dumps(job_filter),
               "section": "jobs", "title": title}  # fmt: skip
    return render(request, "bulk_done.html", context, me=me)


# --- queues


QUEUE_PAGE = 100  # queues a page (jobctl.queue_overview, keyset by name: ?after=<last name>)


@_page("/queues", "queues:read", "queues")
async def queues(request: Request, caller: Caller) -> dict[str, Any]:
    after = request.query_params.get("after") or None
    rows = await caller.client.queue_overview(after, QUEUE_PAGE + 1, WINDOW, conn=caller.conn)
    queues, last = _paged(rows, QUEUE_PAGE)
    return {"queues": queues, "after": after, "next_after": last.queue if last else None}


def _name(value: str, what: str = "a tenant id", field: str = "tenant_id") -> str:
    """A tenant's (or a queue's) name as a form or a query gives it: 1 to 200 characters."""
    if not 0 < len(value) <= 200:
        raise errors.InvalidInput(f"{what} is 1 to 200 characters", field=field)
    return value


def _optional_int(form: Form, name: str) -> int | None:
    text = form_field(form, name)
    if not text:
        return None
    if not re.fullmatch(r"\d{1,9}", text):
        raise errors.InvalidInput(f"{name} must be a whole number (empty: no limit)", field=name)
    return int(text)


def _optional_rate(form: Form, name: str) -> Decimal | None:
    text = form_field(form, name)
    if not text:
        return None
    try:
        return Decimal(text)
    except InvalidOperation:
        raise errors.InvalidInput(f"{name} must be a number (empty: no limit)", field=name) from None


@router.post("/queues/limits")
async def queue_limits(request: Request) -> Response:
    async def act(caller: Caller, form: Form) -> Response:
        queue = _name(form_field(form, "queue"), "a queue name", "queue")
        current = await caller.client.get_queue(queue, conn=caller.conn)
        await caller.client.put_queue(
            queue,
            max_running=_optional_int(form, "max_running"),
            claim_rate=_optional_rate(form, "claim_rate"),
            claim_burst=_optional_int(form, "claim_burst"),
            paused=current.paused if current is not None else False,
            conn=caller.conn,
        )
        return _back("/queues", "saved")

    return await action(request, "queues:write", act, "queues")


# The forms that act on one thing: path, the scope it needs, the client's call, the note the page shows
# after. A job is named in the path; a queue, tenant or schedule in form fields (any name fits a field).
ACTS = (
    ("/jobs/{job_id}/cancel", "jobs:cancel", "cancel_job", "cancelled"),
    ("/jobs/{job_id}/retry", "jobs:retry", "retry_job", "retried"),
    ("/queues/pause", "queues:write", "pause_queue", "paused"),
    ("/queues/resume", "queues:write", "resume_queue", "resumed"),
    ("/tenants/pause", "tenants:write", "pause_tenant", "paused"),
    ("/tenants/resume", "tenants:write", "resume_tenant", "resumed"),
    ("/schedules/pause", "schedules:write", "pause_schedule", "paused"),
    ("/schedules/resume", "schedules:write", "resume_schedule", "resumed"),
    ("/schedules/run", "schedules:write", "run_schedule", "ran"),
)


def _act(path: str, scope: str, call: str, note: str) -> None:
    """POST path: the client's call of the path's job, or of the form's queue, tenant, or tenant and
    schedule name; then back to the job's page (a schedule run: the job it submitted), else the section's."""
    section = path.split("/")[1]

    async def endpoint(request: Request) -> Response:
        async def act(caller: Caller, form: Form) -> Response:
            if section == "jobs":
                subject: list[Any] = [_job_number(request.path_params["job_id"])]
            elif section == "queues":
                subject = [_name(form_field(form, "queue"), "a queue name", "queue")]
            else:
                subject = [_name(form_field(form, "tenant"))]
                subject += [form_field(form, "name")] if section == "schedules" else []
            result = await getattr(caller.client, call)(*subject, conn=caller.conn)
            if section == "jobs":
                return _back(f"/jobs/{subject[0]}", note)
            if call == "run_schedule":
                return _back(f"/jobs/{int(result)}", note)
            return _back(f"/{section}", note)

        return await action(request, scope, act, section)

    router.add_api_route(path, endpoint, methods=["POST"])


for path, scope, call, note in ACTS:
    _act(path, scope, call, note)


# --- tenants


@_page("/tenants", "jobs:read", "tenants")
async def tenants(request: Request, caller: Caller) -> dict[str, Any]:
    client = caller.client
    context: dict[str, Any] = {"tenants": await client.list_tenants(conn=caller.conn)}
    for key, scope, fetch in (
        ("tokens", "tenants:read", client.list_api_tokens),
        ("grants", "tenants:read", client.list_tenant_grants),
        ("audit", "audit:read", client.list_audit),
    ):
        context[key], context[f"{key}_error"] = await _optional(caller, scope, fetch)
    return context


async def _optional(
    caller: Caller, scope: str, fetch: Callable[..., Awaitable[Sequence[Any]]]
) -> tuple[Sequence[Any], str | None]:
    """Rows of a part of a page this token may not see (fetch: a call of the client, given conn=): ([],
    why) instead of failing the page. The database decides (the token's scope, every tenant or one); a
    savepoint keeps the page's transaction usable after a refusal."""
    try:
        async with caller.conn.transaction():
            return await fetch(conn=caller.conn), None
    except errors.Forbidden:
        return [], f"Not for this token: it needs the scope {scope}" + (
            "." if caller.tenant_id is None else ", and some parts need a token of every tenant."
        )


# --- schedules


@_page("/schedules", "schedules:read", "schedules")
async def schedules(request: Request, caller: Caller) -> dict[str, Any]:
    return {"schedules": await caller.client.list_schedules(conn=caller.conn)}


@_page("/schedules/runs", "jobs:read", "schedules", "schedule_runs.html")
async def schedule_runs(request: Request, caller: Caller) -> dict[str, Any]:
    """One schedule (tenant and name in the query) and its recent runs (jobctl.schedule_runs)."""
    tenant, name = request.query_params.get("tenant", ""), request.query_params.get("name", "")
    tenant_id = _name(tenant)
    runs = await caller.client.schedule_runs(tenant_id, name, max_rows=50, conn=caller.conn)
    found = await caller.client.get_schedule(tenant_id, name, conn=caller.conn)
    return {"title": f"Schedule {name}", "tenant": tenant_id, "name": name, "schedule": found,
            "runs": runs}  # fmt: skip


# --- workers


@_page("/workers", "workers:read", "workers")
async def workers(request: Request, caller: Caller) -> dict[str, Any]:
    return {"workers": await caller.client.list_workers(conn=caller.conn)}
