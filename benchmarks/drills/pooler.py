"""PgBouncer 1.18 in transaction pooling mode in front of jobctl (docs/operations.md, Connection pooling).

`make pooler-test` runs it: a cluster of its own (bin/db, .pooler/pg, port 25541, max_connections 300)
and a pgbouncer (.pooler/bouncer, 127.0.0.1:25540 only, trust auth with auth_query, pool_mode
transaction) in front of it; then
  suites   the contract's pytest suites with JOBCTL_TEST_DSN pointed at pgbouncer, JOBCTL_POOLER=transaction
           and JOBCTL_LISTEN_DSN at PostgreSQL directly;
  bench    the pooler's cost, side by side in one run, alternating rounds, medians: one submit_job a call,
           and one claim_job (1 job) + complete_job a call, on one connection, direct with psycopg's
           prepared statements (the default), direct without them, and through pgbouncer without them
           (the only way it works); then 200 clients submitting at once, through pgbouncer (client
           connections, server connections, backends) and directly (backends).
`--keep` leaves both running; `pooler.py stop` stops them.

The Bouncer class is also what tests/test_pooler.py starts (its own port, its own directory).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psycopg
from clusters import Bouncer  # as root, servers run as postgres

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from jobctl import queries  # noqa: E402

BASE = ROOT / ".pooler"
PG_NAME = ".pooler/pg"
PG_PORT = 25541
PG_DB = "jobctl_pooler"
BOUNCER_PORT = 25540
SUITES = [
    "tests/test_contract.py",
    "tests/test_client.py",
    "tests/test_api.py",
    "tests/test_worker.py",
    "tests/test_wait.py",
    "tests/test_api_wait.py",
]

# Tests of the suites that test a direct connection's behaviour, not jobctl's behind the pooler, and
# why; the rest must pass (docs/operations.md, Connection pooling, says what they show)
NOT_THROUGH_THE_POOLER = {
    "tests/test_client.py::test_the_own_connection_is_opened_again_after_it_broke": "it terminates the"
    " client's server by conn.info.backend_pid, which behind pgbouncer is pgbouncer's own key; and the client"
    " connection outlives its server connections there",
    "tests/test_api.py::test_dropped_connections_are_replaced": "pg_terminate_backend of the API's server"
    " connections: behind pgbouncer they are shared, and pgbouncer closes the clients linked to them at that"
    " moment, the test module's own admin connection among them",
    "tests/test_worker.py::test_terminated_connections_are_survived": "the same, for the worker's",
    "tests/test_worker.py::test_a_server_restart_is_survived": "it restarts the test cluster (.test-pg) with"
    " bin/db, not the one behind the pooler",
    "tests/test_worker.py::test_a_claim_error_a_retry_cannot_cure_is_not_retried_in_a_loop": "its worker's"
    " DSN carries options='-c statement_timeout=300', a startup parameter PgBouncer 1.18 refuses",
    "tests/test_worker.py::test_a_stop_while_the_claim_waits_for_the_database_exits_promptly": "it waits for"
    " pg_blocking_pids() to name its locking connection's conn.info.backend_pid: pgbouncer's key, not a"
    " server pid",
    "tests/test_worker.py::test_jobs_claimed_as_the_stop_arrives_are_given_back": "the same",
    "tests/test_worker.py::test_a_worker_opens_sealed_payloads_with_its_keys": "JOBCTL_PAYLOAD_KEYS travel"
    " as a startup option: refused behind a transaction pooler by design (jobctl.db.session_options)",
    "tests/test_worker.py::test_a_job_whose_hint_was_skipped_starts_within_the_hint_window": "the test's own"
    " LISTEN runs on its DSN, the pooler",
}


# --- the cluster behind it (bin/db, as `make db`, under .pooler/pg)


def cluster_env() -> dict[str, str]:
    return {
        **os.environ,
        "JOBCTL_PGNAME": PG_NAME,
        "JOBCTL_PG_DB": PG_DB,
        "JOBCTL_PG_PORT": str(PG_PORT),
        "JOBCTL_PG_EXTRA_CONF": "max_connections = 300",  # 200 direct clients, and the rest
    }


def start_cluster() -> str:
    BASE.mkdir(exist_ok=True)
    subprocess.run([str(ROOT / "bin" / "db"), "fresh"], env=cluster_env(), check=True, timeout=300)
    return (ROOT / PG_NAME / "dsn").read_text().strip()


def stop_cluster() -> None:
    if (ROOT / PG_NAME).exists():
        subprocess.run([str(ROOT / "bin" / "db"), "stop"], env=cluster_env(), check=False, timeout=120)


# --- suites


def run_suites(bouncer: Bouncer, direct: str, files: list[str]) -> int:
    env = {
        **os.environ,
        "JOBCTL_TEST_DSN": bouncer.dsn(PG_DB),
        "JOBCTL_POOLER": "transaction",
        "JOBCTL_LISTEN_DSN": direct,
    }
    started = time.monotonic()
    run = subprocess.run(
        [
            *[sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", *files],
            *[f"--deselect={test}" for test in NOT_THROUGH_THE_POOLER if test.split("::")[0] in files],
        ],
        env=env,
        cwd=ROOT,
        check=False,
    )
    print(f"suites through pgbouncer: exit {run.returncode} in {time.monotonic() - started:.0f} s; left out:")
    for test, why in NOT_THROUGH_THE_POOLER.items():
        if test.split("::")[0] in files:
            print(f"  {test}: {why}")
    return run.returncode


# --- bench


def connect(dsn: str, prepare: bool) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, prepare_threshold=5 if prepare else None)


def per_call(conn: psycopg.Connection[Any], calls: int, one: Callable[[], None]) -> float:
    """Microseconds a call, over `calls` calls of `one`."""
    started = time.perf_counter()
    for _ in range(calls):
        one()
    return (time.perf_counter() - started) / calls * 1e6


def submit_round(conn: psycopg.Connection[Any], tenant: str, calls: int) -> float:
    args = {"tenant_id": tenant, "queue": "bench", "payload": '{"n": 1}'}
    return per_call(conn, calls, lambda: conn.execute(queries.SUBMIT_JOB, args).fetchone() and None)


def claim_round(conn: psycopg.Connection[Any], queue: str, calls: int) -> float:
    claim = {"worker_id": "pooler-bench", "queues": [queue], "max_jobs": 1, "lease": "30 seconds"}

    def one() -> None:
        row = conn.execute(queries.CLAIM_JOB, claim).fetchone()
        assert row is not None, "the queue ran dry"
        conn.execute(queries.COMPLETE_JOB, {"job_id": row[0], "lease_epoch": row[7], "result": "{}"})

    return per_call(conn, calls, one)


def bench(bouncer: Bouncer, direct: str, rounds: int, calls: int, clients: int) -> dict[str, Any]:
    pooled = bouncer.dsn(PG_DB)
    tenant = "pooler-bench-" + uuid.uuid4().hex[:6]
    paths = {"direct": (direct, True), "direct, prepare off": (direct, False), "pgbouncer": (pooled, False)}
    conns = {name: connect(dsn, prepare) for name, (dsn, prepare) in paths.items()}
    results: dict[str, dict[str, list[float]]] = {"submit": {}, "claim+complete": {}}
    with psycopg.connect(direct, autocommit=True) as admin:
        # a queue per path for the claims, filled before the timed rounds (the submits go to 'bench')
        for name in paths:
            queue = "claim-" + name.replace(" ", "").replace(",", "-")
            admin.execute(
                "select count(*) from jobctl.submit_jobs(("
                "select jsonb_agg(jsonb_build_object("
                "'tenant_id', %s::text, 'queue', %s::text, 'payload', '{}'::jsonb))"
                " from generate_series(1, %s)))",
                (tenant, queue, rounds * calls + calls),
            )
        for name, conn in conns.items():  # warm: plans cached, statements prepared where they may be
            submit_round(conn, tenant, 10)
            claim_round(conn, "claim-" + name.replace(" ", "").replace(",", "-"), 5)
        for r in range(rounds):
            order = list(conns)[r % len(conns) :] + list(conns)[: r % len(conns)]  # each goes first in turn
            for name in order:
                queue = "claim-" + name.replace(" ", "").replace(",", "-")
                results["submit"].setdefault(name, []).append(submit_round(conns[name], tenant, calls))
                results["claim+complete"].setdefault(name, []).append(claim_round(conns[name], queue, calls))
    for conn in conns.values():
        conn.close()
    cost = {
        op: {name: round(statistics.median(values), 1) for name, values in by_path.items()}
        for op, by_path in results.items()
    }
    return {
        "load_average_1m": round(os.getloadavg()[0], 1),  # the machine's, as the rounds ended (2 cores)
        "rounds": rounds,
        "calls_per_round": calls,
        "median_us_per_call": cost,
        # paired: each round's figure over the same round's direct one (the rounds run side by side,
        # so a noisy neighbour slows all three paths of a round alike), then the median
        "ratio_vs_direct": {
            op: {
                name: round(
                    statistics.median(v / d for v, d in zip(values, by_path["direct"], strict=True)), 3
                )
                for name, values in by_path.items()
            }
            for op, by_path in results.items()
        },
        "clients": connections(bouncer, direct, tenant, clients),
    }


def backends(direct: str) -> int:
    with psycopg.connect(direct, autocommit=True) as conn:
        row = conn.execute(
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and backend_type = 'client backend'"
            " and pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


def connections(
    bouncer: Bouncer, direct: str, tenant: str, clients: int, seconds: float = 3.0
) -> dict[str, Any]:
    """`clients` threads, each on a connection of its own, submitting for `seconds`: counted at the peak
    through pgbouncer (its client and server connections, PostgreSQL's backends) and directly."""
    out: dict[str, Any] = {"clients": clients, "pool_size": bouncer.pool_size}
    for name, dsn in (("pgbouncer", bouncer.dsn(PG_DB)), ("direct", direct)):
        if name == "direct":  # the pooler's server connections go, so that the count is the clients' own
            bouncer.admin(f"kill {PG_DB}")
            bouncer.admin(f"resume {PG_DB}")
        with _clients(dsn, clients, tenant, seconds) as (done, errors):
            time.sleep(seconds / 2)
            seen = {"backends": backends(direct)}
            if name == "pgbouncer":
                seen |= bouncer.pools(PG_DB)
        seen["submits"], seen["errors"] = sum(done), len(errors)
        if errors:
            seen["first_error"] = errors[0]
        out[name] = seen
    return out


@contextmanager
def _clients(dsn: str, clients: int, tenant: str, seconds: float) -> Iterator[tuple[list[int], list[str]]]:
    done: list[int] = []
    errors: list[str] = []
    ready = threading.Barrier(clients + 1)
    stop = time.monotonic() + 60.0

    def client() -> None:
        count = 0
        try:
            with psycopg.connect(dsn, autocommit=True, prepare_threshold=None, connect_timeout=30) as conn:
                ready.wait(60)
                while time.monotonic() < stop:
                    conn.execute(queries.SUBMIT_JOB, {"tenant_id": tenant, "queue": "many", "payload": "{}"})
                    count += 1
        except (psycopg.Error, threading.BrokenBarrierError) as e:
            errors.append(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
            ready.abort()
        done.append(count)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    with suppress(threading.BrokenBarrierError):
        ready.wait(120)
    stop = time.monotonic() + seconds
    try:
        yield done, errors
    finally:
        for t in threads:
            t.join(120)


def table(r: dict[str, Any]) -> str:
    cost, ratio = r["median_us_per_call"], r["ratio_vs_direct"]
    paths = list(cost["submit"])
    lines = [
        f"load average (1 min) as the rounds ended: {r['load_average_1m']}",
        f"pooler cost, median us a call over {r['rounds']} rounds of {r['calls_per_round']} calls on one"
        " connection (ratio: the median of each round's own):",
        f"  {'':16}" + "".join(f"{p:>24}" for p in paths),
    ]
    for op in cost:
        lines.append(
            f"  {op:16}" + "".join(f"{f'{cost[op][p]:.0f} us ({ratio[op][p]:.2f}x)':>24}" for p in paths)
        )
    c = r["clients"]
    lines.append(f"{c['clients']} clients submitting at once (pgbouncer default_pool_size {c['pool_size']}):")
    p, d = c["pgbouncer"], c["direct"]
    lines.append(
        f"  pgbouncer: {p['clients']} client connections -> {p['servers']} server connections, "
        f"{p['backends']} PostgreSQL backends; {p['submits']} submits, {p['errors']} errors"
    )
    lines.append(
        f"  direct:    {d['backends']} PostgreSQL backends; {d['submits']} submits, {d['errors']} errors"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", nargs="?", default="all", choices=["all", "suites", "bench", "stop"])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="leave the cluster and pgbouncer running")
    parser.add_argument("--suite", action="append", help="a pytest file (default: the contract's suites)")
    args = parser.parse_args()
    bouncer = Bouncer(BASE / "bouncer", BOUNCER_PORT, "")
    if args.what == "stop":
        bouncer.stop()
        stop_cluster()
        return
    direct = start_cluster()
    bouncer = Bouncer(BASE / "bouncer", BOUNCER_PORT, direct, pool_size=20)
    bouncer.start()
    code = 0
    try:
        if args.what in ("all", "suites"):
            code = run_suites(bouncer, direct, args.suite or SUITES)
        if args.what in ("all", "bench"):
            r = bench(bouncer, direct, args.rounds, args.calls, args.clients)
            print(json.dumps(r))
            print(table(r))
            results = ROOT / "benchmarks" / "results"
            with (results / "pooler.jsonl").open("a") as f:
                f.write(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **r}) + "\n")
    finally:
        if not args.keep:
            bouncer.stop()
            stop_cluster()
    sys.exit(code)


if __name__ == "__main__":
    main()
