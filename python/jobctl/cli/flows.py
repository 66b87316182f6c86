"""Workflows, batches and events: `workflow submit FILE`, `batch submit FILE`, `batch show ID`,
`event emit TENANT EVENT [PAYLOAD]`, through jobctl.client; and the parsers of `submit`'s --depends-on
and --dedup-states."""

from __future__ import annotations

from typing import IO

import click

from jobctl import errors, output
from jobctl.cli.common import JsonGroup, as_id, client, parse_json, show
from jobctl.client import BIGINT_MAX, check_id


def as_ids(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    """The callback of --depends-on: job ids separated by commas (1,2,3), each a whole number from 1 to
    the largest bigint, else a usage error naming the option."""
    if value is None:
        return None
    ids: list[int] = []
    for part in value.split(","):
        try:
            ids.append(check_id(int(part.strip())))
        except (ValueError, errors.InvalidInput):
            raise click.BadParameter(
                f"{part.strip()!r} is not an id: give job ids from 1 to {BIGINT_MAX}, separated by commas",
                ctx,
                param,
            ) from None
    return ids


def as_names(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    """The callback of --dedup-states: names separated by commas (pending,running); the database
    checks them."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _in_file(e: errors.JobctlError) -> errors.JobctlError:
    """An error about one job of the file named as the file holds it: the SQL says jobs[3].priority,
    which jobctl.errors turns into field `priority` with index 3."""
    if e.index is None:
        return e
    where, text = f"jobs[{e.index}]", str(e)
    field = f"{where}.{e.field}" if e.field else where
    message = f"{where}.{text}" if e.field and text.startswith(e.field) else f"{where}: {text}"
    return type(e)(message, sqlstate=e.sqlstate, field=field, detail=e.detail, hint=e.hint, index=e.index)


WORKFLOW_EPILOG = """\b
Example (flow.json):
  [{"name": "extract", "tenant_id": "acme", "queue": "etl", "payload": {}},
   {"name": "report", "tenant_id": "acme", "queue": "etl", "payload": {},
    "depends_on": ["extract"]}]
  jobctl workflow submit flow.json
  jobctl workflow submit - --on-parent-failure wait < flow.json"""


@click.group(cls=JsonGroup)
def workflow() -> None:
    """Jobs that depend on each other (jobctl.submit_workflow)."""


@workflow.command("submit", epilog=WORKFLOW_EPILOG)
@click.argument("workflow_file", metavar="FILE", type=click.File("rb"))
@click.option(
    "--on-parent-failure",
    metavar="cancel|wait",
    help="What a dead or cancelled parent does to its dependents: cancel (default) or wait.",
)
def workflow_submit(workflow_file: IO[bytes], on_parent_failure: str | None, as_json: bool) -> None:
    """Submit a workflow from a JSON file ('-': stdin), all or nothing; print each job's name and id.

    FILE holds a JSON array of jobs with submit_jobs' keys and a unique `name`; `depends_on` names jobs
    listed before it (or gives ids of existing jobs). A job with parents waits until they completed.
    """
    jobs = parse_json(workflow_file.read(), "the workflow file")
    if not isinstance(jobs, list):
        raise errors.InvalidInput(
            f"the workflow file must hold a JSON array of jobs, not {type(jobs).__name__}", field="jobs"
        )
    try:
        flow = client().submit_workflow(jobs, on_parent_failure=on_parent_failure)
    except errors.JobctlError as e:
        raise _in_file(e) from None
    table = output.table(["NAME", "ID"], flow.job_ids.items(), right=[1])
    show(flow, as_json, f"{table}\nworkflow {flow.workflow_id}: {len(flow.job_ids)} jobs")


BATCH_EPILOG = """\b
Example (batch.json):
  {"jobs": [{"tenant_id": "acme", "queue": "thumbs", "payload": {"img": 1}},
            {"tenant_id": "acme", "queue": "thumbs", "payload": {"img": 2}}],
   "on_finish": {"queue": "notify", "payload": {"album": 7}}}
  jobctl batch submit batch.json
  jobctl batch show 12"""


@click.group(cls=JsonGroup)
def batch() -> None:
    """Jobs with callbacks run once the last of them ends (jobctl.submit_batch, get_batch)."""


@batch.command("submit", epilog=BATCH_EPILOG)
@click.argument("batch_file", metavar="FILE", type=click.File("rb"))
def batch_submit(batch_file: IO[bytes], as_json: bool) -> None:
    """Submit a batch from a JSON file ('-': stdin); print its id, its jobs' and callbacks' ids.

    FILE holds an object {"jobs": [...], "on_finish": {...}, "on_success": {...}, "on_discard": {...}}:
    one tenant's jobs (submit_jobs' keys, no dedup_key) and at least one callback, a job whose tenant
    defaults to theirs. on_finish runs once the last job ended; on_success if all completed;
    on_discard if any did not.
    """
    doc = parse_json(batch_file.read(), "the batch file")
    if not isinstance(doc, dict):
        raise errors.InvalidInput(
            f"the batch file must hold a JSON object, not {type(doc).__name__}", field="jobs"
        )
    unknown = sorted(set(doc) - {"jobs", "on_finish", "on_success", "on_discard"})
    if unknown:
        raise errors.InvalidInput(f"the batch file has an unknown key: {unknown[0]}", field=unknown[0])
    if not isinstance(doc.get("jobs"), list):
        raise errors.InvalidInput("the batch file's jobs must be a JSON array of jobs", field="jobs")
    try:
        made = client().submit_batch(**doc)  # jobs and the callbacks, no other key
    except errors.JobctlError as e:
        raise _in_file(e) from None
    show(made, as_json)


@batch.command("show")
@click.argument("batch_id", metavar="ID", callback=as_id)
def batch_show(batch_id: int, as_json: bool) -> None:
    """Show a batch: its size, its members' counts (outcomes once it ended), its callbacks."""
    found = client().get_batch(batch_id)
    if found is None:
        raise errors.NotFound(f"no batch {batch_id}")
    show(found, as_json)


EVENT_EPILOG = """\b
Examples:
  jobctl event emit acme order-1/approved '{"by": "ops"}'
  jobctl event emit acme nightly-export-ready"""


@click.group(cls=JsonGroup)
def event() -> None:
    """A tenant's events, which waiting jobs read (jobctl.emit_event; docs/durable.md)."""


@event.command("emit", epilog=EVENT_EPILOG)
@click.argument("tenant_id", metavar="TENANT")
@click.argument("event_name", metavar="EVENT")
@click.argument("payload", metavar="[PAYLOAD_JSON]", required=False)
def event_emit(tenant_id: str, event_name: str, payload: str | None, as_json: bool) -> None:
    """Emit TENANT's EVENT with an optional JSON payload: every job waiting on it is due at once and
    reads the payload. The first emit wins: a repeat changes nothing. Prints how many jobs it woke."""
    value = parse_json(payload, "PAYLOAD_JSON", "payload") if payload is not None else None
    woken = client().emit_event(tenant_id, event_name, value)
    show({"woken": woken}, as_json, f"woke {woken} job{'s' if woken != 1 else ''}")
