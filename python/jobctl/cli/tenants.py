"""Tenants: `tenant put` (settings), `tenant list`, `tenant pause`, `tenant resume`, through
jobctl.client."""

from __future__ import annotations

import click

from jobctl import output
from jobctl.cli.common import echo_json, json_option, show_paused
from jobctl.client import Client, Tenant

PUT_EPILOG = """\b
Examples:
  jobctl tenant put acme --weight 3 --max-pending 100000 --submit-rate 500
  jobctl tenant put acme       (back to the defaults: weight 1, no limits)"""


@click.group()
def tenant() -> None:
    """Tenants: weights, quotas, rate limits, pause and resume."""


def _show(t: Tenant) -> str:
    return output.key_values((k, "unlimited" if v is None else v) for k, v in output.record(t))


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
@json_option
def put(
    tenant_id: str,
    weight: int,
    max_pending: int | None,
    max_running: int | None,
    submit_rate: float | None,
    submit_burst: int | None,
    claim_rate: float | None,
    claim_burst: int | None,
    encrypt_payloads: bool,
    as_json: bool,
) -> None:
    """Create or replace a tenant's settings.

    Every setting is replaced: an option left out goes back to its default (no limit).
    """
    with Client() as client:
        saved = client.put_tenant(
            tenant_id,
            weight=weight,
            max_pending=max_pending,
            max_running=max_running,
            submit_rate=submit_rate,
            submit_burst=submit_burst,
            claim_rate=claim_rate,
            claim_burst=claim_burst,
            encrypt_payloads=encrypt_payloads,
        )
    if as_json:
        echo_json(saved)
    else:
        click.echo(_show(saved))


@tenant.command("list")
@json_option
def list_(as_json: bool) -> None:
    """List every tenant with its settings ('-': no limit)."""
    with Client() as client:
        tenants = client.list_tenants()
    if as_json:
        echo_json(tenants)
        return
    headers = [
        "TENANT",
        "WEIGHT",
        "MAX PENDING",
        "MAX RUNNING",
        "SUBMIT/S",
        "SUBMIT BURST",
        "CLAIM/S",
        "CLAIM BURST",
        "PAUSED",
        "ENCRYPTED",
    ]
    rows = [
        [
            t.tenant_id,
            t.weight,
            t.max_pending,
            t.max_running,
            t.submit_rate,
            t.submit_burst,
            t.claim_rate,
            t.claim_burst,
            t.paused,
            t.encrypt_payloads,
        ]
        for t in tenants
    ]
    click.echo(output.table(headers, rows, right=range(1, 8)))


@tenant.command()
@click.argument("tenant_id", metavar="TENANT")
@json_option
def pause(tenant_id: str, as_json: bool) -> None:
    """Stop claims of TENANT's jobs at once (submits are still accepted and queue up)."""
    with Client() as client:
        show_paused("tenant", "tenant_id", tenant_id, True, client.pause_tenant(tenant_id), as_json)


@tenant.command()
@click.argument("tenant_id", metavar="TENANT")
@json_option
def resume(tenant_id: str, as_json: bool) -> None:
    """Let workers claim TENANT's jobs again."""
    with Client() as client:
        show_paused("tenant", "tenant_id", tenant_id, False, client.resume_tenant(tenant_id), as_json)
