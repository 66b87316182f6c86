"""What every command shares: the connection, `--json`, row helpers and the one-line error."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

import click
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import set_json_loads

from jobctl import db, errors, output
from jobctl import migrate as mig
from jobctl.errors import first_line

Row = dict[str, Any]
Conn = psycopg.Connection[tuple[object, ...]]

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")

# SQLSTATEs that mean the schema is missing or older than this code
_NOT_INSTALLED = {"3F000", "42883", "42P01", "42703"}


class CliError(click.ClickException):
    """Shown as `jobctl: <one line>` on stderr, exit status 1. The message may echo a tenant's
    strings: control characters are shown as escapes (`output.printable`)."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"jobctl: {output.printable(self.format_message())}", err=True)


def connect() -> Conn:
    """An autocommit connection: each statement is its own transaction unless a command opens one.
    JSON columns nested too deeply to decode come as `output.RawJson` (shown as text)."""
    conn = db.connect(autocommit=True)
    set_json_loads(output.load_json, conn)
    return conn


def fetch_all(conn: Conn, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def fetch_one(conn: Conn, query: str, params: Mapping[str, Any] | None = None) -> Row | None:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchone()


def echo_json(doc: object) -> None:
    click.echo(output.to_json(doc))


def parse_json(text: str, what: str, field: str | None = None) -> Any:
    """JSON given by the user; a bad document is an InvalidInput naming `what` (and the field)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        message = f"{what} is not valid JSON: {e.msg} at column {e.colno}"
        raise errors.InvalidInput(message, field=field) from None


def jobctl_message(e: errors.JobctlError) -> str:
    message = first_line(str(e))
    tags = [t for t in (e.sqlstate, f"field: {e.field}" if e.field else "") if t]
    return f"{message} [{', '.join(tags)}]" if tags else message


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
        hint = " (is the schema installed? run `jobctl migrate`)" if e.sqlstate in _NOT_INSTALLED else ""
        return f"database error: {message}{hint} [{e.sqlstate}]"
    if isinstance(e, errors.JobctlError):
        return jobctl_message(e)
    if isinstance(e, db.ConfigError | mig.MigrationError):
        return first_line(str(e))
    return None


def set_paused(what: str, key: str, name: str, sql: str, paused: bool, as_json: bool) -> None:
    """Pause or resume a tenant or a queue (`what`; `key` its parameter's name) with `sql`, and say
    whether its state changed."""
    with connect() as conn:
        row = fetch_one(conn, sql, {key: name, "paused": paused})
    changed = bool(row and row["changed"])
    if as_json:
        echo_json({key: name, "paused": paused, "changed": changed})
        return
    state = "paused" if paused else "resumed"
    click.echo(f"{what} {name} {state}" if changed else f"{what} {name} was already {state}")
