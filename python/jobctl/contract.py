"""Names fixed by the SQL contract that the CLI, the worker and the API share (one copy each)."""

from __future__ import annotations

import re

# job states, in the contract's order
STATES = ("pending", "running", "completed", "failed", "dead", "cancelled")
# every state a job can be in: STATES and `waiting` (issue 22: a job whose parents have not all
# completed, or a batch's callback before its batch ends); `jobctl stats` keeps to STATES
JOB_STATES = (*STATES, "waiting")
# API token scopes: the same list as jobctl._api_scopes() (tests/test_contract.py keeps them equal)
SCOPES = (
    "jobs:read",
    "jobs:submit",
    "jobs:cancel",
    "jobs:retry",
    "schedules:read",
    "schedules:write",
    "queues:read",
    "queues:write",
    "tenants:read",
    "tenants:write",
    "workers:read",
    "audit:read",
)
# an API token: jct_<token id>_<64 hex>; the id is not secret (list_api_tokens shows it)
TOKEN_RE = re.compile(r"^jct_(\d+)_[0-9a-f]{64}$")
