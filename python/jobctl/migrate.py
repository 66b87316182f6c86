"""Apply the schema: numbered migrations once each, then every function file, in one transaction.

Migrations (`migrations/NNNN_slug.sql`) are immutable once landed: their checksum is recorded and a
changed file is refused. Function files (`sql/functions/*.sql`, in the order of `sql/functions.list`)
are CREATE OR REPLACE and are re-applied on every run. The whole run holds a transaction-level
advisory lock, so two concurrent runs serialise instead of interleaving.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import psycopg

from jobctl.db import ROOT

SQL_DIR = ROOT / "sql"
MIGRATIONS_DIR = ROOT / "migrations"
LOCK_KEY = "jobctl.migrate"
BOOTSTRAP = """
create schema if not exists jobctl;
create table if not exists jobctl._applied (
    kind text not null check (kind in ('migration', 'functions')),
    name text not null,
    checksum text not null,
    applied_at timestamptz not null default now(),
    primary key (kind, name)
);
"""
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Script:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


class MigrationError(RuntimeError):
    pass


def migrations() -> list[Script]:
    files = sorted(p for p in MIGRATIONS_DIR.glob("*.sql"))
    bad = [p.name for p in files if not _MIGRATION_NAME.match(p.name)]
    if bad:
        raise MigrationError(f"migration file names must look like NNNN_slug.sql: {', '.join(bad)}")
    return [Script(p.name, p.read_text()) for p in files]


def functions() -> Script:
    """All function files as one script, in the order of sql/functions.list."""
    names = [
        line.strip()
        for line in (SQL_DIR / "functions.list").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = [f"-- {n}\n" + (SQL_DIR / "functions" / n).read_text() for n in names]
    parts.append("-- grants.sql\n" + (SQL_DIR / "grants.sql").read_text())
    return Script("sql/functions", "\n".join(parts))


def _applied(conn: psycopg.Connection[tuple[object, ...]]) -> dict[tuple[str, str], str]:
    exists = conn.execute("select to_regclass('jobctl._applied') is not null").fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute("select kind, name, checksum from jobctl._applied").fetchall()
    return {(str(k), str(n)): str(c) for k, n, c in rows}


@dataclass
class Plan:
    pending: list[Script]
    functions: Script
    functions_current: bool
    problems: list[str]


def plan(conn: psycopg.Connection[tuple[object, ...]]) -> Plan:
    applied = _applied(conn)
    files = migrations()
    problems = []
    pending = []
    names = {m.name for m in files}
    for m in files:
        have = applied.get(("migration", m.name))
        if have is None:
            pending.append(m)
        elif have != m.checksum:
            problems.append(f"migration {m.name} changed after it was applied (migrations are immutable)")
    for kind, name in applied:
        if kind == "migration" and name not in names:
            problems.append(f"migration {name} is applied but its file is missing")
    fn = functions()
    current = applied.get(("functions", fn.name)) == fn.checksum
    return Plan(pending, fn, current, problems)


def script(p: Plan) -> str:
    """The SQL a run would execute, for a DBA to review."""
    out = ["begin;", f"select pg_advisory_xact_lock(hashtext('{LOCK_KEY}'));", BOOTSTRAP.strip()]
    for m in p.pending:
        out += [f"-- migration {m.name}", m.sql]
    out += ["-- functions (re-applied on every run)", p.functions.sql, "commit;"]
    return "\n".join(out)


def migrate(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """Apply pending migrations and the function files; returns what was applied."""
    done: list[str] = []
    with conn.transaction():
        conn.execute("select pg_advisory_xact_lock(hashtext(%s))", (LOCK_KEY,))
        conn.execute("set local client_min_messages = warning")
        conn.execute(BOOTSTRAP)
        p = plan(conn)
        if p.problems:
            raise MigrationError("; ".join(p.problems))
        for m in p.pending:
            conn.execute(m.sql.encode())
            conn.execute(
                "insert into jobctl._applied (kind, name, checksum) values ('migration', %s, %s)",
                (m.name, m.checksum),
            )
            done.append(m.name)
        conn.execute(p.functions.sql.encode())
        if not p.functions_current:
            conn.execute(
                """insert into jobctl._applied (kind, name, checksum) values ('functions', %s, %s)
                   on conflict (kind, name) do update set checksum = excluded.checksum, applied_at = now()""",
                (p.functions.name, p.functions.checksum),
            )
            done.append(p.functions.name)
    return done
