"""Tenants: `tenant put` (settings), `tenant list`, `tenant pause`, `tenant resume`, through
jobctl.client."""

from __future__ import annotations

from typing import Any

import click

from jobctl.cli.common import JsonGroup, client, show_paused, show_settings, show_table

PUT_EPILOG = """\b
Examples:
  jobctl tenant put acme --weight 3 --max-pending 100000 --submit-rate 500
  jobctl tenant put acme       (back to the defaults: weight 1, no limits)"""


@click.group(cls=JsonGroup)
def tenant() -> None:
    """Tenants: weights, quotas, rate limits, pause and resume."""


COLUMNS = {
    "TENANT": "tenant_id",
    "WEIGHT": "weight",
    "MAX PENDING": "max_pending",
    "MAX RUNNING": "max_running",
    "SUBMIT/S": "submit_rate",
    "SUBMIT BURST": "submit_burst",
    "CLAIM/S": "claim_rate",
    "CLAIM BURST": "claim_burst",
    "PAUSED": "paused",
    "ENCRYPTED": "encrypt_payloads",
}


@tenant.command(epilog=PUT_EPILOG)
@click.argument("tenant_id", metavar="TENANT")
@click.option(
    "--weight",
    type=int,
    default=1,
    show_default=True,
    metavar="N",
    help="Share of claims against other tenants.",
)
@click.option("--max-pending", type=int, metavar="N", help="Most unfinished jobs (pending, failed, running).")
@click.option("--max-running", type=int, metavar="N", help="Most jobs running at once.")
@click.option("--submit-rate", type=float, metavar="PER_S", help="Submits per second (token bucket).")
@click.option("--submit-burst", type=int, metavar="N", help="Submit bucket size.")
@click.option("--claim-rate", type=float, metavar="PER_S", help="Claims per second (token bucket).")
@click.option("--claim-burst", type=int, metavar="N", help="Claim bucket size.")
@click.option(
    "--encrypt-payloads",
    is_flag=True,
    help="Seal payloads at rest with the key JOBCTL_PAYLOAD_KEYS holds for TENANT (docs/security.md).",
)
def put(tenant_id: str, as_json: bool, **settings: Any) -> None:
    """Create or replace a tenant's settings.

    Every setting is replaced: an option left out goes back to its default (no limit).
    """
    show_settings(client().put_tenant(tenant_id, **settings), as_json)


@tenant.command("list")
def list_(as_json: bool) -> None:
    """List every tenant with its settings ('-': no limit)."""
    show_table(client().list_tenants(), as_json, COLUMNS, right=range(1, 8))


@tenant.command()
@click.argument("tenant_id", metavar="TENANT")
def pause(tenant_id: str, as_json: bool) -> None:
    """Stop claims of TENANT's jobs at once (submits are still accepted and queue up)."""
    show_paused("tenant", "tenant_id", tenant_id, True, client().pause_tenant(tenant_id), as_json)


@tenant.command()
@click.argument("tenant_id", metavar="TENANT")
def resume(tenant_id: str, as_json: bool) -> None:
    """Let workers claim TENANT's jobs again."""
    show_paused("tenant", "tenant_id", tenant_id, False, client().resume_tenant(tenant_id), as_json)
