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

# each name re-exported (`as` itself: mypy's explicit re-export)
from jobctl.client.calls import BIGINT_MAX as BIGINT_MAX
from jobctl.client.calls import AsyncClient as AsyncClient
from jobctl.client.calls import Client as Client
from jobctl.client.calls import JobSpec as JobSpec
from jobctl.client.calls import check_id as check_id
from jobctl.client.rows import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from jobctl.client.rows import ApiToken as ApiToken
from jobctl.client.rows import AuditEntry as AuditEntry
from jobctl.client.rows import Batch as Batch
from jobctl.client.rows import BatchSubmitted as BatchSubmitted
from jobctl.client.rows import BulkBatch as BulkBatch
from jobctl.client.rows import ClaimMetrics as ClaimMetrics
from jobctl.client.rows import ConcurrencyLimit as ConcurrencyLimit
from jobctl.client.rows import Fairness as Fairness
from jobctl.client.rows import HealthCheck as HealthCheck
from jobctl.client.rows import HistoryEntry as HistoryEntry
from jobctl.client.rows import JobCount as JobCount
from jobctl.client.rows import JobInfo as JobInfo
from jobctl.client.rows import JobOverview as JobOverview
from jobctl.client.rows import MinuteRates as MinuteRates
from jobctl.client.rows import Queue as Queue
from jobctl.client.rows import QueueRow as QueueRow
from jobctl.client.rows import RawJson as RawJson
from jobctl.client.rows import Schedule as Schedule
from jobctl.client.rows import ScheduleRun as ScheduleRun
from jobctl.client.rows import StateCounts as StateCounts
from jobctl.client.rows import Stats as Stats
from jobctl.client.rows import Step as Step
from jobctl.client.rows import Submitted as Submitted
from jobctl.client.rows import Tenant as Tenant
from jobctl.client.rows import TenantGrant as TenantGrant
from jobctl.client.rows import Worker as Worker
from jobctl.client.rows import Workflow as Workflow
from jobctl.client.rows import load_json as load_json
