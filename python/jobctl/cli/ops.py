"""Figures and health: `stats`, `doctor`, `top`.

`stats` joins two SQL results for display: jobctl.stats (jobs per tenant, queue and state) and
jobctl.claim_metrics (claims and waits over a window). `doctor` prints jobctl.health_checks plus a
"schema current" check from the migration plan (which reads the catalog itself: not a client call).
`top` redraws both until Ctrl-C, on one connection that it opens again when it breaks; the figures
are the client's calls on it (`conn=`).
"""

from __future__ import annotations

import itertools
import shutil
import sys
import time
from collections import Counter
from datetime import datetime, timedelta

import click
import psycopg

from jobctl import contract, output
from jobctl import migrate as mig
from jobctl.cli.common import Conn, JsonCommand, Row, client, connect, show, user_message
from jobctl.cli.schema import plan_issues
from jobctl.client import Client

WAITING = ("pending", "failed")  # due jobs in these states wait for a claim
VERDICTS = ("ok", "warn", "fail")

window_option = click.option(
    "--window",
    type=click.FloatRange(0, 86400, min_open=True),
    default=60,
    show_default=True,
    metavar="SECONDS",
    help="Claims/s and waits are measured over this last stretch of time.",
)


def figures(
    calls: Client, conn: Conn | None, tenant_id: str | None, queue: str | None, window: float
) -> tuple[datetime, list[Row]]:
    """The database clock and one row per tenant and queue: jobs by state, the age of the oldest
    due job still waiting (pending or failed), claims/s and the p50/p99 wait from due to claimed.
    conn None: on the client's own connection."""
    now = calls.now(conn=conn)
    counts = calls.stats(tenant_id, queue, conn=conn)
    claims = calls.claim_metrics(timedelta(seconds=window), tenant_id, queue, conn=conn)
    rows: dict[tuple[str, str], Row] = {}

    def row(t: str, q: str) -> Row:
        blank: Row = {"tenant_id": t, "queue": q, **dict.fromkeys(contract.STATES, 0), "oldest_due_s": None}
        blank |= {"claims": 0, "claims_per_s": 0.0, "wait_p50_s": None, "wait_p99_s": None}
        return rows.setdefault((t, q), blank)

    for c in counts:
        r = row(c.tenant_id, c.queue)
        r[c.state] = c.jobs
        oldest = c.oldest_run_at
        if c.state in WAITING and oldest is not None and oldest <= now:
            r["oldest_due_s"] = max((now - oldest).total_seconds(), r["oldest_due_s"] or 0.0)
    for m in claims:
        row(m.tenant_id, m.queue).update(output.record(m))
    return now, [rows[k] for k in sorted(rows)]


# the figures' columns, by the key of the row they show; on a narrow terminal (`top`) short headers, and
# the least telling go first. Waiting: for parents or a batch, jobctl.stats' row of its own. Seconds
# are shown as durations, claims/s to a tenth.
FIGURE_COLUMNS = {
    "tenant_id": output.Column("TENANT", "TENANT"),
    "queue": output.Column("QUEUE", "QUEUE"),
    "pending": output.Column("PENDING", "PEND", right=True),
    "waiting": output.Column("WAITING", "WAIT", right=True, drop=1),  # the first to go on a narrow terminal
    "running": output.Column("RUNNING", "RUN", right=True),
    "completed": output.Column("COMPLETED", "DONE", right=True, drop=2),
    "failed": output.Column("FAILED", "FAIL", right=True),
    "dead": output.Column("DEAD", "DEAD", right=True, drop=4),
    "cancelled": output.Column("CANCELLED", "CANC", right=True, drop=1),
    "oldest_due_s": output.Column("OLDEST DUE", "OLDEST", right=True, text=output.duration),
    "claims_per_s": output.Column("CLAIMS/S", "CLM/S", right=True, text="{:.1f}".format),
    "wait_p50_s": output.Column("WAIT P50", "P50", right=True, drop=3, text=output.duration),
    "wait_p99_s": output.Column("WAIT P99", "P99", right=True, text=output.duration),
}


def figures_table(rows: list[Row], width: int | None = None) -> str:
    """The figures as a table, at most `width` characters wide (output.fitted_table)."""
    body = [[r[k] for k in FIGURE_COLUMNS] for r in rows]
    return output.fitted_table(list(FIGURE_COLUMNS.values()), body, width)


@click.command(cls=JsonCommand)
@click.option("--tenant", "tenant_id", metavar="TENANT", help="Only this tenant.")
@click.option("--queue", metavar="QUEUE", help="Only this queue.")
@window_option
def stats(tenant_id: str | None, queue: str | None, window: float, as_json: bool) -> None:
    """Jobs by state, oldest due job, claims/s and waits, per queue.

    One row per tenant and queue.
    OLDEST DUE is how long the oldest due job not yet claimed has waited; waits run from a job's
    run_at to its claim.
    """
    _, rows = figures(client(), None, tenant_id, queue, window)
    show(rows, as_json, figures_table(rows) if rows else "(no jobs)")


