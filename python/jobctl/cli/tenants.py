"""The limits on claims and submits, and pause and resume: `tenant put|list|pause|resume` (a tenant's
weight, quotas and rates), `queue put|list|pause|resume` (limits across tenants), `key put|list` (a
concurrency key's limit, or a tenant's default), through jobctl.client."""

from __future__ import annotations

from typing import Any

import click

from jobctl import output
from jobctl.cli.common import JsonGroup, client, show, show_table


def show_settings(row: object, as_json: bool) -> None:
    """A tenant's or a queue's settings as saved: a limit not set shows as `unlimited`."""
    pairs = [(k, "unlimited" if v is None else v) for k, v in output.record(row)]
    show(row, as_json, output.key_values(pairs))


def show_paused(what: str, key: str, name: str, paused: bool, changed: bool, as_json: bool) -> None:
    """Say that a tenant or a queue (`what`; `key` its parameter's name) was paused or resumed, or
    already was."""
    state = "paused" if paused else "resumed"
    text = f"{what} {name} {state}" if changed else f"{what} {name} was already {state}"
    show({key: name, "paused": paused, "changed": changed}, as_json, text)


TENANT_EPILOG = """\b
Examples:
  jobctl tenant put acme --weight 3 --max-pending 100000 --submit-rate 500
  jobctl tenant put acme       (back to the defaults: weight 1, no limits)"""


@click.group(cls=JsonGroup)
def tenant() -> None:
    """Tenants: weights, quotas, rate limits, pause and resume."""


TENANT_COLUMNS = {
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


@tenant.command("put", epilog=TENANT_EPILOG)
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
def tenant_put(tenant_id: str, as_json: bool, **settings: Any) -> None:
    """Create or replace a tenant's settings.

    Every setting is replaced: an option left out goes back to its default (no limit).
    """
    show_settings(client().put_tenant(tenant_id, **settings), as_json)


@tenant.command("list")
def tenant_list(as_json: bool) -> None:
    """List every tenant with its settings ('-': no limit)."""
    show_table(client().list_tenants(), as_json, TENANT_COLUMNS, right=range(1, 8))


@tenant.command("pause")
@click.argument("tenant_id", metavar="TENANT")
def tenant_pause(tenant_id: str, as_json: bool) -> None:
    """Stop claims of TENANT's jobs at once (submits are still accepted and queue up)."""
    show_paused("tenant", "tenant_id", tenant_id, True, client().pause_tenant(tenant_id), as_json)


@tenant.command("resume")
@click.argument("tenant_id", metavar="TENANT")
def tenant_resume(tenant_id: str, as_json: bool) -> None:
    """Let workers claim TENANT's jobs again."""
    show_paused("tenant", "tenant_id", tenant_id, False, client().resume_tenant(tenant_id), as_json)


# --- queues

QUEUE_EPILOG = """\b
Examples:
  jobctl queue put emails --max-running 50 --claim-rate 200
  jobctl queue put emails          (back to the defaults: no limits, not paused)
  jobctl queue pause emails        (no claims from it, for every tenant, from the next claim on)"""


@click.group(cls=JsonGroup)
def queue() -> None:
    """Queues, shared by every tenant: limits across tenants, pause and resume (administrators)."""


@queue.command("put", epilog=QUEUE_EPILOG)
@click.argument("name", metavar="QUEUE")
@click.option(
    "--max-running", type=int, metavar="N", help="Most of its jobs running at once, across tenants."
)
@click.option("--claim-rate", type=float, metavar="PER_S", help="Claims a second (token bucket).")
@click.option("--claim-burst", type=int, metavar="N", help="Claim bucket size.")
@click.option("--paused", is_flag=True, help="Paused: no claims until resumed.")
def queue_put(name: str, as_json: bool, **settings: Any) -> None:
    """Create or replace a queue's settings: an option left out goes back to its default."""
    show_settings(client().put_queue(name, **settings), as_json)


QUEUE_COLUMNS = {
    "QUEUE": "queue",
    "PAUSED": "paused",
    "MAX RUNNING": "max_running",
    "CLAIM/S": "claim_rate",
    "CLAIM BURST": "claim_burst",
    "DUE": "due",
    "RUNNING": "running",
}


@queue.command("list")
def queue_list(as_json: bool) -> None:
    """List the queues with settings or jobs: limits ('-': none), paused, jobs due and running."""
    show_table(client().list_queues(), as_json, QUEUE_COLUMNS, right=range(2, 7))


@queue.command("pause")
@click.argument("name", metavar="QUEUE")
def queue_pause(name: str, as_json: bool) -> None:
    """Stop claims from QUEUE for every tenant, from the next claim on (submits go on)."""
    show_paused("queue", "queue", name, True, client().pause_queue(name), as_json)


@queue.command("resume")
@click.argument("name", metavar="QUEUE")
def queue_resume(name: str, as_json: bool) -> None:
    """Restart claims from QUEUE."""
    show_paused("queue", "queue", name, False, client().resume_queue(name), as_json)


# --- concurrency keys

KEY_EPILOG = """\b
Examples:
  jobctl key put acme stripe-api 5        (at most 5 jobs with key stripe-api run at once)
  jobctl key put acme report-42 1         (a mutex: one at a time, in run_at order)
  jobctl key put acme --default 2         (every key of acme without its own limit: 2)
  jobctl key put acme stripe-api --none   (remove its limit: the default applies again)"""


@click.group(cls=JsonGroup)
def key() -> None:
    """Concurrency keys: how many jobs of one key of a tenant run at once."""


@key.command("put", epilog=KEY_EPILOG)
@click.argument("tenant_id", metavar="TENANT")
@click.argument("concurrency_key", metavar="[KEY]", required=False)
@click.argument("max_running", metavar="MAX_RUNNING", type=int, required=False)
@click.option(
    "--default", "default", type=int, metavar="N", help="The limit of the tenant's keys without one."
)
@click.option("--none", "remove", is_flag=True, help="Remove the limit (of KEY, or the default without KEY).")
def key_put(
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


KEY_COLUMNS: output.Columns = {
    "KEY": lambda k: k.concurrency_key if k.concurrency_key is not None else "(default)",
    "MAX RUNNING": "max_running",
    "ACTIVE": "active",
    "WAITING": "waiting",
}


@key.command("list")
@click.argument("tenant_id", metavar="TENANT")
def key_list(tenant_id: str, as_json: bool) -> None:
    """List the tenant's key limits, with the jobs each has running or due, and waiting."""
    show_table(client().list_concurrency_limits(tenant_id), as_json, KEY_COLUMNS, right=range(1, 4))
