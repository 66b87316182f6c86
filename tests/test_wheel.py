"""The package as a user gets it: a wheel built from the repository, installed into a fresh venv
outside the checkout, installs the schema into an empty database (createdb, no pg_cron: manual mode)
with `jobctl migrate`, and the README's SQL example runs there: submit, claim, complete."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from jobctl import db
from test_migrate import fresh_database

pytestmark = pytest.mark.slow


def sh(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, f"{cmd}: {out.stdout}{out.stderr}"
    return out.stdout


def test_wheel_installs_outside_the_checkout_and_migrates_an_empty_database(dsn: str, tmp_path: Path) -> None:
    dist, venv = tmp_path / "dist", tmp_path / "venv"
    # setuptools builds in build/ of the checkout and keeps what an earlier build put there: a module
    # that became a package, or one no longer listed in pyproject.toml, would come along from it
    shutil.rmtree(db.ROOT / "build", ignore_errors=True)
    sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, db.ROOT, cwd=tmp_path)
    [wheel] = dist.glob("jobctl-*.whl")
    sh(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    sh(venv / "bin" / "pip", "install", "-q", "--no-compile", wheel, cwd=tmp_path)
    where = sh(venv / "bin" / "python", "-c", "import jobctl; print(jobctl.__file__)", cwd=tmp_path)
    assert where.startswith(str(venv)), where

    with fresh_database(dsn, "jobctl_from_wheel") as target:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBCTL_")} | {"JOBCTL_DSN": target}
        jobctl = venv / "bin" / "jobctl"
        assert "0001_core.sql" in sh(jobctl, "migrate", cwd=tmp_path, env=env)
        assert "current" in sh(jobctl, "validate", cwd=tmp_path, env=env)
        with psycopg.connect(target, autocommit=True) as c:
            submitted = c.execute(
                """select * from jobctl.submit_job('acme', 'email', '{"to": "a@example.com"}',
                                                   priority => 5, dedup_key => 'welcome-42')"""
            ).fetchone()
            assert submitted is not None and submitted[1] is False
            claimed = c.execute(
                """select job_id, lease_epoch, payload
                   from jobctl.claim_job('worker-1', array['email'], max_jobs => 10)"""
            ).fetchone()
            assert (
                claimed is not None and claimed[0] == submitted[0] and claimed[2] == {"to": "a@example.com"}
            )
            with c.transaction():
                done = c.execute(
                    "select jobctl.complete_job(%s, %s, '{\"ok\": true}')", claimed[:2]
                ).fetchone()
            assert done == (True,)
        shown = sh(jobctl, "get", str(submitted[0]), "--json", cwd=tmp_path, env=env)
        assert '"completed"' in shown, shown
