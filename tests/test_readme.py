"""The README's examples run as written: its SQL block on a fresh database (the
numbers it shows are that database's, its lease epochs set to start at 7), its handler as a real
`jobctl worker --handler myapp.tasks:send`, and its client block, each against a scratch database."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from jobctl import db, migrate

README = (db.ROOT / "README.md").read_text()


def block(after: str, lang: str) -> str:
    """The first ```lang block after the heading `after`."""
    rest = README[README.index(after) :]
    m = re.search(rf"```{lang}\n(.*?)```", rest, re.S)
    assert m, f"no {lang} block after {after!r}"
    return m.group(1)


def statements(sql: str) -> list[tuple[str, list[str]]]:
    """Each statement, with the result lines its `--` comments show below it."""
    out: list[tuple[str, list[str]]] = []
    current, shown = "", []
    for line in sql.splitlines():
        code, _, comment = line.partition("--")
        if code.strip():
            if current.rstrip().endswith(";"):
                out.append((current, shown))
                current, shown = "", []
            current += code + "\n"
        elif comment.strip():
            shown.append(comment.strip())
    if current.strip():
        out.append((current, shown))
    return out


def shown_as(value: object) -> str:
    """A value as psql shows it: booleans t/f, JSON as text."""
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


@pytest.fixture
def fresh(scratch_dsn: str) -> str:
    with psycopg.connect(scratch_dsn, autocommit=True) as c:
        with c.transaction():
            migrate.migrate(c)
        c.execute("select setval('jobctl.lease_epoch_seq', 6)")
    return scratch_dsn


def test_the_sql_example_runs_and_shows_what_it_says(fresh: str) -> None:
    with psycopg.connect(fresh, autocommit=True) as c:
        for sql, shown in statements(block("## In SQL", "sql")):
            cur = c.execute(sql)
            if shown and cur.description:
                header = [h.strip() for h in shown[0].split("|")]
                assert header == [d.name for d in cur.description], (sql, shown)
                got = [[shown_as(v) for v in r] for r in cur.fetchall()]
                want = [[v.strip() for v in line.split("|")] for line in shown[1:]]
                assert got == want, (sql, got, want)
        assert c.execute("select job_id from app.sent_mail").fetchall() == [(1,)]
        assert c.execute("select state, result from jobctl.job where job_id = 1").fetchone() == (
            "completed",
            {"ok": True},
        )


@pytest.mark.slow
def test_the_python_examples_run(fresh: str, tmp_path: Path) -> None:
    handler = block("## In Python", "python")
    client = block("with typed results and exceptions", "python")
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "tasks.py").write_text(handler)
    with psycopg.connect(fresh, autocommit=True) as c:
        c.execute("create schema app")
        c.execute("create table app.sent_mail (job_id bigint primary key)")
    env = {**os.environ, "JOBCTL_DSN": fresh, "PYTHONPATH": str(tmp_path)}
    ran = subprocess.run(
        [sys.executable, "-c", client], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr
    first = ran.stdout.split()
    assert len(first) == 2 and first[1] == "False", ran.stdout
    # the line in the handler's comment starts the worker
    command = re.search(r"run with: (jobctl worker .*)", handler)
    assert command, handler
    args = command.group(1).split()[2:]
    worker = subprocess.Popen(
        [sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with psycopg.connect(fresh, autocommit=True) as c:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                done = c.execute("select count(*) from jobctl.job where state = 'completed'").fetchone()
                if done == (2,):
                    break
                time.sleep(0.2)
            assert done == (2,), done
            assert c.execute("select count(*) from app.sent_mail").fetchone() == (2,)
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-3000:]
