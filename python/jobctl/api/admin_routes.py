"""The tenant administration endpoints of the dashboard's pages: tenants' settings, pause and resume,
their tokens and grants (scopes tenants:read, tenants:write), the registry of workers (workers:read),
the audit log (audit:read) and the scheduler's health checks (tenants:read). Each is one call of the
app's AsyncClient on the request's connection, in the token check's transaction, so the database
decides: a tenant token acts for its own tenant only (another tenant: 403), and workers and health,
shared by every tenant, answer only an admin token (403 otherwise, from the database's 42501).
Tenant settings themselves (put_tenant: weight, quotas, rates) are not offered: a tenant token must
not raise its own limits, so they stay with jobctl_admin logins (the CLI)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request

from jobctl.api import audit
from jobctl.api.auth import Caller, caller_for
from jobctl.api.models import (
    ApiToken,
    AuditEntry,
    AuditPage,
    GrantList,
    HealthCheck,
    HealthChecks,
    Tenant,
    TenantGrant,
    TenantList,
    TenantOut,
    TokenList,
    Worker,
    WorkerList,
    shown,
)
from jobctl.api.names import known_query
from jobctl.api.routes import TOO_MANY_LISTS, ask, call, error_responses, found, list_permit, next_page

router = APIRouter(prefix="/api/v1", dependencies=[known_query], tags=["tenants"])
# shared by every tenant: the workers, the audit log, the health checks
shared = APIRouter(prefix="/api/v1", dependencies=[known_query])
# the callers of the tenant endpoints
TenantReader = Annotated[Caller, caller_for("tenants:read")]
TenantWriter = Annotated[Caller, caller_for("tenants:write")]

TenantId = Annotated[str, Path(alias="tenant", min_length=1, max_length=200, description="The tenant.")]
# the SQL's tenant_id is the path's (or query's) `tenant`
TENANT_AS_SENT = {"tenant_id": "tenant"}
AUDIT_CAP = 1000  # list_audit's max_count bound
OTHER_TENANT = {403: "The token lacks the scope, or is another tenant's."}
ADMIN_ONLY = {403: "The token lacks the scope, or is a tenant's: this is shared by every tenant."}
# the error answers of the endpoints of one tenant, and of its tokens' and grants' lists
ONE_TENANT_ERRORS = error_responses(404, 422, notes=OTHER_TENANT | {404: "No such tenant."})
TENANT_LIST_ERRORS = error_responses(422, notes=OTHER_TENANT)
Verdict = Literal["ok", "warn", "fail"]
VERDICTS: tuple[Verdict, ...] = ("ok", "warn", "fail")  # best to worst


async def _tenant(caller: Caller, tenant_id: str) -> TenantOut:
    params = {"tenant_id": tenant_id}
    row = await found(
        caller, caller.client.get_tenant, params, f"tenant {tenant_id}", "tenant", TENANT_AS_SENT
    )
    return TenantOut(tenant=shown(Tenant, row))


@router.get(
    "/tenants",
    summary="List tenants",
    responses=error_responses(429, notes={429: TOO_MANY_LISTS}),
)
async def list_tenants(request: Request, caller: TenantReader) -> TenantList:
    """The settings of the token's tenant (an admin token: of every tenant), scope `tenants:read`."""
    with list_permit(request, caller):
        rows = await call(caller.client.list_tenants(conn=caller.conn))
        return TenantList(tenants=[shown(Tenant, r) for r in rows])


@router.get("/tenants/{tenant:name}", summary="Get a tenant", responses=ONE_TENANT_ERRORS)
async def get_tenant(tenant_id: TenantId, caller: TenantReader) -> TenantOut:
    """One tenant's settings (scope `tenants:read`)."""
    return await _tenant(caller, caller.tenant_for(tenant_id, "tenant"))


async def _pause(request: Request, caller: Caller, tenant_id: str, paused: bool) -> TenantOut:
    act = audit.begin(request, caller, "pause_tenant" if paused else "resume_tenant")
    act.tenant = caller.tenant_for(tenant_id, "tenant")
    change = caller.client.pause_tenant if paused else caller.client.resume_tenant
    await ask(caller, change, {"tenant_id": act.tenant}, TENANT_AS_SENT)
    act.record(200)
    return await _tenant(caller, act.tenant)


@router.post("/tenants/{tenant:name}/pause", summary="Pause a tenant", responses=ONE_TENANT_ERRORS)
async def pause_tenant(request: Request, tenant_id: TenantId, caller: TenantWriter) -> TenantOut:
    """Stop claims of the tenant's jobs from the next claim on; submits go on (scope `tenants:write`)."""
    return await _pause(request, caller, tenant_id, True)


