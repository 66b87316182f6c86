"""Wake-up hints (jobctl._notify): one per queue in flight across sessions, none lost when alone, none
when the setting jobctl.notify is off."""

from __future__ import annotations

import psycopg

SUBMIT = "select * from jobctl.submit_job(%s, %s, '{}')"


def hints(listener: psycopg.Connection[tuple[object, ...]], queue: str) -> int:
    return sum(1 for n in listener.notifies(timeout=0.5) if n.payload == queue)


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
        for _ in range(3):  # alone, every submit of due work sends its hint
            second.execute(SUBMIT, (name, name))
            second.commit()
            assert hints(listener, name) == 1
        second.execute(SUBMIT.replace("'{}')", "'{}', run_at => now() + interval '1 hour')"), (name, name))
        second.commit()
        assert hints(listener, name) == 0, "a job due later sends no hint"


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
