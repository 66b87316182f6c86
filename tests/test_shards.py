"""Sharding by tenant (docs/operations.md, Sharding): jobctl.init_shard and the PL/Proxy router on
databases of the test cluster, then the scaled-down `make shards` (benchmarks/drills/shards.py --small: a
router and two shard clusters of their own, a shard killed with SIGKILL and restarted under load)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from jobctl import db, migrate, queries, shards
from jobctl.client import Client, JobSpec
from psycopg.conninfo import conninfo_to_dict, make_conninfo

Conn = psycopg.Connection[tuple[Any, ...]]
MANY = """
select count(*) from jobctl.submit_jobs((
    select jsonb_agg(jsonb_build_object('tenant_id', 't' || g, 'queue', %s::text, 'payload', %s::jsonb))
    from generate_series(1, %s::int) as g
))
"""
UNFINISHED = "select count(*) from jobctl.job where state <> 'completed'"
COMPLETED_BY_TENANT = "select tenant_id, count(*) from jobctl.job where state = 'completed' group by 1"


@pytest.fixture(scope="module")
def migrated(dsn: str) -> Iterator[str]:
    """A migrated database the tests clone (CREATE DATABASE ... TEMPLATE: a copy in a moment)."""
    name = "jobctl_shard_tmpl_" + uuid.uuid4().hex[:8]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'create database "{name}"')
    with psycopg.connect(make_conninfo(dsn, dbname=name), autocommit=True) as c:
        migrate.migrate(c)
    yield name
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture
def databases(dsn: str, migrated: str) -> Iterator[Any]:
    """make(n, template) -> n new databases on the test cluster (migrated ones, or empty with
    template=None), dropped at the end."""
    made: list[str] = []

    def make(n: int, template: str | None = migrated) -> list[str]:
        out = []
        with psycopg.connect(dsn, autocommit=True) as c:
            for _ in range(n):
                name = "jobctl_shard_" + uuid.uuid4().hex[:8]
                c.execute(f'create database "{name}"' + (f' template "{template}"' if template else ""))
                made.append(name)
                out.append(make_conninfo(dsn, dbname=name))
        return out

    yield make
    with psycopg.connect(dsn, autocommit=True) as c:
        for name in made:
            c.execute(f'drop database if exists "{name}" with (force)')


def connect(conninfo: str) -> Conn:
    return psycopg.connect(conninfo, autocommit=True)


def submit(conn: Conn, tenant: str, queue: str = "q") -> int:
    [(job_id,)] = conn.execute(
        "select job_id from jobctl.submit_job(%s, %s, '{}')", (tenant, queue)
    ).fetchall()
    return int(job_id)


def test_init_shard_makes_ids_carry_the_shard_number(databases: Any) -> None:
    [shard, used] = databases(2)
    with connect(shard) as c:
        assert shards.init_shard(c, 5) == []  # a clone of a migrated database: nothing to migrate
        assert c.execute("select jobctl.init_shard(5)").fetchone() == (0,), "the same number again: no change"
        ids = [submit(c, "a") for _ in range(3)] + [submit(c, "b")]
        assert {i % 64 for i in ids} == {5} and ids == sorted(ids) and len(set(ids)) == 4
        [(batch,)] = c.execute(
            'select batch_id from jobctl.submit_batch(\'[{"tenant_id": "a", "queue": "q", "payload": {}}]\','
            ' \'{"tenant_id": "a", "queue": "q", "payload": {}}\')'
        ).fetchall()
        assert batch % 64 == 5
        with pytest.raises(psycopg.Error) as e:
            c.execute("select jobctl.init_shard(6)")
        assert e.value.sqlstate == "JC010"
    # a workflow's jobs are 64 ids apart on a shard: the client still lists them all
    client = Client(shard)
    flow = client.submit_workflow(
        [JobSpec("a", "q", {}, name="j0")]
        + [JobSpec("a", "q", {}, name=f"j{i}", depends_on=[f"j{i - 1}"]) for i in range(1, 30)]
    )
    assert [j.job_id for j in client.workflow_jobs(flow.workflow_id)] == list(flow.job_ids.values())
    client.close()
    with connect(used) as c:  # a database that served unsharded: its ids have every residue
        submit(c, "a")
        submit(c, "a")
        with pytest.raises(psycopg.Error) as e:
            c.execute("select jobctl.init_shard(1)")
        assert e.value.sqlstate == "JC010"


def test_router_routes_by_tenant_and_by_id(databases: Any) -> None:
    [router_dsn] = databases(1, template=None)
    shard_dsns = databases(2)
    for n, d in enumerate(shard_dsns):
        with connect(d) as c:
            shards.init_shard(c, n)
    given = {n: make_conninfo(d) for n, d in enumerate(shard_dsns)}
    with connect(router_dsn) as r:
        assert shards.install_router(r, given) == 2
        assert shards.install_router(r, given) == 2, "installing again changes nothing"
        direct = [connect(d) for d in shard_dsns]
        # the router's job_info is the shards'
        cols = (
            "select string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' order by attnum)"
            " from pg_attribute"
            " where attrelid = 'jobctl.job_info'::regclass and attnum > 0 and not attisdropped"
        )
        assert r.execute(cols).fetchone() == direct[0].execute(cols).fetchone()
        tenants = [f"t{i}" for i in range(12)]
        jobs = {t: submit(r, t) for t in tenants}
        placed = dict(r.execute("select tenant_id, shard from jobctl_router.placement").fetchall())
        assert set(placed) == set(tenants) and set(placed.values()) == {0, 1}, placed
        for t, job_id in jobs.items():
            s = placed[t]
            assert job_id % 64 == s
            assert direct[s].execute("select job_id from jobctl.get_job(%s)", (job_id,)).fetchall() == [
                (job_id,)
            ]
            assert not direct[1 - s].execute("select job_id from jobctl.get_job(%s)", (job_id,)).fetchall()
            assert r.execute("select job_id, tenant_id from jobctl.get_job(%s)", (job_id,)).fetchall() == [
                (job_id, t)
            ]
            # locate_job, the clients' get_job, through the router: the job's row, no files
            located = "select (l.job).job_id, (l.job).tenant_id, l.files from jobctl.locate_job(%s) as l"
            assert r.execute(located, (job_id,)).fetchall() == [(job_id, t, None)]
            assert r.execute("select job_id from jobctl.list_jobs(%s)", (t,)).fetchall() == [(job_id,)]
        # a tenant's later submits follow its placement; one tenant's batch is one call
        t0 = tenants[0]
        rows = r.execute(
            "select job_id from jobctl.submit_jobs(%s::jsonb)",
            (json.dumps([{"tenant_id": t0, "queue": "q", "payload": {}}] * 3),),
        ).fetchall()
        assert {row[0] % 64 for row in rows} == {placed[t0]}
        with pytest.raises(psycopg.Error) as e:
            r.execute(
                "select * from jobctl.submit_jobs(%s::jsonb)",
                (json.dumps([{"tenant_id": t, "queue": "q", "payload": {}} for t in tenants[:2]]),),
            )
        assert e.value.sqlstate == "JC001"
        # the shards' errors come through with their SQLSTATE
        with pytest.raises(psycopg.Error) as e:
            r.execute("select jobctl.cancel_job(%s)", (jobs[t0] + 64 * 1000,))
        assert e.value.sqlstate == "P0002"
        # gathered from every shard
        assert sorted(row[0] for row in r.execute("select tenant_id from jobctl.list_tenants()")) == sorted(
            tenants
        )
        # schedules live on the tenant's shard (its pg_cron expands them)
        r.execute("select jobctl.put_schedule(%s, 'nightly', '0 3 * * *', 'q', '{}')", (t0,))
        assert r.execute("select name from jobctl.list_schedules(%s)", (t0,)).fetchall() == [("nightly",)]
        assert direct[placed[t0]].execute("select name from jobctl.list_schedules()").fetchall() == [
            ("nightly",)
        ]
        assert r.execute("select tenant_id from jobctl.list_schedules()").fetchall() == [(t0,)]
        assert (
            len(r.execute("select * from jobctl.find_jobs('{}', null, 1000)").fetchall()) == len(tenants) + 3
        )
        # the worker's calls: claims in turn over the shards, completions on each job's shard
        claimed = r.execute("select job_id, lease_epoch from jobctl.claim_job('w', null, 100)").fetchall()
        claimed += r.execute("select job_id, lease_epoch from jobctl.claim_job('w', null, 100)").fetchall()
        assert len(claimed) == len(tenants) + 3
        done = r.execute(
            "select job_id from jobctl.complete_jobs(%s::bigint[], %s::bigint[]) where completed",
            ([j for j, _ in claimed], [e for _, e in claimed]),
        ).fetchall()
        assert sorted(d for (d,) in done) == sorted(j for j, _ in claimed)
        # the router's grants mirror the shards': a reader may read, not submit
        with r.transaction():
            r.execute("set local role jobctl_reader")
            assert r.execute("select job_id from jobctl.get_job(%s)", (jobs[t0],)).fetchall() == [(jobs[t0],)]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                r.execute("select jobctl.submit_job('x', 'q', '{}')")
            raise psycopg.Rollback()
        # a job_route row overrides the id's residue (a job moved with its tenant, kept its id)
        moved = jobs[tenants[1]]
        other = 1 - placed[tenants[1]]
        r.execute("insert into jobctl_router.job_route (job_id, shard) values (%s, %s)", (moved, other))
        assert r.execute("select jobctl_router.job_shard(%s)", (moved,)).fetchone() == (other,)
        assert not r.execute("select * from jobctl.get_job(%s)", (moved,)).fetchall()
        for c in direct:
            c.close()


def test_one_worker_process_serves_every_shard(databases: Any, tmp_path: Any) -> None:
    """`jobctl worker --dsn A --dsn B`: a worker of its own for each shard, in one process."""
    dsns = databases(2)
    for n, d in enumerate(dsns):
        with connect(d) as c:
            shards.init_shard(c, n)
            c.execute(MANY, ("mq", '{"ledger": false}', 20))
    cmd = [sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()",
           "--handler", "worker_handlers:handle", "--queue", "mq", "--poll-interval", "0.2", "--grace", "1",
           "--worker-id", "multi", "--dsn", dsns[0], "--dsn", dsns[1]]  # fmt: skip
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=db.ROOT / "tests", stdout=out, stderr=subprocess.STDOUT)
    watch = [connect(d) for d in dsns]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            left = [c.execute(UNFINISHED).fetchone() for c in watch]
            if left == [(0,), (0,)]:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        for c in watch:
            c.close()
    for n, d in enumerate(dsns):
        with connect(d) as c:
            rows = c.execute("select state, worker_id, count(*) from jobctl.job group by 1, 2").fetchall()
            assert rows == [("completed", f"multi/{n}", 20)], (rows, log.read_text()[-3000:])


def run_shared(databases: Any, tmp_path: Any, tenants: list[dict[str, int]], slots: int) -> dict[str, int]:
    """One worker process serving two shards (tenants[n]: shard n's tenants and their weights, 200
    jobs of 50 ms each) with `slots` slots: the jobs each tenant completed from 2 s in (the first
    shares, every second, in place) until one tenant had done 150."""
    dsns = databases(2)
    for n, d in enumerate(dsns):
        with connect(d) as c:
            shards.init_shard(c, n)
            for t, weight in tenants[n].items():
                c.execute("select jobctl.put_tenant(%s, weight => %s)", (t, weight))
                payload = '{"sleep": 0.05, "ledger": false}'
                c.execute(MANY.replace("'t' || g", "%s::text", 1), (t, "fq", payload, 200))
    cmd = [sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()",
           "--handler", "worker_handlers:handle", "--queue", "fq", "--poll-interval", "0.2", "--grace", "1",
           "--concurrency", str(slots), "--worker-id", "fair",
           "--dsn", dsns[0], "--dsn", dsns[1]]  # fmt: skip
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=db.ROOT / "tests", stdout=out, stderr=subprocess.STDOUT)
    watch = [connect(d) for d in dsns]
    names = [t for shard in tenants for t in shard]
    try:
        time.sleep(2)  # the first shares (every second) are in place
        base = {}
        for c in watch:
            base.update(dict(c.execute(COMPLETED_BY_TENANT).fetchall()))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until a tenant is nearly out of jobs
            now: dict[str, int] = {}
            for c in watch:
                now.update(dict(c.execute(COMPLETED_BY_TENANT).fetchall()))
            if max(now.values(), default=0) >= 150:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        for c in watch:
            c.close()
    return {t: now.get(t, 0) - base.get(t, 0) for t in names}


def test_a_multi_shard_worker_shares_its_slots_by_claimable_weight(databases: Any, tmp_path: Any) -> None:
    """Shard 0 holds one tenant, shard 1 three, all of weight 1 with equal backlogs: with 4 slots shared
    by claimable weight (1 : 3), every tenant runs about as many jobs while all have some left. Equal
    slots a shard would give the lone tenant three times the others' share."""
    done = run_shared(databases, tmp_path, [{"solo": 1}, {"crowd1": 1, "crowd2": 1, "crowd3": 1}], 4)
    assert min(done.values()) > 0, done
    # equal slots a shard: solo/crowd = 3; shared by weight: about 1
    assert max(done.values()) / min(done.values()) < 1.8, done