@router.post("/tenants/{tenant:name}/resume", summary="Resume a tenant", responses=ONE_TENANT_ERRORS)
async def resume_tenant(request: Request, tenant_id: TenantId, caller: TenantWriter) -> TenantOut:
    """Let the tenant's jobs be claimed again (scope `tenants:write`)."""
    return await _pause(request, caller, tenant_id, False)


@router.get(
    "/tenants/{tenant:name}/tokens", summary="List a tenant's API tokens", responses=TENANT_LIST_ERRORS
)
async def list_tokens(tenant_id: TenantId, caller: TenantReader) -> TokenList:
    """The tenant's API tokens, revoked ones included: ids, scopes, labels, never the tokens (only their
    hashes are kept). Scope `tenants:read`."""
    params = {"tenant_id": caller.tenant_for(tenant_id, "tenant")}
    rows = await ask(caller, caller.client.list_api_tokens, params, TENANT_AS_SENT)
    return TokenList(tokens=[shown(ApiToken, r) for r in rows])


@router.get(
    "/tenants/{tenant:name}/grants",
    summary="List the roles acting for a tenant",
    responses=TENANT_LIST_ERRORS,
)
async def list_grants(tenant_id: TenantId, caller: TenantReader) -> GrantList:
    """The database roles granted the tenant (jobctl.grant_tenant), scope `tenants:read`; every-tenant
    grants are not listed here."""
    params = {"tenant_id": caller.tenant_for(tenant_id, "tenant")}
    rows = await ask(caller, caller.client.list_tenant_grants, params, TENANT_AS_SENT)
    return GrantList(grants=[shown(TenantGrant, r) for r in rows])


@shared.get(
    "/workers",
    tags=["workers"],
    summary="List workers",
    responses=error_responses(422, 429, notes=ADMIN_ONLY | {429: TOO_MANY_LISTS}),
)
async def list_workers(
    request: Request,
    caller: Annotated[Caller, caller_for("workers:read")],
    stale: Annotated[
        float, Query(ge=1, le=3600, description="Seconds without a beat after which a worker is not alive.")
    ] = 60,
) -> WorkerList:
    """The registered workers, with what each last reported, whether it is alive and the leases it holds
    (scope `workers:read`, admin token: workers serve every tenant)."""
    with list_permit(request, caller):
        rows = await ask(caller, caller.client.list_workers, {"stale": stale})
        return WorkerList(workers=[shown(Worker, r) for r in rows])


@shared.get(
    "/audit",
    tags=["audit"],
    summary="List audit entries",
    responses=error_responses(422, 429, notes=OTHER_TENANT | {429: TOO_MANY_LISTS}),
)
async def list_audit(
    request: Request,
    caller: Annotated[Caller, caller_for("audit:read")],
    tenant: Annotated[
        str | None,
        Query(description="Only this tenant's entries. Default: the token's tenant (an admin token: all)."),
    ] = None,
    before: Annotated[
        int | None,
        Query(ge=1, le=2**63 - 1, description="Only entries with a smaller id: the `next` of a page."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=AUDIT_CAP, description="Entries per page.")] = 50,
) -> AuditPage:
    """A page of the audit log, newest first (scope `audit:read`): grants, tokens, tenant and queue
    settings, pauses, bulk retries and cancels, forgotten subjects, schedules run by hand. An admin token
    also sees the entries with no tenant. Follow `next` (as `before`) until it is null."""
    params = {
        # None: the token's tenants (an admin token: all); another tenant's: 403 (the database's 42501)
        "tenant_id": None if tenant is None else caller.tenant_for(tenant, "tenant"),
        "before_id": before,
        "max_count": min(limit + 1, AUDIT_CAP),
    }
    names = {"tenant_id": "tenant", "before_id": "before", "max_count": "limit"}
    with list_permit(request, caller):
        rows = await ask(caller, caller.client.list_audit, params, names)
        entries = [shown(AuditEntry, r) for r in rows[:limit]]
        return AuditPage(entries=entries, next=next_page(rows, limit, AUDIT_CAP, "audit_id"))


@shared.get(
    "/health/checks",
    tags=["operations"],
    summary="Health checks",
    responses=error_responses(notes=ADMIN_ONLY),
)
async def health_checks(caller: TenantReader) -> HealthChecks:
    """What `jobctl doctor` reports, one row per check, and the worst verdict (scope `tenants:read`, admin
    token: the health of the whole scheduler). `/api/v1/health` stays the token-free probe."""
    rows = await call(caller.client.health_checks(conn=caller.conn))
    checks = [shown(HealthCheck, r) for r in rows]
    worst = max((c.verdict for c in checks), key=VERDICTS.index, default=VERDICTS[0])
    return HealthChecks(verdict=worst, checks=checks)
