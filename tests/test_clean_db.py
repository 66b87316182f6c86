"""`make clean-db`: every cluster of a checkout stopped and its data deleted,
wherever it lives. bin/db's own clusters go by `bin/db destroy`; this checks bin/clean-drills, which
takes what a killed drill left behind: a running server in a drill's directory, and a directory under
postgres's home that the drill's directory links to. On a checkout of its own (bin/ copied into a
scratch directory beside this one), so that the tests' and your clusters are not touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from jobctl import db

BIN = db.ROOT / "bin"


def as_postgres(*cmd: str) -> int:
    """The command's exit code (its output to /dev/null: a server it starts keeps what it inherits)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    out = subprocess.DEVNULL
    return subprocess.run([*prefix, *cmd], stdout=out, stderr=out, timeout=120, check=False).returncode


def pg_bin() -> Path:
    return max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))


def running(pid: int) -> bool:
    """The process is there and not a zombie (a stopped server's parent may not have reaped it yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_clean_drills_stops_a_left_server_and_deletes_its_linked_data() -> None:
    checkout = Path(tempfile.mkdtemp(prefix=".clean-db-", dir=db.ROOT))
    far = Path(tempfile.mkdtemp(prefix="jobctl-far-"))
    try:
        shutil.copytree(BIN, checkout / "bin")
        data = far / "node1"
        run = checkout / ".ha" / "run-1"
        run.mkdir(parents=True)
        (run / "node1").symlink_to(data)
        if os.getuid() == 0:
            for p in (checkout, checkout / ".ha", run, far):
                shutil.chown(p, "postgres", "postgres")
        assert as_postgres(str(pg_bin() / "initdb"), "-D", str(data), "-U", "postgres", "--no-sync") == 0
        opts = f"-c listen_addresses='' -c unix_socket_directories='{far}' -c port=25599"
        log = str(far / "server.log")
        started = as_postgres(str(pg_bin() / "pg_ctl"), "-D", str(data), "-o", opts, "-l", log, "-w", "start")
        assert started == 0, (far / "server.log").read_text()
        pid = int((data / "postmaster.pid").read_text().split()[0])

        cleaned = subprocess.run(
            [str(checkout / "bin" / "clean-drills")], capture_output=True, text=True, timeout=120, check=False
        )
        assert cleaned.returncode == 0, cleaned.stderr
        assert "clean-db: removed .ha/" in cleaned.stdout
        assert not (checkout / ".ha").exists() and not data.exists()
        assert not running(pid), "the server was stopped"
    finally:
        shutil.rmtree(checkout, ignore_errors=True)
        shutil.rmtree(far, ignore_errors=True)
