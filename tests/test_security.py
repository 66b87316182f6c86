"""Tenant access enforced by the database (sql/grants.sql, jobctl._acting_tenants): real login roles,
each in its own session, calling the functions and reading the tables. The catalog side (who may
execute what, SECURITY DEFINER, row-level security switched on) is sql/tests/security.sql."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

Login = Callable[..., str]  # login(member_of, tenants) -> DSN of a new login role


@pytest.fixture
def login(dsn: str, name: str) -> Iterator[Login]:
    """Make login roles that are members of a jobctl role and granted tenants; dropped afterwards."""
    made: list[str] = []

    def make(member_of: str | None, *tenants: str | None) -> str:
        role = f"{name}_{len(made)}"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'create role "{role}" login')
            if member_of:
                c.execute(f'grant {member_of} to "{role}"')
            for t in tenants:
                c.execute("select jobctl.grant_tenant(%s, %s)", (role, t))
        made.append(role)
        return make_conninfo(dsn, user=role)

    yield make
    with psycopg.connect(dsn, autocommit=True) as c:
        for role in made:
            c.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (role,))
            c.execute("delete from jobctl._role_tenant where role_oid = %s::regrole", (role,))
            c.execute(f'revoke all on database "{c.info.dbname}" from "{role}"')
            c.execute(f'drop role "{role}"')


def submit(conn: psycopg.Connection[Any], tenant: str, queue: str, n: int = 1, **extra: Any) -> list[int]:
    rows = conn.execute(
        "select job_id from jobctl.submit_jobs(%s)",
        (Jsonb([{"tenant_id": tenant, "queue": queue, "payload": {"i": i}, **extra} for i in range(n)]),),
    ).fetchall()
    return [int(r[0]) for r in rows]


def sqlstate_of(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> str | None:
    try:
        conn.execute(sql, params)
    except psycopg.Error as e:
        return e.sqlstate
    return None


def test_a_writer_acts_only_for_its_tenants(conn: psycopg.Connection[Any], login: Login, name: str) -> None:
    mine, theirs = f"{name}a", f"{name}b"
    [their_job] = submit(conn, theirs, "q")
    with psycopg.connect(login("jobctl_writer", mine), autocommit=True) as w:
        [my_job] = submit(w, mine, "q")
        # another tenant: refused, naming the field, and nothing written (a batch is all or nothing)
        with pytest.raises(
            psycopg.errors.InsufficientPrivilege, match=r"jobs\[1\]\.tenant_id: no jobs:submit access"
        ):
            w.execute(
                "select jobctl.submit_jobs(%s)",
                (
                    Jsonb(
                        [
                            {"tenant_id": mine, "queue": "q2", "payload": {}},
                            {"tenant_id": theirs, "queue": "q2", "payload": {}},
                        ]
                    ),
                ),
            )
        assert conn.execute(
            "select count(*) from jobctl.job where queue = 'q2' and tenant_id like %s", (name + "%",)
        ).fetchone() == (0,)
        # their job is as unknown as a missing one, to every function
        assert w.execute("select * from jobctl.get_job(%s)", (their_job,)).fetchall() == []
        assert w.execute("select * from jobctl.job_history(%s)", (their_job,)).fetchall() == []
        assert sqlstate_of(w, "select jobctl.cancel_job(%s)", (their_job,)) == "P0002"
        assert sqlstate_of(w, "select jobctl.retry_job(%s)", (their_job,)) == "P0002"
        assert sqlstate_of(w, "select * from jobctl.list_jobs(%s)", (theirs,)) == "42501"
        assert (
            sqlstate_of(w, "select jobctl.put_schedule(%s, 's', '* * * * *', 'q', '{}')", (theirs,))
            == "42501"
        )
        assert {r[0] for r in w.execute("select tenant_id from jobctl.stats()")} == {mine}
        assert {r[0] for r in w.execute("select tenant_id from jobctl.list_tenants()")} == {mine}
        # its own work goes on as usual
        assert [r[0] for r in w.execute("select job_id from jobctl.list_jobs(%s)", (mine,))] == [my_job]
        assert w.execute("select jobctl.cancel_job(%s)", (my_job,)).fetchone() == ("cancelled",)
        # no table and no private function is open to it
        assert sqlstate_of(w, "select count(*) from jobctl._ready") == "42501"
        assert sqlstate_of(w, "delete from jobctl.job") == "42501"
        assert sqlstate_of(w, "select jobctl._submit(null, false)") == "42501"
        assert sqlstate_of(w, "select jobctl.claim_job('w')") == "42501"
        assert sqlstate_of(w, "select jobctl.put_tenant(%s)", (mine,)) == "42501"
    assert conn.execute("select state from jobctl.get_job(%s)", (their_job,)).fetchone() == ("pending",)


def test_workers_claim_only_their_tenants_jobs_concurrently(
    conn: psycopg.Connection[Any], login: Login, name: str
) -> None:
    tenants = [f"{name}a", f"{name}b"]
    queue = f"{name}q"
    jobs = {t: set(submit(conn, t, queue, 60)) for t in tenants}
    dsns = {t: login("jobctl_worker", t) for t in tenants}
    got: dict[str, list[tuple[int, int, str]]] = {t: [] for t in tenants}

    def work(tenant: str) -> None:
        with psycopg.connect(dsns[tenant], autocommit=True) as w:
            while rows := w.execute(
                "select job_id, lease_epoch, tenant_id from jobctl.claim_job('w', %s, 7)", ([queue],)
            ).fetchall():
                got[tenant] += [(int(j), int(e), str(t)) for j, e, t in rows]

    threads = [threading.Thread(target=work, args=(t,)) for t in tenants for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    for t in tenants:
        assert {j for j, _, _ in got[t]} == jobs[t] and len(got[t]) == len(jobs[t])
        assert {tt for _, _, tt in got[t]} == {t}
    # a worker cannot report on another tenant's job, even with its lease epoch
    a, b = tenants
    job, epoch, _ = got[b][0]
    with psycopg.connect(dsns[a], autocommit=True) as w:
        assert w.execute("select jobctl.heartbeat(%s, %s)", (job, epoch)).fetchone() == ("lost",)
        assert w.execute("select jobctl.complete_job(%s, %s)", (job, epoch)).fetchone() == (False,)
        assert w.execute("select jobctl.fail_job(%s, %s, 'x')", (job, epoch)).fetchone() == (None,)
        assert w.execute("select jobctl.release_job(%s, %s)", (job, epoch)).fetchone() == (False,)
    with psycopg.connect(dsns[b], autocommit=True) as w:
        assert w.execute("select jobctl.complete_job(%s, %s)", (job, epoch)).fetchone() == (True,)


def test_a_reader_sees_its_tenants_rows_through_row_level_security(
    conn: psycopg.Connection[Any], login: Login, name: str
) -> None:
    mine, theirs = f"{name}a", f"{name}b"
    submit(conn, mine, "q", 3)
    submit(conn, theirs, "q", 2)
    with psycopg.connect(login("jobctl_reader", mine), autocommit=True) as r:
        seen = r.execute(
            "select tenant_id, count(*) from jobctl.job where tenant_id like %s group by 1", (name + "%",)
        ).fetchall()
        assert seen == [(mine, 3)]
        assert r.execute("select count(*) from jobctl.tenant where tenant_id = %s", (theirs,)).fetchone() == (
            0,
        )
        assert sqlstate_of(r, "select jobctl.submit_job(%s, 'q', '{}')", (mine,)) == "42501"  # no EXECUTE
        assert sqlstate_of(r, "update jobctl.job set priority = 5 where tenant_id = %s", (mine,)) == "42501"
    with psycopg.connect(login("jobctl_reader", None), autocommit=True) as every:
        assert every.execute(
            "select count(*) from jobctl.job where tenant_id like %s", (name + "%",)
        ).fetchone() == (5,)
    # a login granted a tenant but no jobctl role: CONNECT is for jobctl's roles (sql/grants.sql), and
    # granted CONNECT by name, it still may call nothing
    roleless = login(None, mine)
    with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
        psycopg.connect(roleless).close()
    conn.execute(f'grant connect on database "{conn.info.dbname}" to "{conninfo_to_dict(roleless)["user"]}"')
    with psycopg.connect(roleless, autocommit=True) as nobody:
        assert sqlstate_of(nobody, "select * from jobctl.get_job(1)") == "42501"


def test_the_api_role_acts_only_through_a_token(
    conn: psycopg.Connection[Any], login: Login, name: str
) -> None:
    mine, theirs = f"{name}a", f"{name}b"
    token = conn.execute("select jobctl.create_api_token(%s, %s)", (mine, ["jobs:submit"])).fetchone()
    assert token is not None
    with psycopg.connect(login("jobctl_api"), autocommit=True) as api:
        # no tenant of its own
        assert sqlstate_of(api, "select jobctl.submit_job(%s, 'q', '{}')", (mine,)) == "42501"
        with api.transaction():
            api.execute("select * from jobctl.authenticate(%s, 'jobs:submit')", (token[0],))
            [job] = submit(api, mine, "q")
            # a submit token reads back what it may change
            assert api.execute("select tenant_id from jobctl.get_job(%s)", (job,)).fetchone() == (mine,)
        with api.transaction():
            api.execute("select * from jobctl.authenticate(%s, 'jobs:submit')", (token[0],))
            assert sqlstate_of(api, "select jobctl.submit_job(%s, 'q', '{}')", (theirs,)) == "42501"
        with api.transaction():
            api.execute("select * from jobctl.authenticate(%s, 'jobs:submit')", (token[0],))
            assert sqlstate_of(api, "select jobctl.cancel_job(%s)", (job,)) == "JC021"  # scope
        # the token's effect ended with its transaction
        assert api.execute("select * from jobctl.get_job(%s)", (job,)).fetchall() == []
        # a forged setting proves nothing: every call re-verifies the token
        with api.transaction():
            api.execute("select set_config('jobctl.api_token', 'jct_1_forged', true)")
            assert sqlstate_of(api, "select * from jobctl.get_job(%s)", (job,)) == "JC020"
        # revoked mid-transaction: the next call is refused
        with api.transaction():
            api.execute("select * from jobctl.authenticate(%s, 'jobs:submit')", (token[0],))
            conn.execute(
                "select jobctl.revoke_api_token(t.token_id) from jobctl._api_token as t"
                " where t.tenant_id = %s",
                (mine,),
            )
            assert sqlstate_of(api, "select * from jobctl.get_job(%s)", (job,)) == "JC020"
    actions = conn.execute(
        "select action, actor, token_id is null from jobctl.audit_log where tenant_id = %s order by audit_id",
        (mine,),
    ).fetchall()
    assert [a for a, _, _ in actions] == ["create_api_token", "revoke_api_token"]


def test_grants_and_revokes_apply_to_open_sessions(
    conn: psycopg.Connection[Any], login: Login, name: str
) -> None:
    tenant = f"{name}a"
    dsn = login("jobctl_writer")
    role = conninfo_to_dict(dsn)["user"]
    with psycopg.connect(dsn, autocommit=True) as w:
        assert sqlstate_of(w, "select jobctl.submit_job(%s, 'q', '{}')", (tenant,)) == "42501"
        assert conn.execute("select jobctl.grant_tenant(%s, %s)", (role, tenant)).fetchone() == (True,)
        assert conn.execute("select jobctl.grant_tenant(%s, %s)", (role, tenant)).fetchone() == (False,)
        submit(w, tenant, "q")
        assert conn.execute("select jobctl.revoke_tenant(%s, %s)", (role, tenant)).fetchone() == (True,)
        assert sqlstate_of(w, "select jobctl.submit_job(%s, 'q', '{}')", (tenant,)) == "42501"
    assert sqlstate_of(conn, "select jobctl.grant_tenant('no such role here', 'x')") == "JC001"
    # grants follow the role, not its name: one made again under a dropped role's name has none
    conn.execute("select jobctl.grant_tenant(%s, %s)", (role, tenant))
    [(old,)] = conn.execute("select %s::regrole::oid", (role,)).fetchall()
    conn.execute(f'drop role "{role}"')
    conn.execute(f'create role "{role}" login in role jobctl_writer')
    with psycopg.connect(dsn, autocommit=True) as w:
        assert sqlstate_of(w, "select jobctl.submit_job(%s, 'q', '{}')", (tenant,)) == "42501"
    # the dropped role's grant is left behind, matching nobody, until someone tidies it
    row = conn.execute(
        "select verdict from jobctl.health_checks() where check_name = 'privileges'"
    ).fetchone()
    assert row == ("warn",)
    conn.execute("delete from jobctl._role_tenant where role_oid = %s", (old,))
    audited = conn.execute(
        "select action, detail ->> 'role' from jobctl.audit_log where tenant_id = %s order by audit_id",
        (tenant,),
    ).fetchall()
    assert audited == [("grant_tenant", role), ("revoke_tenant", role), ("grant_tenant", role)]


def test_forget_subject_erases_hot_and_archived_jobs_and_fences_a_running_one(
    conn: psycopg.Connection[Any], login: Login, name: str
) -> None:
    tenant, queue = f"{name}a", f"{name}q"
    person, other = "user-42@example.com", "user-43@example.com"
    archived, done, running, waiting = submit(conn, tenant, queue, 4, subject_key=person)
    [kept] = submit(conn, tenant, queue, subject_key=other)
    # two finish; one of them goes to the archive with its history, as retention would move it
    for job in (archived, done):
        [(j, e)] = conn.execute(
            "select job_id, lease_epoch from jobctl.claim_job('w', %s, 1)", ([queue],)
        ).fetchall()
        assert j == job and conn.execute("select jobctl.complete_job(%s, %s)", (j, e)).fetchone() == (True,)
    for hot, archive in (("job", "job_archive"), ("_event", "_event_archive")):
        conn.execute(
            f"with g as (delete from jobctl.{hot} where job_id = %s returning *)"
            f" insert into jobctl.{archive} select * from g",
            (archived,),
        )
    [(j, epoch)] = conn.execute(
        "select job_id, lease_epoch from jobctl.claim_job('w', %s, 1)", ([queue],)
    ).fetchall()
    assert j == running
    assert conn.execute(
        "select jobctl.save_step(%s, %s, 'charged', '{\"card\": 42}')", (j, epoch)
    ).fetchone() == (True,)
    with psycopg.connect(login("jobctl_writer", tenant), autocommit=True) as w:
        assert sqlstate_of(w, "select * from jobctl.forget_subject(%s, %s)", (f"{name}b", person)) == "42501"
        assert w.execute("select * from jobctl.forget_subject(%s, %s)", (tenant, person)).fetchone() == (2, 4)
    ids = [archived, done, running, waiting]
    for table in (
        "jobctl.job",
        "jobctl.job_archive",
        "jobctl._event",
        "jobctl._event_archive",
        "jobctl._step",
    ):
        assert conn.execute(f"select count(*) from {table} where job_id = any(%s)", (ids,)).fetchone() == (
            0,
        ), table
    for table in ("jobctl._ready", "jobctl._running", "jobctl._delayed"):
        assert conn.execute(f"select count(*) from {table} where job_id = any(%s)", (ids,)).fetchone() == (
            0,
        ), table
    assert conn.execute("select jobctl.complete_job(%s, %s)", (running, epoch)).fetchone() == (False,)
    assert conn.execute("select state from jobctl.get_job(%s)", (kept,)).fetchone() == ("pending",)
    [(detail,)] = conn.execute(
        "select detail from jobctl.audit_log where action = 'forget_subject' and tenant_id = %s", (tenant,)
    ).fetchall()
    assert detail == {"deleted": 4, "cancelled": 2}
    assert conn.execute("select * from jobctl.forget_subject(%s, %s)", (tenant, person)).fetchone() == (0, 0)
    assert sqlstate_of(conn, "select * from jobctl.forget_subject(%s, '')", (tenant,)) == "JC001"


def test_a_tenant_that_encrypts_has_ciphertext_at_rest_and_plaintext_only_with_its_key(
    conn: psycopg.Connection[Any], name: str
) -> None:
    tenant, plain, queue = f"{name}a", f"{name}b", f"{name}q"
    secret = {"email": "ada@example.com", "n": 1}

    def keyed(keys: dict[str, str] | None) -> None:
        conn.execute(
            "select set_config('jobctl.payload_keys', %s, false)", (json.dumps(keys) if keys else "",)
        )

    def submit_secret() -> int:
        row = conn.execute(
            "select job_id from jobctl.submit_job(%s, %s, %s)", (tenant, queue, Jsonb(secret))
        ).fetchone()
        assert row is not None
        return int(row[0])

    # turning encryption on records which key: put_tenant needs it in the session
    keyed(None)
    assert sqlstate_of(conn, "select jobctl.put_tenant(%s, encrypt_payloads => true)", (tenant,)) == "JC008"
    keyed({tenant: "key-1"})
    conn.execute("select jobctl.put_tenant(%s, encrypt_payloads => true)", (tenant,))
    # a submit without that key, or with another, is refused, naming the setting; nothing written
    for keys in ({plain: "unrelated"}, {tenant: "key-2"}):
        keyed(keys)
        with pytest.raises(psycopg.Error, match=r"jobs\[0\]\.tenant .* encrypts its payloads") as e:
            submit(conn, tenant, queue, 1)
        assert e.value.sqlstate == "JC008"
    assert conn.execute("select count(*) from jobctl.job where tenant_id = %s", (tenant,)).fetchone() == (0,)
    keyed({tenant: "key-1"})
    job = submit_secret()
    [other] = submit(conn, plain, queue)
    # at rest: an OpenPGP message, no trace of the payload; another tenant's stays as it was
    [(stored,)] = conn.execute("select payload from jobctl.job where job_id = %s", (job,)).fetchall()
    # (the whole address: three letters turn up in base64 by chance, as they once did in CI)
    assert set(stored) == {"$jobctl_sealed"} and "ada@example.com" not in json.dumps(stored)
    assert conn.execute("select payload from jobctl.job where job_id = %s", (other,)).fetchone() == (
        {"i": 0},
    )
    # read back with the key: the payload; without it, or with one that does not open it: the envelope
    assert conn.execute("select payload from jobctl.get_job(%s)", (job,)).fetchone() == (secret,)
    for keys in (None, {tenant: "key-2"}):
        keyed(keys)
        assert conn.execute("select payload from jobctl.get_job(%s)", (job,)).fetchone() == (stored,)
    # a malformed setting is refused without echoing it
    keyed(None)
    conn.execute("select set_config('jobctl.payload_keys', %s, false)", ('{"x": "key-1"',))
    with pytest.raises(psycopg.Error) as e:
        submit_secret()
    assert e.value.sqlstate == "JC008" and "key-1" not in str(e.value) + str(e.value.diag.context)
    # claimed with the key: the handler gets the payload
    keyed({tenant: "key-1"})
    claimed = conn.execute("select payload from jobctl.claim_job('w', %s, 5)", ([queue],)).fetchall()
    assert sorted(json.dumps(p, sort_keys=True) for (p,) in claimed) == sorted(
        json.dumps(p, sort_keys=True) for p in (secret, {"i": 0})
    )
    # the marker is reserved: a plain payload cannot pose as a sealed one, nor a schedule's
    sealed_like = Jsonb({"$jobctl_sealed": "x"})
    assert sqlstate_of(conn, "select jobctl.submit_job(%s, 'q', %s)", (plain, sealed_like)) == "JC001"
    assert (
        sqlstate_of(conn, "select jobctl.put_schedule(%s, 's', '* * * * *', 'q', %s)", (plain, sealed_like))
        == "JC001"
    )
    keyed(None)


def test_a_workers_tick_expands_other_tenants_schedules_without_a_word_to_it(
    conn: psycopg.Connection[Any], login: Login, name: str
) -> None:
    """A worker's tick expands every due schedule (as pg_cron's does): a worker granted one tenant
    does it for the others too, and hears nothing about them."""
    mine, theirs = f"{name}a", f"{name}b"
    # yearly, made due now: exactly one run, whatever minute boundary the test crosses
    conn.execute("select jobctl.put_schedule(%s, 's', '0 0 1 1 *', %s, '{}')", (theirs, f"{name}q"))
    conn.execute(
        "update jobctl.schedule set next_fire_at = now() - interval '1 second' where tenant_id = %s",
        (theirs,),
    )
    with psycopg.connect(login("jobctl_worker", mine), autocommit=True) as w:
        heard: list[str] = []
        w.add_notice_handler(lambda d: heard.append(str(d.message_primary)))
        w.execute("select jobctl.tick(false)")
        assert w.execute("select * from jobctl.claim_job('w', %s)", ([f"{name}q"],)).fetchall() == []
        assert heard == []
    assert conn.execute("select count(*) from jobctl.job where tenant_id = %s", (theirs,)).fetchone() == (1,)


def test_steps_and_events_are_their_tenants_alone(
    conn: psycopg.Connection[Any], login: Login, name: str
) -> None:
    """A job's saved steps and a tenant's events (docs/durable.md): another tenant's worker is fenced
    and its reader sees no steps; another tenant's writer cannot emit; no jobctl role reads the
    tables themselves; a worker role cannot emit nor a reader save."""
    mine, theirs = f"{name}a", f"{name}b"
    [job] = submit(conn, mine, f"{name}q")
    [(j, epoch)] = conn.execute(
        "select job_id, lease_epoch from jobctl.claim_job('w', %s, 1)", ([f"{name}q"],)
    ).fetchall()
    assert j == job
    with psycopg.connect(login("jobctl_worker", theirs), autocommit=True) as w:
        assert w.execute("select jobctl.save_step(%s, %s, 'x')", (job, epoch)).fetchone() == (False,)
        assert w.execute("select count(*) from jobctl.job_steps(%s)", (job,)).fetchone() == (0,)
        assert sqlstate_of(w, "select jobctl.emit_event(%s, 'go')", (theirs,)) == "42501"  # no EXECUTE
    with psycopg.connect(login("jobctl_worker", mine), autocommit=True) as w:
        assert w.execute("select jobctl.save_step(%s, %s, 'x', '1')", (job, epoch)).fetchone() == (True,)
    with psycopg.connect(login("jobctl_reader", theirs), autocommit=True) as r:
        assert r.execute("select count(*) from jobctl.job_steps(%s)", (job,)).fetchone() == (0,)
        for table in ("_step", "_emitted", "_awaiting", "_spawn"):
            assert sqlstate_of(r, f"select count(*) from jobctl.{table}") == "42501", table
        assert sqlstate_of(r, "select jobctl.save_step(%s, %s, 'y')", (job, epoch)) == "42501"
    with psycopg.connect(login("jobctl_reader", mine), autocommit=True) as r:
        assert r.execute("select step, result from jobctl.job_steps(%s)", (job,)).fetchall() == [("x", 1)]
    with psycopg.connect(login("jobctl_writer", theirs), autocommit=True) as w:
        assert sqlstate_of(w, "select jobctl.emit_event(%s, 'go')", (mine,)) == "42501"
    with psycopg.connect(login("jobctl_writer", mine), autocommit=True) as w:
        assert w.execute("select jobctl.emit_event(%s, 'go')", (mine,)).fetchone() == (0,)
    assert conn.execute(
        "select count(*) from jobctl._emitted where tenant_id in (%s, %s)", (mine, theirs)
    ).fetchone() == (1,)
