"""What every command shares: `--json` (JsonCommand, JsonGroup), the command's client, a connection
(for what is not a client call: the migration plan, authenticate), the types of ids, times and pages,
and the one-line error."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import IO, Any, TypeVar

import click
import psycopg
from psycopg.types.json import set_json_loads

from jobctl import db, errors, output
from jobctl import migrate as mig
from jobctl.client import BIGINT_MAX, Client, check_id, load_json
from jobctl.errors import first_line

Row = dict[str, Any]
Decorated = TypeVar("Decorated", bound=Callable[..., Any])  # a command's callback, under its options
Conn = psycopg.Connection[tuple[object, ...]]


class JsonCommand(click.Command):
    """A command with `--json` after its other options: its callback gets `as_json`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        text = "Print one JSON document instead of text."
        self.params.append(click.Option(["--json", "as_json"], is_flag=True, help=text))


class JsonGroup(click.Group):
    """A command group whose commands all take `--json` (JsonCommand)."""

    command_class = JsonCommand


# SQLSTATEs that mean the schema is missing or older than this code
_NOT_INSTALLED = {"3F000", "42883", "42P01", "42703"}


class CliError(click.ClickException):
    """Shown as `jobctl: <one line>` on stderr, exit status 1. The message may echo a tenant's
    strings: control characters are shown as escapes (`output.printable`)."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"jobctl: {output.printable(first_line(self.format_message()))}", err=True)


class CliUsageError(click.UsageError):
    """A usage error as one line, `jobctl: <message> (see 'jobctl <command> --help')`, exit status 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        message = first_line(self.format_message())
        help_hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"jobctl: {output.printable(message)}{help_hint}", err=True)


def one_line_usage(e: click.UsageError) -> click.UsageError:
    """click's usage error as a CliUsageError (one that prints a command's help stays as it is)."""
    if isinstance(e, CliUsageError | click.exceptions.NoArgsIsHelpError):
        return e
    return CliUsageError(e.format_message(), ctx=e.ctx)


