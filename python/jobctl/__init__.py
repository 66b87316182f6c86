"""jobctl: a multi-tenant job scheduler that lives inside PostgreSQL.

`jobctl.Client` and `jobctl.AsyncClient` call its SQL functions from Python (docs/client.md); their
errors are `jobctl.errors` classes, all of them `JobctlError`s.
"""

from jobctl.client import (
    AsyncClient,
    Batch,
    BatchSubmitted,
    Client,
    HistoryEntry,
    JobInfo,
    JobSpec,
    Schedule,
    ScheduleRun,
    Submitted,
    Tenant,
    Workflow,
)
from jobctl.errors import JobctlError

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "Batch",
    "BatchSubmitted",
    "Client",
    "HistoryEntry",
    "JobInfo",
    "JobSpec",
    "JobctlError",
    "Schedule",
    "ScheduleRun",
    "Submitted",
    "Tenant",
    "Workflow",
]
