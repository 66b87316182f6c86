"""jobctl: a multi-tenant job scheduler that lives inside PostgreSQL.

`jobctl.Client` and `jobctl.AsyncClient` call its SQL functions from Python (docs/client.md); their
errors are `jobctl.errors` classes, all of them `JobctlError`s.
"""

# each name re-exported (`as` itself: mypy's explicit re-export)
from jobctl.client import AsyncClient as AsyncClient
from jobctl.client import Batch as Batch
from jobctl.client import BatchSubmitted as BatchSubmitted
from jobctl.client import Client as Client
from jobctl.client import HistoryEntry as HistoryEntry
from jobctl.client import JobInfo as JobInfo
from jobctl.client import JobSpec as JobSpec
from jobctl.client import Schedule as Schedule
from jobctl.client import ScheduleRun as ScheduleRun
from jobctl.client import Submitted as Submitted
from jobctl.client import Tenant as Tenant
from jobctl.client import Workflow as Workflow
from jobctl.errors import JobctlError as JobctlError

__version__ = "0.1.0"