def test_tenant_weights_hold_across_shards(databases: Any, tmp_path: Any) -> None:
    """A tenant of weight 1 alone on shard 0, one of weight 3 alone on shard 1, one
    worker process with 4 slots: the heavy tenant runs about 3 jobs to the light one's 1 (equal slots
    a shard would make it 1 : 1)."""
    done = run_shared(databases, tmp_path, [{"light": 1}, {"heavy": 3}], 4)
    assert done["light"] > 0, done
    assert 2.0 <= done["heavy"] / done["light"] <= 4.5, done


def test_shares_add_up_to_the_slots(conn: Conn) -> None:
    """The slots a multi-shard worker gives each shard (jobctl.slot_shares, which the worker asks): 1 at
    least each, never more than the process's --concurrency in all (a shard rounded up to 1 slot made
    4 slots and weights 1 : 100 into 1 + 4), in proportion to the weights otherwise."""

    def shares(slots: int, weights: list[float | None]) -> list[int]:
        row = conn.execute(queries.SLOT_SHARES, {"slots": slots, "weights": weights}).fetchone()
        assert row is not None
        return list(row[0])

    assert shares(4, [1.0, 100.0]) == [1, 3]
    assert shares(4, [1.0, 3.0]) == [1, 3]
    assert shares(8, [1.0, 3.0]) == [2, 6]
    assert shares(3, [0.0, 0.0, 0.0]) == [1, 1, 1]
    assert shares(5, [None, 2.0]) == [1, 4]
    rng = random.Random(33)
    for _ in range(1000):
        n = rng.randint(1, 8)
        slots = rng.randint(n, 64)
        weights = [rng.choice([None, 0.0, rng.random() * 10]) for _ in range(n)]
        got = shares(slots, weights)
        assert sum(got) == slots and min(got) >= 1, (slots, weights, got)


