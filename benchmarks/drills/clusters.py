"""The servers the drills and the tests that share them start (make ha-drill, make shards,
make pooler-test; tests/test_pooler.py, tests/test_restart.py): PostgreSQL clusters and PgBouncer;
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
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[2]
PGBOUNCER = "/usr/sbin/pgbouncer"


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


class Bouncer:
    """One pgbouncer process in transaction pooling mode, loopback TCP only, in front of `backend` (a
    libpq DSN of PostgreSQL; its host may be a socket directory). Any database name passes through
    (`* =`); `aliases` adds named entries with options of their own (`pool_size=2`)."""

    def __init__(
        self,
        directory: Path,
        port: int,
        backend: str,
        *,
        pool_size: int = 20,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.dir, self.port, self.pool_size = directory, port, pool_size
        params = conninfo_to_dict(backend)
        self.backend = {k: str(params[k]) for k in ("host", "port") if k in params}
        self.user = str(params.get("user") or "postgres")
        self.aliases = aliases or {}

    def ini(self) -> str:
        server = " ".join(f"{k}={v}" for k, v in self.backend.items())
        dbs = [f"{name} = {server} {extra}" for name, extra in self.aliases.items()]
        return "\n".join(
            [
                "[databases]",
                *dbs,
                f"* = {server}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {self.port}",
                "unix_socket_dir =",  # TCP on loopback only
                # trust on loopback, as the clusters here; auth_query makes any role of the database a
                # user of the pooler without listing it (the userlist holds the auth_user only)
                "auth_type = trust",
                f"auth_file = {self.dir / 'userlist.txt'}",
                f"auth_user = {self.user}",
                "auth_query = select usename, passwd from pg_catalog.pg_shadow where usename = $1",
                "pool_mode = transaction",
                f"default_pool_size = {self.pool_size}",
                "max_client_conn = 2000",
                f"admin_users = {self.user}",
                f"logfile = {self.dir / 'pgbouncer.log'}",
                f"pidfile = {self.dir / 'pgbouncer.pid'}",
                "",
            ]
        )

    def start(self) -> None:
        if not port_free(self.port):
            sys.exit(f"pooler: port {self.port} is taken (another pgbouncer? `pooler.py stop`)")
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        # where postgres can write its log and pid (a checkout it cannot enter: a link to its home)
        self.dir = reachable_by_postgres(self.dir).resolve()
        (self.dir / "pgbouncer.ini").write_text(self.ini())
        (self.dir / "userlist.txt").write_text(f'"{self.user}" ""\n')
        if os.getuid() == 0:  # pgbouncer refuses root: it runs as postgres, and writes its log and pid here
            for path in (self.dir, *self.dir.iterdir()):
                shutil.chown(path, "postgres", "postgres")
        subprocess.run(as_pg([PGBOUNCER, "-d", str(self.dir / "pgbouncer.ini")]), check=True, timeout=30)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.admin("show version")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def pid(self) -> int | None:
        path = self.dir / "pgbouncer.pid"
        return int(path.read_text()) if path.exists() else None

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGINT)  # the one process this object started, by its pid file
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.05)

    def dsn(self, dbname: str, user: str | None = None) -> str:
        return make_conninfo("", host="127.0.0.1", port=str(self.port), dbname=dbname, user=user or self.user)

    def admin(self, command: str) -> list[dict[str, Any]]:
        """A command on the admin console (simple query protocol only: a client-side cursor); its rows."""
        with psycopg.connect(
            self.dsn("pgbouncer"),
            autocommit=True,
            cursor_factory=psycopg.ClientCursor,
            row_factory=dict_row,
            connect_timeout=5,
        ) as conn:
            cur = conn.execute(command)
            return cur.fetchall() if cur.description is not None else []

    def pools(self, dbname: str) -> dict[str, int]:
        """Client and server connections of the pools of one database, summed over users."""
        rows = [r for r in self.admin("show pools") if r["database"] == dbname]
        return {
            "clients": sum(r["cl_active"] + r["cl_waiting"] for r in rows),
            "servers": sum(r["sv_active"] + r["sv_idle"] + r["sv_used"] + r["sv_tested"] for r in rows),
        }
