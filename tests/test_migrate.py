"""Migrations: a second run changes nothing, validate tells when the database is behind."""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from jobctl import migrate as mig
from psycopg.conninfo import conninfo_to_dict, make_conninfo

JOBCTL = [sys.executable, "-m", "jobctl.cli"]
ROOT = Path(__file__).resolve().parents[1]


def run(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JOBCTL_DSN": dsn}
    return subprocess.run([*JOBCTL, *args], env=env, capture_output=True, text=True, timeout=120)


def schema_dump(dsn: str) -> str:
    params = conninfo_to_dict(dsn)
    pg_dump = shutil.which("pg_dump") or "pg_dump"
    out = subprocess.run(
        [pg_dump, "--schema-only", "--no-owner", "-d", make_conninfo(**params)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    volatile = ("-- Dumped", "\\restrict", "\\unrestrict")  # versions and pg_dump's random per-run token
    return "\n".join(line for line in out.splitlines() if not line.startswith(volatile))


@contextlib.contextmanager
def fresh_database(dsn: str, name: str = "", template: str | None = None) -> Iterator[str]:
    """A new database beside the one of dsn, dropped at the end: empty, or a copy of the database of
    `template` (a DSN no session is connected to)."""
    params = conninfo_to_dict(dsn)
    name = name or f"jobctl_fresh_{os.getpid()}"
    copy = f' template "{conninfo_to_dict(template)["dbname"]}"' if template else ""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'drop database if exists "{name}" with (force)')
        c.execute(f'create database "{name}"{copy}')
    try:
        yield make_conninfo(**{**params, "dbname": name})
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'drop database "{name}" with (force)')


def state_rows(dsn: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as c:
        rows = c.execute("select kind, name, checksum, applied_at from jobctl._applied order by 1, 2")
        rows = rows.fetchall()
        parts = c.execute(
            "select parent_table, partition_interval, premake from partman.part_config order by 1"
        ).fetchall()
        return rows + parts


def test_fresh_install_then_second_run_changes_nothing(scratch_dsn: str) -> None:
    first = run(scratch_dsn, "migrate")
    assert first.returncode == 0, first.stderr
    assert "0001_core.sql" in first.stdout
    before_schema, before_state = schema_dump(scratch_dsn), state_rows(scratch_dsn)
    assert "CREATE FUNCTION jobctl.claim_job" in before_schema

    second = run(scratch_dsn, "migrate")
    assert second.returncode == 0, second.stderr
    assert "nothing new" in second.stdout
    assert schema_dump(scratch_dsn) == before_schema
    assert state_rows(scratch_dsn) == before_state


def test_rerun_on_the_cron_database_keeps_cron_jobs(dsn: str) -> None:
    def cron_jobs() -> list[tuple[object, ...]]:
        with psycopg.connect(dsn) as c:
            return c.execute(
                "select jobname, schedule, command from cron.job where jobname like 'jobctl-%' order by 1"
            ).fetchall()

    before_schema, before_cron = schema_dump(dsn), cron_jobs()
    assert [j[0] for j in before_cron] == ["jobctl-cron-history", "jobctl-partitions", "jobctl-tick"]
    assert run(dsn, "migrate").returncode == 0
    assert schema_dump(dsn) == before_schema
    assert cron_jobs() == before_cron


def test_validate(scratch_dsn: str) -> None:
    behind = run(scratch_dsn, "validate")
    assert behind.returncode == 1
    assert "migration 0001_core.sql is not applied" in behind.stderr

    assert run(scratch_dsn, "migrate").returncode == 0
    ok = run(scratch_dsn, "validate")
    assert ok.returncode == 0 and "current" in ok.stdout

    with psycopg.connect(scratch_dsn, autocommit=True) as c:
        c.execute("update jobctl._applied set checksum = 'edited' where kind = 'migration'")
    edited = run(scratch_dsn, "validate")
    assert edited.returncode == 1 and "changed after it was applied" in edited.stderr
    refused = run(scratch_dsn, "migrate")
    assert refused.returncode == 1
    assert refused.stderr.startswith("jobctl: migration 0001_core.sql changed")
    assert "Traceback" not in refused.stderr


def psql_file(dsn: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["psql", "-X", "-q", "-d", dsn, "-f", str(path)], capture_output=True, text=True, timeout=120
    )


def test_printed_script_installs_and_upgrades_with_psql_alone(
    dsn: str, scratch_dsn: str, tmp_path: Path
) -> None:
    """`migrate --print` needs no database; psql running its script installs the schema migrate
    installs, a second run changes nothing, and an edited migration stops it with nothing applied."""
    printed = run("host=/nonexistent port=1 dbname=x connect_timeout=1", "migrate", "--print")
    assert printed.returncode == 0, printed.stderr
    script = tmp_path / "jobctl.sql"
    script.write_text(printed.stdout)

    first = psql_file(scratch_dsn, script)
    assert first.returncode == 0 and first.stdout == "", first.stdout + first.stderr
    ok = run(scratch_dsn, "validate")
    assert ok.returncode == 0, ok.stderr
    with fresh_database(dsn) as fresh:
        assert run(fresh, "migrate").returncode == 0
        assert schema_dump(scratch_dsn) == schema_dump(fresh)
    before = state_rows(scratch_dsn)
    again = psql_file(scratch_dsn, script)
    assert again.returncode == 0, again.stderr
    assert [r for r in state_rows(scratch_dsn) if r[0] == "migration"] == [
        r for r in before if r[0] == "migration"
    ]

    with psycopg.connect(scratch_dsn, autocommit=True) as c:
        c.execute("insert into jobctl._applied (kind, name, checksum) values ('migration', '9999_x.sql', '')")
    ahead = psql_file(scratch_dsn, script)
    assert ahead.returncode == 3 and "migrated by a newer jobctl" in ahead.stderr, ahead.stderr
    with psycopg.connect(scratch_dsn, autocommit=True) as c:
        c.execute("delete from jobctl._applied where name = '9999_x.sql'")
        c.execute("update jobctl._applied set checksum = 'edited' where name = '0003_job_fillfactor.sql'")
        c.execute("delete from jobctl._applied where name = '0024_tick_lock_schema.sql'")
    refused = psql_file(scratch_dsn, script)
    assert refused.returncode == 3
    assert "migration 0003_job_fillfactor.sql changed after it was applied" in refused.stderr
    with psycopg.connect(scratch_dsn) as c:
        kept = c.execute("select count(*) from jobctl._applied where name = '0024_tick_lock_schema.sql'")
        assert kept.fetchone() == (0,), "the refused run applied nothing"


def test_cli_error_is_one_line_without_traceback() -> None:
    out = run("host=/nonexistent port=1 dbname=x connect_timeout=2", "validate")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_concurrent_migrations_serialise(scratch_dsn: str) -> None:
    procs = [
        subprocess.Popen(
            [*JOBCTL, "migrate"],
            env={**os.environ, "JOBCTL_DSN": scratch_dsn},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert all(rc == 0 for _, _, rc in results), results
    assert sum("0001_core.sql" in out for out, _, _ in results) == 1


def test_migration_files_are_named_and_ordered() -> None:
    names = sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))
    assert names and names[0] == "0001_core.sql"


def test_function_files_are_listed_once_under_their_folders_heading() -> None:
    """sql/functions.list names every file under sql/functions once, as folder/file.sql, under the
    heading `-- Group: <folder> - <what it holds>` of its own folder; each folder has one heading, and
    ships in the wheel (a package of pyproject.toml whose data is its *.sql). migrate reads the same
    files in the same order."""
    folder = ""
    headings, listed, misplaced = [], [], []
    for line in (ROOT / "sql" / "functions.list").read_text().splitlines():
        if line.startswith("-- Group:"):
            heading = re.fullmatch(r"-- Group: ([a-z_]+) - (\S.*)", line)
            assert heading, f"a heading reads `-- Group: <folder> - <what it holds>`, not {line!r}"
            folder = heading[1]
            headings.append(folder)
        elif line.strip() and not line.startswith(("#", "--")):
            listed.append(line.strip())
            if line.strip().rpartition("/")[0] != folder:
                misplaced.append(line.strip())
    assert listed == mig.function_files()
    assert not misplaced, f"listed under another folder's heading: {misplaced}"
    twice = sorted({n for n in listed if listed.count(n) > 1})
    assert not twice, f"listed more than once in sql/functions.list: {twice}"
    root = ROOT / "sql" / "functions"
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*.sql")}
    assert not on_disk - set(listed), f"not in sql/functions.list: {sorted(on_disk - set(listed))}"
    assert not set(listed) - on_disk, f"listed but not there: {sorted(set(listed) - on_disk)}"
    folders = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert sorted(headings) == folders and len(set(headings)) == len(headings), (
        "one `-- Group:` heading for each folder of sql/functions"
    )
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    unshipped = [
        f
        for f in folders
        if f"jobctl.sql.functions.{f}" not in setuptools["packages"]
        or setuptools["package-data"].get(f"jobctl.sql.functions.{f}") != ["*.sql"]
    ]
    assert not unshipped, f"add to pyproject.toml's packages and package-data: {unshipped}"


def test_landed_migrations_are_unchanged() -> None:
    """migrations/SHA256SUMS holds the checksum of every landed migration (`sha256sum -c` checks it
    too): editing one fails here before any database sees it; a new one lands with its line."""
    sums = {}
    for line in (ROOT / "migrations" / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name] = digest
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (ROOT / "migrations").glob("*.sql")}
    changed = sorted(n for n in sums if n in files and files[n] != sums[n])
    assert not changed, f"landed migrations are immutable; edited: {changed} (write a new migration instead)"
    missing = sorted(set(sums) - set(files))
    assert not missing, f"landed migrations are gone: {missing}"
    unlisted = sorted(set(files) - set(sums))
    assert not unlisted, f"add a line to migrations/SHA256SUMS for each new migration: {unlisted}"
    assert list(sums) == sorted(sums), "SHA256SUMS lists the migrations in order"


def test_manual_mode_without_pg_cron(scratch_dsn: str) -> None:
    """A database without pg_cron gets no cron jobs; tick() and maintain_partitions() do the work by hand."""
    assert run(scratch_dsn, "migrate").returncode == 0
    with psycopg.connect(scratch_dsn, autocommit=True) as c:
        assert c.execute("select count(*) from pg_extension where extname = 'pg_cron'").fetchone() == (0,)
        (job_id,) = c.execute("select job_id from jobctl.submit_job('manual', 'q', '{}')").fetchone()
        claimed = c.execute(
            "select job_id, lease_epoch from jobctl.claim_job('w', array['q'], 1, '1 second')"
        ).fetchone()
        assert claimed is not None and claimed[0] == job_id
        time.sleep(1.2)
        assert c.execute("select jobctl.tick()").fetchone() == (1,)
        assert c.execute("select state from jobctl.get_job(%s)", (job_id,)).fetchone() == ("failed",)
        again = c.execute("select job_id, lease_epoch from jobctl.claim_job('w', array['q'])").fetchone()
        assert again is not None and again[0] == job_id and again[1] > claimed[1]
        assert c.execute("select jobctl.maintain_partitions()").fetchone() == (1,)


def test_pg_cron_runs_the_tick(dsn: str) -> None:
    """pg_cron is preloaded, reaches the database and runs jobctl.tick() successfully every minute."""
    query = """select r.status, r.return_message from cron.job_run_details as r
               join cron.job as j using (jobid)
               where j.jobname = 'jobctl-tick' and r.start_time > now() - interval '2 minutes'
               order by r.start_time desc limit 1"""
    deadline = time.monotonic() + 75
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute(query).fetchone()
        while (row is None or row[0] in ("starting", "running")) and time.monotonic() < deadline:
            time.sleep(2)
            row = c.execute(query).fetchone()
    assert row is not None, "no run of jobctl-tick within 75 s"
    assert row[0] == "succeeded", row


def test_upgrade_from_four_slots_keeps_the_rows_and_matches_a_fresh_install(
    dsn: str, scratch_dsn: str
) -> None:
    """0011 folds _ready's and _running's four slot partitions into two and 0012 rebuilds the lane
    cache: an install stopped at 0010 holding rows in every slot upgrades to the schema of a fresh
    install, every waiting job and lease kept (in a slot the new default could have given it)."""
    stop_after(scratch_dsn, "0010_running_slots.sql")
    with psycopg.connect(scratch_dsn) as c:
        c.execute(
            """insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, slot)
               select 'q', 't', 0, now(), s, now(), s from generate_series(0, 3) as s"""
        )
        c.execute(
            """insert into jobctl._running (job_id, created_at, tenant_id, queue, attempt, lease_epoch,
                   worker_id, started_at, lease_expires_at, slot)
               select 10 + s, now(), 't', 'q', 1, 1, 'w', now(), now() + interval '1 minute', s
               from generate_series(0, 3) as s"""
        )
        c.commit()
    upgrade = run(scratch_dsn, "migrate")
    assert upgrade.returncode == 0, upgrade.stderr
    with psycopg.connect(scratch_dsn) as c:
        ready = c.execute("select job_id, slot, tableoid::regclass::text from jobctl._ready order by 1")
        ready = ready.fetchall()
        running = c.execute("select job_id, slot from jobctl._running order by 1").fetchall()
    assert ready == [(s, s % 2, f"jobctl._ready_s{s % 2}") for s in range(4)], ready
    assert running == [(10 + s, s % 2) for s in range(4)], running

    with fresh_database(dsn) as fresh:
        assert run(fresh, "migrate").returncode == 0
        assert schema_dump(scratch_dsn) == schema_dump(fresh)


def stop_after(dsn: str, last: str) -> None:
    """An install whose last migration is `last`: the schema of an earlier release (its functions
    then are not in the tree; the upgrade re-applies today's)."""
    from jobctl import migrate

    with psycopg.connect(dsn) as c:
        c.execute(migrate.BOOTSTRAP)
        for m in migrate.migrations():
            if m.name > last:
                break
            apply(c, m)


def apply(c: psycopg.Connection[tuple[object, ...]], m: mig.Script) -> None:
    """One migration, recorded as `jobctl migrate` records it."""
    c.execute(m.sql.encode())
    c.execute("insert into jobctl._applied (kind, name, checksum) values ('migration', %s, %s)",
              (m.name, m.checksum))  # fmt: skip


@pytest.mark.slow
def test_upgrade_from_every_earlier_migration_matches_a_fresh_install(dsn: str) -> None:
    from jobctl import migrate

    with fresh_database(dsn, "jobctl_upgrade_fresh") as fresh:
        assert run(fresh, "migrate").returncode == 0
        want = schema_dump(fresh)

    def upgrades_to_fresh(db: str, copy: contextlib.AbstractContextManager[str]) -> bool:
        try:
            with psycopg.connect(db) as c:
                migrate.migrate(c)
            return schema_dump(db) == want
        finally:
            copy.__exit__(None, None, None)  # drops the copy

    # one install taken a migration further each round and copied (CREATE DATABASE ... TEMPLATE):
    # every migration runs once, not once per earlier stop; two copies upgrade at a time
    same: dict[str, concurrent.futures.Future[bool]] = {}
    with (
        fresh_database(dsn, "jobctl_upgrade_base") as base,
        concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool,
    ):
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(migrate.BOOTSTRAP)
        for i, m in enumerate(migrate.migrations()[:-1]):
            with psycopg.connect(base) as c:
                apply(c, m)
            copy = fresh_database(dsn, f"jobctl_upgrade_from_{i}", template=base)
            db = copy.__enter__()  # made now, while nothing else is connected to base
            same[m.name] = pool.submit(upgrades_to_fresh, db, copy)
    differ = [name for name, future in same.items() if not future.result()]
    assert not differ, f"upgrading from these gives another schema than a fresh install: {differ}"
