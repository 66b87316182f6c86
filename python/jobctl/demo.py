"""The sample handler of `make demo` and the README's first worker: `jobctl worker --handler
jobctl.demo:handle`. The demo's walk through the API is tools/demo_walk.py."""

from __future__ import annotations

import asyncio
from typing import Any


async def handle(job: Any) -> dict[str, Any]:
    """Sleep `sleep` seconds; fail while `attempt <= fail_times` (a retry with backoff follows)."""
    payload = job.payload if isinstance(job.payload, dict) else {}
    await asyncio.sleep(float(payload.get("sleep", 0.5)))
    if job.attempt <= int(payload.get("fail_times", 0)):
        raise RuntimeError(f"simulated failure on attempt {job.attempt}")
    return {"handled_by": "jobctl.demo", "attempt": job.attempt}
