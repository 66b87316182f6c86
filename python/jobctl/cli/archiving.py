"""The object archive: `archive run`, `archive list`, `archive verify` (jobctl.archive).

`run` is the exporter: run it as the schema owner (the role `jobctl migrate` runs as) from a timer, as
often as `maintain_partitions` or less (docs/operations.md "Archive in object storage"); it does nothing
while `jobctl.retention.archive_url` is unset. pg_cron cannot run it: it is Python, writing files.
"""

from __future__ import annotations

import click

from jobctl import archive, db, output
from jobctl.cli.common import JsonGroup, connect, show


@click.group("archive", cls=JsonGroup)
def archive_group() -> None:
    """Days of finished jobs as Parquet files in object storage (a path or an s3:// URL)."""


@archive_group.command("run")
@click.option("--max-days", type=click.IntRange(1), default=None, help="Export at most this many days.")
@click.option(
    "--lock-wait", type=click.FloatRange(0), default=10, show_default=True, metavar="SECONDS",
    help="How long to wait for another run to finish.",
)  # fmt: skip
def run(max_days: int | None, lock_wait: float, as_json: bool) -> None:
    """Export the archive's days past retention.archive, drop them, and apply pending erasures."""
    report = archive.run(db.dsn(), lock_wait=lock_wait, max_days=max_days)
    units = [
        {"source": u.source, "day": u.day, "files": len(u.files), "rows": u.rows, "bytes": u.bytes,
         "seconds": round(u.seconds, 3)}
        for u in report.units
    ]  # fmt: skip
    if as_json:
        show({"url": report.url, "units": units, "erased_files": report.erased_files,
              "erased_rows": report.erased_rows, "left": report.left}, as_json)  # fmt: skip
        return
    if report.url is None:
        click.echo("archive: off (jobctl.retention.archive_url is not set): nothing exported")
        return
    headers = ["DAY", "SOURCE", "FILES", "ROWS", "BYTES", "SECONDS"]
    rows = [[u["day"], u["source"], u["files"], u["rows"], u["bytes"], u["seconds"]] for u in units]
    click.echo(output.table(headers, rows, right=[2, 3, 4, 5]) if rows else f"(no day due) {report.url}")
    for why in report.left:
        click.echo(f"left for the next run: {why}")
    if report.erased_files:
        click.echo(f"erasures: {report.erased_rows} rows removed from {report.erased_files} files")


@archive_group.command("list")
@click.option("--tenant", "tenant_id", default=None, help="Only this tenant's files.")
def list_(tenant_id: str | None, as_json: bool) -> None:
    """List the archive's files (the manifest), oldest day first."""
    with connect() as conn:
        files = archive.manifest(conn, tenant_id)
    headers = ["DAY", "TENANT", "ROWS", "BYTES", "JOB IDS", "URL"]
    rows = [
        [f["day"], f["tenant_id"], f["rows"], f["bytes"], f"{f['min_job_id']}-{f['max_job_id']}", f["url"]]
        for f in files
    ]
    show(files, as_json, output.table(headers, rows, right=[2, 3]) if rows else "(no files)")


@archive_group.command("verify")
@click.option("--tenant", "tenant_id", default=None, help="Only this tenant's files.")
def verify(tenant_id: str | None, as_json: bool) -> None:
    """Read every file back and check it against the manifest (SHA-256, rows); exit 1 on a mismatch."""
    with connect() as conn:
        results = archive.verify(conn, tenant_id)
    bad = [(f, problem) for f, problem in results if problem is not None]
    doc = {"files": len(results), "bad": [{"url": f["url"], "problem": p} for f, p in bad]}
    lines = [f"{f['url']}: {problem}" for f, problem in bad]
    lines.append(f"{len(results) - len(bad)} of {len(results)} files match the manifest")
    show(doc, as_json, "\n".join(lines))
    if bad:
        raise click.exceptions.Exit(1)
