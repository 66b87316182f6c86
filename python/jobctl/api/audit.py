"""One log line per request that changes something (submit, cancel, retry), whether it succeeded or
was refused: who (token id, tenant), what (action, job id) and the HTTP status."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request

if TYPE_CHECKING:
    from jobctl.api.auth import Caller

log = logging.getLogger("jobctl.api.audit")


@dataclass
class Action:
    token_id: int
    tenant: str | None  # None: an admin token
    action: str
    job_id: int | None = None

    def record(self, status: int) -> None:
        outcome = "done" if status < 400 else "refused"
        log.info(
            "%s %s",
            self.action,
            outcome,
            extra={
                "token_id": self.token_id,
                "tenant": self.tenant if self.tenant is not None else "(admin)",
                "action": self.action,
                "job_id": self.job_id,
                "status": status,
            },
        )


def begin(request: Request, caller: Caller, action: str, job_id: int | None = None) -> Action:
    """The caller's action, remembered so that an error answer logs it too (see refused)."""
    request.state.audit = begun = Action(caller.token_id, caller.tenant_id, action, job_id)
    return begun


def refused(request: Request, status: int) -> None:
    action = getattr(request.state, "audit", None)
    if isinstance(action, Action):
        action.record(status)
