"""Which database roles act for which tenants: `access grant`, `access revoke`, `access list`
(jobctl.grant_tenant, revoke_tenant, list_tenant_grants through jobctl.client; docs/security.md)."""

from __future__ import annotations

import click

from jobctl import errors, output
from jobctl.cli.common import JsonGroup, client, show, show_table

GRANT_EPILOG = """\b
Examples:
  psql -c "create role billing login in role jobctl_writer"
  jobctl access grant billing --tenant acme
  jobctl access grant fleet --all        # a worker fleet for every tenant
  jobctl access revoke billing --tenant acme"""


def _tenant(tenant_id: str | None, every: bool) -> str | None:
    if every == (tenant_id is not None):
        raise click.UsageError("give exactly one of --tenant TENANT or --all")
    return tenant_id


def _whom(tenant_id: str | None) -> str:
    return f"tenant {tenant_id}" if tenant_id is not None else "every tenant"


tenant_option = click.option("--tenant", "tenant_id", metavar="TENANT", help="The tenant.")
all_option = click.option("--all", "every", is_flag=True, help="Every tenant instead.")


@click.group(cls=JsonGroup)
def access() -> None:
    """Which database roles act for which tenants."""


@access.command(epilog=GRANT_EPILOG)
@click.argument("role")
@tenant_option
@all_option
def grant(role: str, tenant_id: str | None, every: bool, as_json: bool) -> None:
    """Let ROLE (and the logins in it) act for a tenant: at once, for open sessions too."""
    tenant = _tenant(tenant_id, every)
    granted = client().grant_tenant(role, tenant)
    text = f"{role}: {_whom(tenant)}" + ("" if granted else " (already granted)")
    show({"role": role, "tenant_id": tenant, "granted": granted}, as_json, text)


@access.command()
@click.argument("role")
@tenant_option
@all_option
def revoke(role: str, tenant_id: str | None, every: bool, as_json: bool) -> None:
    """Take a tenant (or the every-tenant grant) back from ROLE, at once."""
    tenant = _tenant(tenant_id, every)
    revoked = client().revoke_tenant(role, tenant)
    if not revoked:
        raise errors.NotFound(f"{role} has no grant for {_whom(tenant)}")
    show({"role": role, "tenant_id": tenant, "revoked": True}, as_json, f"{role}: revoked")


COLUMNS: output.Columns = {
    "ROLE": "role_name",
    "TENANT": lambda g: g.tenant_id or "(every tenant)",
    "GRANTED": "granted_at",
    "BY": "granted_by",
}


@access.command("list")
def list_(as_json: bool) -> None:
    """List the roles and the tenants they act for."""
    show_table(client().list_tenant_grants(), as_json, COLUMNS)
