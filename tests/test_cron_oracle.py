"""jobctl.cron_next against croniter (the oracle): thousands of generated expressions and times."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from croniter import CroniterBadDateError, croniter

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# field: (low, high, names numbered from `first`, first)
FIELDS = [(0, 59, None, 0), (0, 23, None, 0), (1, 31, None, 0), (1, 12, MONTHS, 1), (0, 7, DAYS, 0)]


def value(rng: random.Random, lo: int, hi: int, names: list[str] | None, first: int) -> tuple[int, str]:
    v = rng.randint(lo, hi)
    if names and v - first < len(names) and rng.random() < 0.4:
        text = names[v - first]
        return v, text.upper() if rng.random() < 0.2 else text
    return v, str(v)


def item(rng: random.Random, lo: int, hi: int, names: list[str] | None, first: int) -> str:
    kind = rng.choice(["star", "step", "one", "range", "range_step", "from_step"])
    if kind == "star":
        return "*"
    if kind == "step":
        return f"*/{rng.randint(1, hi - lo + 1)}"
    a, at = value(rng, lo, hi, names, first)
    if kind == "one" or a == hi:
        return at
    if kind == "from_step":
        return f"{at}/{rng.randint(1, 20)}"
    # b > a: croniter 7 reads a one-value range (5-5) as *, and a range mixing a name and a number
    # (apr-6) oddly; cron_next reads 5-5 as 5 and refuses nothing there, but these are left out
    b = rng.randint(a + 1, hi)
    bt = names[b - first] if at.isalpha() and names and b - first < len(names) else str(b)
    at = at if bt.isalpha() or not at.isalpha() else str(a)
    return f"{at}-{bt}" + (f"/{rng.randint(1, 10)}" if kind == "range_step" else "")


def expression(rng: random.Random) -> str:
    fields = []
    for lo, hi, names, first in FIELDS:
        # most fields stay simple, so that expressions fire often enough to be compared
        n = 1 if rng.random() < 0.7 else rng.randint(2, 3)
        fields.append(
            "*" if rng.random() < 0.35 else ",".join(item(rng, lo, hi, names, first) for _ in range(n))
        )
    return " ".join(fields)


def oracle(expr: str, after: datetime) -> datetime | None:
    try:
        return croniter(expr, after).get_next(datetime)
    except CroniterBadDateError:
        return None  # never fires


def ours(conn: psycopg.Connection[tuple[object, ...]], expr: str, after: datetime) -> datetime | None:
    try:
        row = conn.execute("select jobctl.cron_next(%s, %s)", (expr, after)).fetchone()
    except psycopg.Error as e:
        assert e.sqlstate == "JC001" and "never fires" in str(e), f"{expr!r}: {e}"
        return None
    assert row is not None
    return row[0]  # type: ignore[return-value]


def test_cron_next_agrees_with_croniter(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    start = datetime(2020, 1, 1, tzinfo=UTC)
    checked = 0
    for _ in range(3000):
        expr = expression(rng)
        # any second in 2020-2031, often right on a minute (a fire time must be strictly after it)
        after = start + timedelta(seconds=rng.randrange(12 * 366 * 86400))
        if rng.random() < 0.3:
            after = after.replace(second=0)
        for _ in range(2):  # the next fire time, then the one after it
            want = oracle(expr, after)
            got = ours(conn, expr, after)
            assert got == want, (
                f"seed {seed}: cron_next({expr!r}, {after.isoformat()}) = {got}, croniter says {want}"
            )
            checked += 1
            if want is None:
                break
            after = want
    assert checked >= 3000


@pytest.mark.parametrize(
    ("expr", "field"),
    [
        ("61 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day-of-month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day-of-week"),
        ("* * * foo *", "month"),
        ("* * * * mon-", "day-of-week"),
        ("*/0 * * * *", "minute"),
        ("5-2 * * * *", "minute"),
    ],
)
def test_a_bad_field_is_named_and_croniter_refuses_it_too(
    conn: psycopg.Connection[tuple[object, ...]], expr: str, field: str
) -> None:
    with pytest.raises(psycopg.Error) as e:
        conn.execute("select jobctl.cron_next(%s, now())", (expr,))
    assert e.value.sqlstate == "JC001"
    assert f"cron {field} field" in str(e.value)
    assert not croniter.is_valid(expr) or expr == "5-2 * * * *"  # croniter wraps a reversed range