def as_id(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """The callback of an ID argument or option: a whole number from 1 to the largest bigint
    (client.check_id), else a usage error naming the argument."""
    if value is None:
        return None
    try:
        return check_id(int(value.strip()))
    except (ValueError, errors.InvalidInput):
        raise click.BadParameter(
            f"{value!r} is not an id: a whole number from 1 to {BIGINT_MAX}", ctx, param
        ) from None


# `--run-at +5m`: due this long from now by the database clock
_RELATIVE = re.compile(r"^\+(\d+(?:\.\d+)?)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def as_run_at(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | timedelta | None:
    """The callback of --run-at: ISO 8601 with a zone (2026-12-02T02:00:00Z, 2026-12-02 02:00:00+01:00),
    or a time from now by the database clock, +30s, +5m, +2h, +1d (a timedelta); else a usage error."""
    if value is None:
        return None
    text = value.strip()
    if m := _RELATIVE.match(text):
        return timedelta(seconds=float(m[1]) * _UNIT_SECONDS[m[2]])
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        raise click.BadParameter(
            f"{text!r} is neither an ISO 8601 time with a zone (2026-12-02T02:00:00Z) "
            "nor a time from now (+30s, +5m, +2h, +1d)",
            ctx,
            param,
        )
    return at


def connect() -> Conn:
    """An autocommit connection: each statement is its own transaction unless a command opens one.
    JSON columns nested too deeply to decode come as `client.RawJson` (shown as text)."""
    conn = db.connect(autocommit=True)
    set_json_loads(load_json, conn)
    return conn


def client() -> Client:
    """A client for the running command: it connects at its first call and closes when the command
    ends."""
    return click.get_current_context().with_resource(Client())


def show(doc: object, as_json: bool, text: str | None = None) -> None:
    """Print `doc` as one JSON document with --json, else `text`: by default `doc`, a client row, as
    `key: value` lines."""
    if as_json:
        click.echo(output.to_json(doc))
    else:
        click.echo(output.key_values(output.record(doc)) if text is None else text)


def show_table(rows: list[Any], as_json: bool, columns: output.Columns, right: Iterable[int] = ()) -> None:
    """Print client rows as one JSON array with --json, else as a table (`output.rows_table`)."""
    show(rows, as_json, output.rows_table(rows, columns, right))


def parse_json(text: str | bytes, what: str, field: str | None = None) -> Any:
    """JSON given by the user (bytes: UTF-8); a bad document is an InvalidInput naming `what` (and the
    field)."""
    try:
        return json.loads(text.decode() if isinstance(text, bytes) else text)
    except UnicodeDecodeError:
        raise errors.InvalidInput(f"{what} is not UTF-8", field=field) from None
    except json.JSONDecodeError as e:
        message = f"{what} is not valid JSON: {e.msg} at column {e.colno}"
        raise errors.InvalidInput(message, field=field) from None


def jobctl_message(e: errors.JobctlError) -> str:
    """`<message> [<SQLSTATE>, field: <name>] hint: <the database's HINT>`, on one line."""
    message = first_line(str(e))
    tags = [t for t in (e.sqlstate, f"field: {e.field}" if e.field else "") if t]
    hint = " ".join((e.hint or "").split())
    return message + (f" [{', '.join(tags)}]" if tags else "") + (f" hint: {hint}" if hint else "")


def user_message(e: BaseException) -> str | None:
    """One readable line for an error a user can act on; None for a bug."""
    if isinstance(e, psycopg.Error):
        mapped = errors.from_db(e)
        if mapped is not None:
            return jobctl_message(mapped)
        message = first_line(e.diag.message_primary or str(e))
        if e.sqlstate is None:  # no answer from a server
            if isinstance(e, psycopg.OperationalError):  # it could not be reached or went away
                return "cannot reach the database: " + message.removeprefix("connection failed: ")
            return f"database error: {message}"  # e.g. a malformed --dsn
        missing = " (is the schema installed? run `jobctl migrate`)" if e.sqlstate in _NOT_INSTALLED else ""
        hint = " ".join((e.diag.message_hint or "").split())
        return f"database error: {message}{missing} [{e.sqlstate}]" + (f" hint: {hint}" if hint else "")
    if isinstance(e, errors.JobctlError):
        return jobctl_message(e)
    if isinstance(e, db.ConfigError | mig.MigrationError):
        return first_line(str(e))
    return None


def last_error(row: Any) -> str | None:
    """A job's last error for a table: one line of at most 50 characters."""
    return output.truncate(row.last_error, 50) if row.last_error else None


def page_options(size: int, before_help: str, limit_help: str) -> Callable[[Decorated], Decorated]:
    """`--before ID` and `--limit N` (1..1000, default `size`) of a list of jobs, newest first, a page
    at a time (show_more)."""
    before = click.option("--before", "before_id", callback=as_id, metavar="ID", help=before_help)
    most = click.option(
        "--limit", type=click.IntRange(1, 1000), default=size, show_default=True, metavar="N", help=limit_help
    )

    def decorate(callback: Decorated) -> Decorated:
        return before(most(callback))

    return decorate


def show_more(rows: list[Any], limit: int, command: str, args: list[str]) -> None:
    """After a full page of jobs, newest first: the command line that shows the next page."""
    if len(rows) == limit:
        args += ["--before", str(rows[-1].job_id), "--limit", str(limit)]
        click.echo(f"(more may follow: jobctl {command} {shlex.join(args)})")


@contextlib.contextmanager
def nothing_applied(what: str) -> Iterator[None]:
    """A statement the database refused, told as `<what> failed, nothing applied: <message> [SQLSTATE]`
    (an error of the connection itself stays as it is)."""
    try:
        yield
    except psycopg.Error as e:
        if e.sqlstate is None:
            raise
        message = first_line(e.diag.message_primary or str(e))
        raise CliError(f"{what} failed, nothing applied: {message} [{e.sqlstate}]") from None