def schema_check(conn: Conn) -> Row:
    p = mig.plan(conn)
    issues = plan_issues(p)
    observed = (
        f"{len(p.pending)} migrations pending, functions {'current' if p.functions_current else 'differ'}"
        if not p.problems
        else f"{len(p.problems)} problems"
    )
    return {
        "check_name": "schema current",
        "verdict": "fail" if issues else "ok",
        "observed": observed,
        "detail": "; ".join(issues) + ("" if p.problems else " (run jobctl migrate)") if issues else None,
    }


def checks(calls: Client, conn: Conn) -> list[Row]:
    return [schema_check(conn), *(dict(output.record(c)) for c in calls.health_checks(conn=conn))]


def summary(rows: list[Row]) -> str:
    """16 ok, 1 warn (cron job jobctl-tick), 0 fail"""
    parts = []
    for v in VERDICTS:
        names = [r["check_name"] for r in rows if r["verdict"] == v]
        parts.append(f"{len(names)} {v}" + (f" ({', '.join(names)})" if names and v != "ok" else ""))
    return ", ".join(parts)


@click.command(cls=JsonCommand)
def doctor(as_json: bool) -> None:
    """Check the scheduler's health; exit 1 when a check fails.

    Schema, extensions, pg_cron jobs and their last run, reaper lag, dead tuples of the queue tables,
    transaction-ID age, old snapshots, partitions made ahead, the NOTIFY queue: each ok, warn or fail.
    """
    with connect() as conn:
        rows = checks(client(), conn)
    counts = Counter(r["verdict"] for r in rows)
    worst = next((v for v in reversed(VERDICTS) if counts[v]), "ok")
    table = output.table(
        ["CHECK", "VERDICT", "OBSERVED"], [[r["check_name"], r["verdict"], r["observed"]] for r in rows]
    )
    notes = [
        f"{r['check_name']} ({r['verdict']}): {output.cell(r['detail'])}"
        for r in rows
        if r["verdict"] != "ok" and r["detail"]
    ]
    blocks = [table, "\n".join(notes), f"doctor: {summary(rows)}"]  # a blank line between them
    doc = {"verdict": worst, "counts": {v: counts[v] for v in VERDICTS}, "checks": rows}
    show(doc, as_json, "\n\n".join(b for b in blocks if b))
    if counts["fail"]:
        raise click.exceptions.Exit(1)


@click.command()
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=2,
    show_default=True,
    metavar="SECONDS",
    help="Redraw every SECONDS.",
)
@click.option("--tenant", "tenant_id", metavar="TENANT", help="Only this tenant.")
@click.option("--queue", metavar="QUEUE", help="Only this queue.")
@window_option
@click.option(
    "--iterations", type=click.IntRange(min=1), metavar="N", help="Stop after N screens (default: at Ctrl-C)."
)
def top(
    tenant_id: str | None, queue: str | None, window: float, interval: float, iterations: int | None
) -> None:
    """A live dashboard of the stats table and a health summary.

    Redrawn every --interval seconds until Ctrl-C, busiest queues first, fitted to the terminal's
    width (short headers, then fewer columns) and, on a terminal, its height. The screen is cleared
    between redraws only when stdout is a terminal; a lost connection is retried.
    """
    tty = sys.stdout.isatty()
    calls = Client()  # no connection of its own: every call runs on `conn`
    conn: Conn | None = connect()  # the first connection must work; later ones are retried

    def frame(conn: Conn, width: int, height: int | None) -> str:
        """One screen, at most `width` columns and `height` lines (None: every row) large."""
        now, rows = figures(calls, conn, tenant_id, queue, window)
        health = checks(calls, conn)
        every = f"every {interval:g}s, claims over {window:g}s"
        title = f"jobctl top  {output.timestamp(now)}  {every}  (Ctrl-C quits)"
        lines = [output.clip(title, width), output.clip(f"health: {summary(health)}", width), ""]
        # the busiest first: unfinished jobs, then claims
        rows.sort(key=lambda r: (-(r["pending"] + r["failed"] + r["running"]), -r["claims_per_s"]))
        shown = rows if height is None else rows[: max(height - len(lines) - 3, 1)]
        lines.append(figures_table(shown, width) if rows else "(no jobs)")
        if len(shown) < len(rows):
            lines.append(f"... and {len(rows) - len(shown)} more (narrow with --tenant / --queue)")
        return "\n".join(lines)

    try:
        for drawn in itertools.count() if iterations is None else range(iterations):
            if drawn:
                time.sleep(interval)
            try:
                if conn is None or conn.closed:
                    conn = connect()
                columns, lines = shutil.get_terminal_size()  # $COLUMNS and $LINES first; else 80x24
                screen = frame(conn, columns, lines if tty else None)
            except psycopg.OperationalError as e:
                if e.sqlstate is not None and not e.sqlstate.startswith("57P"):  # 57P: server going down
                    raise
                if conn is not None:
                    conn.close()
                conn = None
                screen = f"jobctl top: {user_message(e)}; retrying every {interval:g}s"
            if tty:
                click.clear()
            elif drawn:
                click.echo()
            click.echo(screen)
    except KeyboardInterrupt:
        pass
    finally:
        if conn is not None:
            conn.close()
