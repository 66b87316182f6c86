"""Names fixed by the SQL contract that the CLI, the worker and the API share (one copy each)."""

from __future__ import annotations

import re

# job states, in the contract's order
STATES = ("waiting", "pending", "running", "completed", "failed", "dead", "cancelled")
# API token scopes: the same list as jobctl._api_scopes() (tests/test_contract.py keeps them equal)
SCOPES = (
    "jobs:read",
    "jobs:submit",
    "jobs:cancel",
    "jobs:retry",
    "jobs:delete",
    "events:emit",
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
