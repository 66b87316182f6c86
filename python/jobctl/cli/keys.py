"""Concurrency keys: `key put` (a key's limit, or a tenant's default) and `key list`, through
jobctl.client."""

from __future__ import annotations

import click

from jobctl import output
from jobctl.cli.common import JsonGroup, client, show, show_table

PUT_EPILOG = """\b
Examples:
  jobctl key put acme stripe-api 5        (at most 5 jobs with key stripe-api run at once)
  jobctl key put acme report-42 1         (a mutex: one at a time, in run_at order)
  jobctl key put acme --default 2         (every key of acme without its own limit: 2)
  jobctl key put acme stripe-api --none   (remove its limit: the default applies again)"""


@click.group(cls=JsonGroup)
def key() -> None:
    """Concurrency keys: how many jobs of one key of a tenant run at once."""


@key.command(epilog=PUT_EPILOG)
@click.argument("tenant_id", metavar="TENANT")
@click.argument("concurrency_key", metavar="[KEY]", required=False)
@click.argument("max_running", metavar="MAX_RUNNING", type=int, required=False)
@click.option(
    "--default", "default", type=int, metavar="N", help="The limit of the tenant's keys without one."
)
@click.option("--none", "remove", is_flag=True, help="Remove the limit (of KEY, or the default without KEY).")
def put(
    tenant_id: str,
    concurrency_key: str | None,
    max_running: int | None,
    default: int | None,
    remove: bool,
    as_json: bool,
) -> None:
    """Set the limit of KEY (0..100000), or with --default the tenant's default limit."""
    if default is not None and (concurrency_key is not None or max_running is not None):
        raise click.UsageError("give KEY MAX_RUNNING or --default N, not both")
    if concurrency_key is not None and max_running is None and not remove:
        raise click.UsageError("give MAX_RUNNING after KEY (or --none)")
    if concurrency_key is None and default is None and not remove:
        raise click.UsageError("give KEY MAX_RUNNING, or --default N")
    if remove and (max_running is not None or default is not None):
        raise click.UsageError("--none takes no limit")
    limit = None if remove else (default if concurrency_key is None else max_running)
    client().put_concurrency_limit(tenant_id, concurrency_key, limit)
    what = f"key {concurrency_key}" if concurrency_key is not None else "keys without a limit of their own"
    text = f"tenant {tenant_id}, {what}: " + ("no limit" if limit is None else f"at most {limit} at once")
    show({"tenant_id": tenant_id, "concurrency_key": concurrency_key, "max_running": limit}, as_json, text)


COLUMNS: output.Columns = {
    "KEY": lambda k: k.concurrency_key if k.concurrency_key is not None else "(default)",
    "MAX RUNNING": "max_running",
    "ACTIVE": "active",
    "WAITING": "waiting",
}


@key.command("list")
@click.argument("tenant_id", metavar="TENANT")
def list_(tenant_id: str, as_json: bool) -> None:
    """List the tenant's key limits, with the jobs each has running or due, and waiting."""
    show_table(client().list_concurrency_limits(tenant_id), as_json, COLUMNS, right=range(1, 4))