def test_the_worker_keeps_no_rule_of_its_own_for_the_shares() -> None:
    """The shares are the database's (jobctl.slot_shares): the worker's code does no arithmetic of
    its own on the weights, which a second copy of the rule would need."""
    source = (db.ROOT / "python" / "jobctl" / "worker" / "command.py").read_text()
    assert "def shares(" not in source and "sum(" not in source and "/ sum" not in source


def test_a_worker_with_fewer_slots_than_shards_is_refused(databases: Any) -> None:
    """The database refuses the shares (jobctl.slot_shares), and the worker exits before claiming."""
    a, b = databases(2)
    for d in (a, b):
        with connect(d) as c:
            c.execute(MANY, ("q", "{}", 5))
    cmd = [sys.executable, "-c", "from jobctl.worker import worker_command; worker_command()",
           "--handler", "worker_handlers:handle", "--concurrency", "1", "--dsn", a, "--dsn", b]  # fmt: skip
    run = subprocess.run(cmd, cwd=db.ROOT / "tests", capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 1, run
    refusal = "Error: slots (1) must be at least the 2 shards: each needs a slot"
    assert run.stderr.strip().endswith(refusal), run
    for d in (a, b):
        with connect(d) as c:
            assert c.execute("select count(*) from jobctl.job where state <> 'pending'").fetchone() == (0,)


@pytest.mark.slow
def test_shard_killed_under_load_loses_and_repeats_nothing() -> None:
    run = subprocess.run(
        [sys.executable, str(db.ROOT / "benchmarks" / "drills" / "shards.py"), "--small"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    [line] = [line for line in run.stdout.splitlines() if line.startswith("{")]
    r: dict[str, Any] = json.loads(line)
    assert r["routing"]["wrong"] == [] and r["routing"]["checked"] > 0, r["routing"]
    assert r["routing"]["mixed_tenants_refused"] == "JC001"
    # workers on every shard (--dsn per shard) drained every tenant's jobs
    assert r["drain"]["completed"] == r["drain"]["jobs"] > 0 and r["drain"]["worker_exit_codes"] == [0, 0]
    c = r["chaos"]
    assert {
        k: c[k] for k in ("lost", "unfinished", "duplicates", "missing", "stray", "overlaps")
    } == dict.fromkeys(("lost", "unfinished", "duplicates", "missing", "stray", "overlaps"), 0), c
    assert c["jobs"] > 100 and c["victim_jobs"] > 0 and c["submit_errors"] == 0, c
    assert c["submit_retries"] > 0, "submits for the killed shard failed while it was down, and were retried"
    assert c["worker_exit_codes"] == [0], c


def test_parse_shards() -> None:
    dsn = conninfo_to_dict(make_conninfo("host=/tmp port=5 dbname=x"))
    assert shards.parse_shards([f"3=host={dsn['host']} dbname=x"]) == {3: "host=/tmp dbname=x"}
    for bad in (["x=host=/tmp"], ["64=host=/tmp"], ["1="], ["1=a", "1=b"]):
        with pytest.raises(shards.ShardError):
            shards.parse_shards(bad)


def test_every_router_function_has_its_shards_signature(databases: Any) -> None:
    """The router's functions are declarations PL/Proxy forwards by name and argument types: each must
    match a shard function's arguments (names, types, defaults) and result, or a call through the
    router fails (or a parameter a shard gained is out of the router's callers' reach)."""
    [router_dsn] = databases(1, template=None)
    [shard_dsn] = databases(1)
    with connect(shard_dsn) as c:
        shards.init_shard(c, 0)
    sql = (
        "select p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid) from pg_proc as p"
        " where p.pronamespace = 'jobctl'::regnamespace and p.proname !~ '^_' order by 1, 2"
    )
    with connect(router_dsn) as r, connect(shard_dsn) as s:
        shards.install_router(r, {0: make_conninfo(shard_dsn)})
        routed = r.execute(sql).fetchall()
        on_shard = set(s.execute(sql).fetchall())
    assert len(routed) >= 20, routed  # the router installed its functions
    assert [f for f in routed if tuple(f) not in on_shard] == []


def test_no_role_of_the_router_writes_its_tables_or_reads_a_connect_string(databases: Any, name: str) -> None:
    """A writer granted one tenant could insert rows into jobctl_router.placement
    (and so send another tenant's calls to a wrong shard) and read jobctl_router.shard's connect
    strings. The routing and cluster functions are SECURITY DEFINER now, and no role holds a privilege
    on the router's tables: the writer's submit through the router still places its tenant; a connect
    string with a password is refused (any role may call plproxy.get_cluster_partitions)."""
    [router_dsn] = databases(1, template=None)
    [shard_dsn] = databases(1)
    with connect(shard_dsn) as c:
        shards.init_shard(c, 0)
    role = f"{name}_writer"
    with connect(router_dsn) as r:
        shards.install_router(r, {0: make_conninfo(shard_dsn)})
        with pytest.raises(psycopg.Error) as refused:
            shards.install_router(r, {0: make_conninfo(shard_dsn, password="s3cret")})
        assert refused.value.sqlstate == "JC001" and "password" in str(refused.value), refused.value
        r.execute(f'create role "{role}" login in role jobctl_writer')
        try:
            with connect(make_conninfo(router_dsn, user=role)) as w:
                for attempt in (
                    "insert into jobctl_router.placement (tenant_id, shard) values ('victim', 0)",
                    "select connstr from jobctl_router.shard",
                    "select tenant_id from jobctl_router.placement",
                    "update jobctl_router.job_route set shard = 0",
                    "select nextval('jobctl_router.claim_turn')",
                    "select jobctl_router.put_shard(0, 'host=elsewhere')",
                ):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        w.execute(attempt)
                job = submit(w, f"{name}t")
            assert job % 64 == 0
            placed = r.execute(
                "select shard from jobctl_router.placement where tenant_id = %s", (f"{name}t",)
            ).fetchall()
            assert placed == [(0,)]
        finally:
            r.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (role,))
            r.execute(f'drop owned by "{role}"')
            r.execute(f'drop role "{role}"')
