"""The sample handler of `make demo` and the README's first worker: `jobctl worker --handler
jobctl.demo:handle`. The demo's walk through the API is tools/demo_walk.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any


async def handle(job: Any) -> dict[str, Any]:
    """Sleep `sleep` seconds; fail while `attempt <= fail_times` (a retry with backoff follows). With
    `approval` (an event name), a durable job (docs/durable.md): a step, a sleep of `sleep` seconds that
    frees the worker, then a wait for the tenant's event `approval`, whose payload it returns."""
    payload = job.payload if isinstance(job.payload, dict) else {}
    if "approval" in payload:
        reserved = await job.step("reserve", lambda: {"reserved_at": time.time()})
        await job.sleep(float(payload.get("sleep", 3)))
        approval = await job.wait_for(str(payload["approval"]), timeout=300)
        return {"handled_by": "jobctl.demo", "reserved": reserved, "approval": approval}
    await asyncio.sleep(float(payload.get("sleep", 0.5)))
    if job.attempt <= int(payload.get("fail_times", 0)):
        raise RuntimeError(f"simulated failure on attempt {job.attempt}")
    return {"handled_by": "jobctl.demo", "attempt": job.attempt}
