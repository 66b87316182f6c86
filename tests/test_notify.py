"""Wake-up hints (jobctl._notify): one per queue in flight across sessions; while another is in
flight, one per queue per half-second window in a session; none lost when alone, none when the
setting jobctl.notify is off; a hint names no queue."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

Conn = psycopg.Connection[tuple[object, ...]]
SUBMIT = "select * from jobctl.submit_job(%s, %s, '{}')"
WINDOW = 0.5  # jobctl._notify's


def window_start() -> None:
    """Sleep to just after the start of a half-second window (the server's clock is this machine's)."""
    time.sleep(WINDOW - time.time() % WINDOW + 0.01)


@contextmanager
def another_hint_in_flight(dsn: str, name: str) -> Iterator[None]:
    """A transaction that has sent a hint (for a tenant and queue of its own: a submit of a tenant it
    creates would wait for it) and stays open meanwhile."""
    with psycopg.connect(dsn) as other:
        other.execute(SUBMIT, (name + "_other", name + "_other"))
        yield
        other.rollback()


def hints(listener: Conn, queue: str) -> int:
    """The hints for `queue` the listener got (a hint carries the queue's tag, jobctl.hint_tags)."""
    row = listener.execute("select (jobctl.hint_tags(array[%s]))[1]", (queue,)).fetchone()
    assert row is not None
    return sum(1 for n in listener.notifies(timeout=0.5) if n.payload == row[0])


def test_concurrent_submitters_send_one_hint_and_a_lone_one_always_sends(dsn: str, name: str) -> None:
    with (
        psycopg.connect(dsn, autocommit=True) as listener,
        psycopg.connect(dsn) as first,
        psycopg.connect(dsn) as second,
    ):
        listener.execute("select jobctl.put_tenant(%s)", (name,))  # or the second insert waits for the first
        listener.execute("listen jobctl")
        first.execute(SUBMIT, (name, name))  # its transaction stays open, holding the queue's hint
        second.execute(SUBMIT, (name, name))
        second.commit()  # skipped its hint: the first one's is on its way
        assert hints(listener, name) == 0
        first.commit()
        assert hints(listener, name) == 1
        window_start()
        for _ in range(3):  # alone, every submit of due work sends its hint, in one window too
            second.execute(SUBMIT, (name, name))
            second.commit()
        assert hints(listener, name) == 3
        second.execute(SUBMIT.replace("'{}')", "'{}', run_at => now() + interval '1 hour')"), (name, name))
        second.commit()
        assert hints(listener, name) == 0, "a job due later sends no hint"


def test_while_another_hint_is_in_flight_a_session_sends_one_a_window(dsn: str, name: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as listener, psycopg.connect(dsn) as producer:
        listener.execute("select jobctl.put_tenant(%s)", (name,))
        listener.execute("listen jobctl")
        with another_hint_in_flight(dsn, name):
            window_start()
            for _ in range(3):
                producer.execute(SUBMIT, (name, name))
                producer.commit()
            assert hints(listener, name) == 1, "one in the window"
            window_start()
            producer.execute(SUBMIT, (name, name))
            producer.rollback()  # undoes the window's record with its hint
            producer.execute(SUBMIT, (name, name))
            producer.commit()
            producer.execute(SUBMIT, (name, name))
            producer.commit()
            assert hints(listener, name) == 1, "a new window: one again, not used up by the rollback"


def test_no_hint_when_the_setting_is_off(dsn: str, name: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as listener, psycopg.connect(dsn) as producer:
        listener.execute("select jobctl.put_tenant(%s)", (name,))
        listener.execute("listen jobctl")
        producer.execute("set jobctl.notify = off")  # as `alter role ... set` would for its sessions
        producer.execute(SUBMIT, (name, name))
        producer.commit()
        assert hints(listener, name) == 0
        producer.execute("reset jobctl.notify")
        producer.execute(SUBMIT, (name, name))
        producer.commit()
        assert hints(listener, name) == 1


def test_a_login_with_no_jobctl_role_hears_no_queue_name(conn: Conn, dsn: str, name: str) -> None:
    """Any login may LISTEN (a probe: `LISTEN jobctl` as a role with no jobctl role received every
    queue name): a hint carries the queue's tag, which names nothing, and only jobctl's roles may
    ask for tags."""
    role, queue = name + "_nobody", name + "_payroll-layoffs"
    conn.execute(f'create role "{role}" login')
    conn.execute(f'grant connect on database "{conn.info.dbname}" to "{role}"')  # as for a monitoring login
    try:
        with psycopg.connect(make_conninfo(dsn, user=role), autocommit=True) as nobody:
            nobody.execute("listen jobctl")
            conn.execute(SUBMIT, (name, queue))
            heard = [n.payload for n in nobody.notifies(timeout=1.0)]
            assert heard, "the hint was sent"
            assert not any(queue in p or name in p for p in heard), heard
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                nobody.execute("select jobctl.hint_tags(array[%s])", (queue,))
        row = conn.execute("select (jobctl.hint_tags(array[%s]))[1]", (queue,)).fetchone()
        assert row is not None and row[0] in heard
    finally:
        conn.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (role,))
        conn.execute(f'revoke all on database "{conn.info.dbname}" from "{role}"')
        conn.execute(f'drop role "{role}"')


def test_a_listener_that_stops_reading_costs_submits_nothing(conn: Conn, dsn: str, name: str) -> None:
    """A login with no jobctl role LISTENs in a transaction it keeps open while another
    floods notifications of 7,900 bytes; the queue cannot be trimmed, and once it is full every commit
    that sends a notification fails (54000). Past jobctl._hint_queue_limit() a submit sends no hint:
    here the limit is set to 0.0001 of the queue for the submitter (the default, half of it, is 4 GB
    of notifications: benchmarks/drills/hostile.py fills the queue for real). While the flood goes on, the
    tenant's submits all succeed, send no hint, and their p99 stays within twice what it is with the
    same flood and the listener reading; jobctl doctor warns."""
    role, limit = name + "_nobody", 0.0001
    conn.execute(f'create role "{role}" login')
    conn.execute(f'grant connect on database "{conn.info.dbname}" to "{role}"')  # as for a monitoring login
    conn.execute("select jobctl.put_tenant(%s)", (name,))
    stop = threading.Event()
    flooded = [0]

    def flood() -> None:
        with psycopg.connect(make_conninfo(dsn, user=role), autocommit=True) as c:
            while not stop.is_set():
                c.execute("select pg_notify('y', repeat('x', 7900))")
                flooded[0] += 1
                time.sleep(0.002)

    def submits(producer: Conn, n: int) -> list[float]:
        took = []
        for _ in range(n):
            t0 = time.perf_counter()
            producer.execute(SUBMIT, (name, name))
            took.append(time.perf_counter() - t0)
        return sorted(took)

    flooder = threading.Thread(target=flood, daemon=True)
    try:
        with (
            psycopg.connect(dsn, autocommit=True) as listener,
            psycopg.connect(dsn, autocommit=True) as producer,
        ):
            listener.execute("listen jobctl")
            producer.execute("select set_config('jobctl.hint_queue_limit', %s, false)", (str(limit),))
            flooder.start()
            base = submits(producer, 300)
            assert hints(listener, name) > 0, "with the queue trimmed, submits send hints"
            with psycopg.connect(make_conninfo(dsn, user=role), autocommit=True) as stuck:
                stuck.execute("listen x")
                stuck.execute("begin")  # and this transaction stays open: nothing past it is trimmed
                stuck.execute("select 1")
                deadline = time.monotonic() + 60
                while True:
                    usage = conn.execute("select pg_notification_queue_usage()").fetchone()
                    assert usage is not None
                    if usage[0] > limit:
                        break
                    assert time.monotonic() < deadline, (usage, flooded)
                    time.sleep(0.05)
                during = submits(producer, 300)  # any error fails the test
                assert hints(listener, name) == 0, "past the limit no hint is sent"
                conn.execute("select set_config('jobctl.hint_queue_limit', %s, false)", (str(limit),))
                doctor = conn.execute(
                    "select verdict, detail from jobctl.health_checks()"
                    " where check_name = 'notification queue'"
                ).fetchone()
                conn.execute("reset jobctl.hint_queue_limit")
                assert doctor is not None and doctor[0] == "warn" and "no wake-up hints" in doctor[1], doctor
                stuck.execute("rollback")
        p99 = int(len(base) * 0.99)
        assert during[p99] <= 2 * base[p99], (base[p99], during[p99])
        row = conn.execute(
            "select count(*) from jobctl.job where tenant_id = %s and state = 'pending'", (name,)
        ).fetchone()
        assert row is not None and row[0] == 600
    finally:
        stop.set()
        flooder.join(timeout=10)
        conn.execute("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (role,))
        conn.execute(f'revoke all on database "{conn.info.dbname}" from "{role}"')
        conn.execute(f'drop role "{role}"')
