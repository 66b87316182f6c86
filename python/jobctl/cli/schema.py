"""`jobctl migrate` and `jobctl validate`: install or upgrade the schema, or tell whether it is behind."""

from __future__ import annotations

import click

from jobctl import migrate as mig
from jobctl.cli.common import JsonCommand, connect, nothing_applied, show


def plan_issues(p: mig.Plan) -> list[str]:
    """What makes the database differ from the files (empty: current)."""
    issues = list(p.problems)
    issues += [f"migration {m.name} is not applied" for m in p.pending]
    if not p.functions_current:
        issues.append("sql/functions differ from what was last applied")
    return issues


@click.command(cls=JsonCommand)
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="Print the whole schema as one psql script that installs or upgrades any database; connect to none.",
)
def migrate(print_only: bool, as_json: bool) -> None:
    """Apply pending migrations and re-apply every SQL function.

    Runs in one transaction under an advisory lock: safe to run twice, or from two places at once.
    """
    if print_only:
        click.echo(mig.script(), nl=False)
        return
    with connect() as conn, nothing_applied("migrate"):
        done = mig.migrate(conn)
    show({"applied": done}, as_json, f"migrate: ok ({', '.join(done) if done else 'nothing new'})")


@click.command(cls=JsonCommand)
def validate(as_json: bool) -> None:
    """Exit 1 when the database is behind the files.

    Also when a migration was edited after it was applied (migrations are immutable).
    """
    with connect() as conn:
        issues = plan_issues(mig.plan(conn))
    if as_json:
        show({"current": not issues, "issues": issues}, as_json)
    else:
        for line in issues:
            click.echo(f"validate: {line}", err=True)
        if not issues:
            click.echo("validate: ok, the database is current")
    if issues:
        raise click.exceptions.Exit(1)
