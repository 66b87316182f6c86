"""Apply the schema: numbered migrations once each, then every function file, in one transaction.

Migrations (`migrations/NNNN_slug.sql`) hold tables, types and data moves, and are immutable once
landed: their checksums are committed (`migrations/SHA256SUMS`, tests/test_migrate.py), recorded
when applied, and a changed file is refused. The re-applied layer (`sql/functions/<folder>/*.sql`,
a folder per concept: functions and views, CREATE OR REPLACE, in the order of `sql/functions.list`,
then `sql/grants.sql`) is applied on every run. The whole run holds a transaction-level advisory
lock, so two concurrent runs serialise instead of interleaving. Both directories ship inside the
package (jobctl.migrations, jobctl.sql: pyproject.toml), so an installed wheel migrates a database
as a checkout does.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable

import psycopg

SQL_DIR: Traversable = files("jobctl.sql")
MIGRATIONS_DIR: Traversable = files("jobctl.migrations")
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
# what was applied, with its checksum (a migration's row is new: it is recorded once, when applied)
RECORD = """
insert into jobctl._applied (kind, name, checksum) values (%s, %s, %s)
on conflict (kind, name) do update set checksum = excluded.checksum, applied_at = now()
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
    found = sorted((p for p in MIGRATIONS_DIR.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
    bad = [p.name for p in found if not _MIGRATION_NAME.match(p.name)]
    if bad:
        raise MigrationError(f"migration file names must look like NNNN_slug.sql: {', '.join(bad)}")
    return [Script(p.name, p.read_text()) for p in found]


def listed(path: Traversable) -> list[str]:
    """The files a .list file names, in order: its lines but its blank ones, its comments (`#`) and
    its group headings (`-- Group:`)."""
    lines = path.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "--"))]


def function_files() -> list[str]:
    """The function files in install order, as folder/file.sql under sql/functions (sql/functions.list)."""
    return listed(SQL_DIR / "functions.list")


def functions() -> Script:
    """All function files as one script, in the order of sql/functions.list."""
    parts = [f"-- {n}\n" + (SQL_DIR / "functions").joinpath(n).read_text() for n in function_files()]
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


def script() -> str:
    """The whole schema as one psql script that installs or upgrades any database, for a DBA who runs
    psql only (`jobctl migrate --print`): what `migrate` does, in one transaction under the same lock,
    each migration guarded by psql's \\if on jobctl._applied and refused when an applied one changed."""
    out = [
        "-- jobctl: install or upgrade the schema (jobctl migrate --print). Run with:",
        "--   psql -X -v ON_ERROR_STOP=1 -d <database> -f <this file>",
        "\\set ON_ERROR_STOP on",
        "begin;",
        f"select pg_advisory_xact_lock(hashtext('{LOCK_KEY}')) is not null as locked \\gset",
        "set local client_min_messages = warning;",
        BOOTSTRAP.strip(),
    ]
    names = ", ".join(f"'{m.name}'" for m in migrations())
    out += [  # a database a newer package migrated: this script's older functions must not replace its own
        "select exists (select from jobctl._applied as a where a.kind = 'migration'"
        f" and a.name not in ({names})) as ahead \\gset",
        "\\if :ahead",
        "do $$ begin raise exception 'the database has migrations this script does not know"
        " (it was migrated by a newer jobctl)'; end $$;",
        "\\endif",
    ]
    for m in migrations():
        out += [
            f"-- migration {m.name}",
            "select coalesce((select a.checksum from jobctl._applied as a"
            f" where a.kind = 'migration' and a.name = '{m.name}'), '') as applied \\gset",
            f"select :'applied' not in ('', '{m.checksum}') as changed, :'applied' = '' as pending \\gset",
            "\\if :changed",
            f"do $$ begin raise exception 'migration {m.name} changed after it was applied"
            " (migrations are immutable)'; end $$;",
            "\\endif",
            "\\if :pending",
            m.sql.rstrip(),
            "insert into jobctl._applied (kind, name, checksum)"
            f" values ('migration', '{m.name}', '{m.checksum}');",
            "\\endif",
        ]
    fn = functions()
    out += [
        "-- the re-applied layer: functions, views, grants",
        fn.sql.rstrip(),
        "insert into jobctl._applied (kind, name, checksum)"
        f" values ('functions', '{fn.name}', '{fn.checksum}')",
        "on conflict (kind, name) do update set checksum = excluded.checksum, applied_at = now();",
        "commit;",
    ]
    return "\n".join(out) + "\n"


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
            conn.execute(RECORD, ("migration", m.name, m.checksum))
            done.append(m.name)
        conn.execute(p.functions.sql.encode())
        if not p.functions_current:
            conn.execute(RECORD, ("functions", p.functions.name, p.functions.checksum))
            done.append(p.functions.name)
    return done
