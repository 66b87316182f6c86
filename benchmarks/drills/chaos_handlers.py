"""The handler the chaos runs give their workers (`--handler chaos_handlers:handle`, benchmarks/ as
the current directory). A job's payload says how long to work before its transaction (`work`) and
inside it (`tx`); inside, it writes a row to public.chaos_ledger, which job.transaction() commits
with the completion or rolls back when the lease was lost: a committed row is an effect."""

from __future__ import annotations

import asyncio
import os

from jobctl.worker import Job

LEDGER = "insert into public.chaos_ledger (job_id, lease_epoch, pid) values (%s, %s, %s)"


async def handle(job: Job) -> None:
    await asyncio.sleep(float(job.payload.get("work", 0)))
    async with job.transaction() as conn:
        await conn.execute(LEDGER, (job.job_id, job.lease_epoch, os.getpid()))
        await asyncio.sleep(float(job.payload.get("tx", 0)))
