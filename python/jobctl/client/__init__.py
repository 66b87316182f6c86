"""`jobctl.Client` and `jobctl.AsyncClient`: the jobctl SQL functions as Python calls (docs/client.md).
The CLI calls Client, the HTTP API AsyncClient (with `conn=` each request's connection): one place
that speaks SQL.

Every call runs statements of queries.py and turns their rows into the typed values of
jobctl.client.rows; each call is written once (jobctl.client.calls), and the two clients differ only
in how they run it. A database error with a SQLSTATE of docs/errors.md is raised as its
`jobctl.errors` class (`InvalidInput`, `NotFound`, ...), carrying sqlstate, field, detail and hint;
any other error is psycopg's own.

Connections. Without `conn=`, a call runs on the client's own autocommit connection to its DSN
(default `jobctl.db.dsn()`: JOBCTL_DSN, else the local cluster's), opened at the first call, opened
again after it broke, one call at a time; it carries `jobctl.db.session_options()` (the tenants'
payload keys). With `conn=`, the call runs on the caller's psycopg connection inside whatever
transaction is open there: a job submitted so commits or rolls back with the caller's own writes. The
client never commits, rolls back or opens a transaction block on a caller's connection.
"""

from jobctl.client.calls import (
    BIGINT_MAX,
    AsyncClient,
    Client,
    JobSpec,
    check_id,
)
from jobctl.client.rows import (
    MAX_JSON_DEPTH,
    ApiToken,
    AuditEntry,
    Batch,
    BatchSubmitted,
    BulkBatch,
    ClaimMetrics,
    ConcurrencyLimit,
    Fairness,
    HealthCheck,
    HistoryEntry,
    JobCount,
    JobInfo,
    JobOverview,
    MinuteRates,
    Queue,
    QueueRow,
    RawJson,
    Schedule,
    ScheduleRun,
    StateCounts,
    Stats,
    Submitted,
    Tenant,
    TenantGrant,
    Worker,
    Workflow,
    load_json,
)

__all__ = [
    "BIGINT_MAX",
    "MAX_JSON_DEPTH",
    "ApiToken",
    "AsyncClient",
    "AuditEntry",
    "Batch",
    "BatchSubmitted",
    "BulkBatch",
    "ClaimMetrics",
    "Client",
    "ConcurrencyLimit",
    "Fairness",
    "HealthCheck",
    "HistoryEntry",
    "JobCount",
    "JobInfo",
    "JobOverview",
    "JobSpec",
    "MinuteRates",
    "Queue",
    "QueueRow",
    "RawJson",
    "Schedule",
    "ScheduleRun",
    "StateCounts",
    "Stats",
    "Submitted",
    "Tenant",
    "TenantGrant",
    "Worker",
    "Workflow",
    "check_id",
    "load_json",
]
