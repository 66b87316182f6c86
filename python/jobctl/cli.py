"""The `jobctl` command line. Errors are one readable line and a non-zero exit, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click
import psycopg

from jobctl import db
from jobctl import migrate as mig


def _one_line_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (db.NoDsnError, mig.MigrationError) as e:
            raise click.ClickException(str(e)) from None
        except psycopg.Error as e:
            diag = e.diag
            msg = (diag.message_primary or str(e)).strip().splitlines()[0]
            code = f" [{diag.sqlstate}]" if diag.sqlstate else ""
            raise click.ClickException(f"{msg}{code}") from None

    return wrapper


@click.group()
@click.version_option(package_name="jobctl")
def main() -> None:
    """jobctl: a multi-tenant job scheduler inside PostgreSQL."""


@main.command()
@click.option("--print", "print_only", is_flag=True, help="Print the SQL that would run; change nothing.")
@_one_line_errors
def migrate(print_only: bool) -> None:
    """Apply pending migrations and re-apply every SQL function."""
    with db.connect() as conn:
        if print_only:
            p = mig.plan(conn)
            if p.problems:
                raise mig.MigrationError("; ".join(p.problems))
            click.echo(mig.script(p))
            return
        done = mig.migrate(conn)
    applied = ", ".join(done) if done else "nothing new"
    click.echo(f"migrate: ok ({applied})")


@main.command()
@_one_line_errors
def validate() -> None:
    """Exit non-zero when the database is behind the files or a landed migration was edited."""
    with db.connect() as conn:
        p = mig.plan(conn)
    issues = list(p.problems)
    issues += [f"migration {m.name} is not applied" for m in p.pending]
    if not p.functions_current:
        issues.append("sql/functions differ from what was last applied")
    for line in issues:
        click.echo(f"validate: {line}", err=True)
    if issues:
        sys.exit(1)
    click.echo("validate: ok, the database is current")


if __name__ == "__main__":
    main()
