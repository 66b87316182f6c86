"""PostgreSQL clusters of the drills and multi-cluster benchmarks (make ha-drill, make shards, ...):
server commands as the OS user postgres when run as root, directories postgres can reach, free ports,
and a cluster's processes to kill like a crashed host.

The drills' ports (shards 25500-25519, HA 25520-25539, pooler 25540-25549, archive 25550-25559) are below
Linux's ephemeral range (32768-60999): in that range any client socket may be given one as its local port,
and a server that starts while it is held cannot bind (CI at 2ca241a: Patroni's first node, 5552x then)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parent.parent


def as_pg(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run server commands as the OS user postgres."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.getuid() == 0 else cmd


def reachable_by_postgres(link: Path) -> Path:
    """The directory `link`, made where the OS user postgres can reach it: as root, when postgres cannot
    enter the checkout (a clone under a 0700 home or a mktemp -d folder), `link` becomes a link to a
    directory under postgres's home, as bin/lib.sh does for bin/db's clusters."""
    if os.getuid() == 0 and not link.exists():
        enter = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(ROOT)], check=False)
        if enter.returncode != 0:
            tag = hashlib.md5(str(link).encode()).hexdigest()[:12]
            far = Path(pwd.getpwnam("postgres").pw_dir) / f"jobctl-{tag}"
            far.mkdir(parents=True, exist_ok=True)
            shutil.chown(far, "postgres", "postgres")
            link.symlink_to(far)
    link.mkdir(parents=True, exist_ok=True)
    if os.getuid() == 0:  # servers started as postgres write here (Patroni's data, logs)
        shutil.chown(link.resolve(), "postgres", "postgres")
    return link


def remove_run(base: Path) -> None:
    """A drill's directory, and the far directory bin/db may have linked its primary to."""
    primary = base / "primary"
    if primary.is_symlink():
        shutil.rmtree(primary.resolve(), ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)


def pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    if not found:
        sys.exit("PostgreSQL is not installed; run make setup")
    return found[-1].parent


def port_free(port: int) -> bool:
    listening = subprocess.run(["ss", "-ltnx"], capture_output=True, text=True, check=False).stdout
    return not any(
        word.endswith((f":{port}", f".{port}")) for line in listening.splitlines() for word in line.split()
    )


class Cluster:
    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port = path, port
        self.data = path / "data"

    def dsn(self, **extra: str) -> str:
        return make_conninfo(
            "", host=str(self.path), port=str(self.port), dbname="jobctl", user="postgres", **extra
        )

    def ctl(self, *args: str, timeout: float = 120) -> None:
        subprocess.run(
            as_pg([str(pg_bin() / "pg_ctl"), "-D", str(self.data), *args]),
            check=True,
            capture_output=True,
            timeout=timeout,
        )

    def pids(self) -> list[int]:
        """The postmaster and its children."""
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return []
        postmaster = int(pid_file.read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster:
                children.append(int(stat.parent.name))
        return [postmaster, *children]

    def kill(self) -> int:
        """SIGKILL to the postmaster and every process of the cluster at once: a crashed host."""
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)

    def log_lines(self, *needles: str) -> int:
        """Lines of its server log that hold every needle."""
        text = (self.path / "server.log").read_text(errors="replace")
        return sum(1 for line in text.splitlines() if all(n in line for n in needles))
