# Shared shell helpers for bin/ scripts: paths, the PostgreSQL major version, running as the server's OS user.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# JOBCTL_PGNAME names another cluster beside the development one (the benchmarks' .bench-pg)
PGNAME=${JOBCTL_PGNAME:-.pg}
PGDIR="$ROOT/$PGNAME"
# As root the server runs as the OS user postgres, which may be unable to reach a checkout under a
# private directory: then the cluster lives under postgres's home and .pg is a link to it.
if [ "$(id -u)" = 0 ] && [ ! -e "$PGDIR" ] && id postgres >/dev/null 2>&1 \
   && ! runuser -u postgres -- test -x "$ROOT"; then
  far="$(getent passwd postgres | cut -d: -f6)/jobctl-$(echo "$ROOT/$PGNAME" | md5sum | cut -c1-12)"
  mkdir -p "$far" && chown postgres:postgres "$far" && ln -sfn "$far" "$PGDIR"
fi
PGLINK="$ROOT/$PGNAME"
[ -L "$PGDIR" ] && PGDIR=$(readlink -f "$PGDIR")

# The highest PostgreSQL major whose server binaries are installed (empty when none is).
pg_major() {
  local d
  d=$(ls -1d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sed -E 's#.*/postgresql/([0-9]+)/bin/postgres#\1#' | sort -n | tail -n 1)
  echo "$d"
}

# Nothing listens on this port (TCP, or a unix socket named after it, as PostgreSQL's are).
port_free() { ! ss -ltnx 2>/dev/null | grep -q "[:.]$1\b"; }

pg_bin() { echo "/usr/lib/postgresql/$(pg_major)/bin"; }

# PostgreSQL refuses to run as root: as root, run server commands as the OS user postgres.
# (From /: postgres may be unable to enter the current directory; every path given is absolute.)
as_pg() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# sudo only when needed and available.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root (or sudo) to run: $*" >&2; return 1; fi
}
