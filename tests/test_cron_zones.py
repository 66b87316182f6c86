"""jobctl.cron_next in time zones against croniter with zoneinfo (the oracle), around the daylight
saving time changes of several zones: generated expressions (seeded; the seed is printed on a
failure) at instants within hours of each transition of 2024-2031, two fire times each.

croniter 7 and jobctl agree on every wall time that occurs once, and on the skipped hour: an
expression whose hour field is every hour (* or 0-23) follows the clock in real time, so a skipped
wall time does not fire; any other fires a skipped wall time once, when the gap ends. They differ on
the repeated hour by design (docs/schedules.md, Time zones): croniter fires a wall time that occurs
twice at both occurrences, jobctl once, at the first, unless the hour field is every hour (then
both, as croniter). The oracle is croniter's sequence with those second occurrences left out.
croniter 7 goes wrong around the repeated hour of zones whose change is not a whole hour on the hour
(ODD_REPEATS): there a brute force over every minute is the oracle.
"""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
from croniter import CroniterBadDateError, croniter
from test_cron_oracle import expression

# north and south, whole-hour and 30-minute offsets, transitions at 02:00, 03:00 and midnight
ZONES = [
    "America/New_York",
    "Europe/Berlin",
    "Australia/Adelaide",  # +09:30 / +10:30, southern
    "America/Santiago",  # southern; the clocks change at midnight
    "Asia/Kolkata",  # +05:30, no daylight saving time
    "Australia/Lord_Howe",  # +10:30 / +11: a 30-minute change
    "Pacific/Chatham",  # +12:45 / +13:45, changing at 02:45 and 03:45
]
# croniter 7 goes wrong around the repeated hour of a zone whose change is not a whole hour on the
# hour: in Lord Howe (30 minutes) it skips the second occurrences that its own rule fires for an
# hour field of every hour (*/20 * * * * from 01:40 +11 on 2024-04-07: croniter 02:00 +10:30, where
# 01:40 +10:30 comes first); in Chatham (changing at 03:45) its get_prev jumps back a day from inside
# the repeated hour. Those zones' fall-back changes are compared with a brute force over every minute
# instead (the last test; sql/tests/cron_next.sql pins one of Lord Howe's); their spring-forward
# changes with croniter.
ODD_REPEATS = {"Australia/Lord_Howe", "Pacific/Chatham"}


def transitions(zone: ZoneInfo) -> list[datetime]:
    """The instants in 2024-2031 at which the zone's UTC offset changes (to the minute)."""
    out = []
    t = datetime(2024, 1, 1, tzinfo=UTC)
    end = datetime(2032, 1, 1, tzinfo=UTC)
    before = t.astimezone(zone).utcoffset()
    while t < end:
        nxt = t + timedelta(hours=6)
        after = nxt.astimezone(zone).utcoffset()
        if after != before:
            lo, hi = t, nxt  # bisect to the minute
            while hi - lo > timedelta(minutes=1):
                mid = lo + (hi - lo) / 2
                if mid.astimezone(zone).utcoffset() == before:
                    lo = mid
                else:
                    hi = mid
            out.append(hi.replace(second=0, microsecond=0))
            before = after
        t = nxt
    return out


def compared(moments: list[datetime], name: str, zone: ZoneInfo) -> list[datetime]:
    """The changes compared with croniter: all of them, but the fall-backs of ODD_REPEATS."""
    if name not in ODD_REPEATS:
        return moments
    return [
        m
        for m in moments
        if (m + timedelta(hours=1)).astimezone(zone).utcoffset()
        > (m - timedelta(hours=1)).astimezone(zone).utcoffset()  # type: ignore[operator]
    ]


def dst_expression(rng: random.Random, local_hours: list[int]) -> str:
    """An expression that fires near a transition: hours around its wall time, or every hour."""
    minute = rng.choice(["*", "0", "30", "*/15", "*/20", "45", "0,30", "10-50/10", str(rng.randint(0, 59))])
    h = rng.choice(local_hours)
    # (no one-value range such as 23-23: croniter 7 reads it as *, test_cron_oracle.py)
    lo, hi = max(h - 1, 0), min(h + 1, 23)
    hour = rng.choice(["*", str(h), f"{h},{(h + 1) % 24}", f"{lo}-{hi}", "*/2", f"{min(h, 22)}-23", "0-23"])
    day = rng.choice(["*", "*", "*", "1-15", "*/2"])
    weekday = rng.choice(["*", "*", "*", "sun", "mon-fri", "sat,sun"])
    return f"{minute} {hour} {day} * {weekday}"


def second_occurrence(dt: datetime, zone: ZoneInfo) -> bool:
    """Whether dt is the second occurrence of a wall time the clocks repeat."""
    wall = dt.astimezone(zone).replace(tzinfo=None)
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    return first < second and dt.astimezone(UTC) == second


def mixed_star_hours(expr: str) -> bool:
    """An hour field that lists * beside other items (*,13-21/7): every hour, but croniter 7 keeps the
    * and the numbers apart and, inside a repeated hour, neither fires the second occurrence nor skips
    it (it jumps to the end of the hour). jobctl reads it as every hour. Left out of the comparison."""
    hours = croniter(expr).expanded[1]
    return "*" in hours and len(hours) > 1


def oracle(expr: str, after: datetime, zone: ZoneInfo) -> datetime | None:
    try:
        it = croniter(expr, after.astimezone(zone))
        every_hour = it.expanded[1] == [
            "*"
        ]  # croniter's reading of * and of 0-23 (jobctl: any field of 24 hours)
        while True:
            got: datetime = it.get_next(datetime)
            # croniter fires a repeated wall time twice; jobctl once unless the hour field is every hour
            if every_hour or not second_occurrence(got, zone):
                return got.astimezone(UTC)
    except CroniterBadDateError:
        return None  # never fires


def ours(
    conn: psycopg.Connection[tuple[object, ...]], expr: str, after: datetime, zone: str
) -> datetime | None:
    try:
        row = conn.execute("select jobctl.cron_next(%s, %s, %s)", (expr, after, zone)).fetchone()
    except psycopg.Error as e:
        assert e.sqlstate == "JC001" and "never fires" in str(e), f"{expr!r}: {e}"
        return None
    assert row is not None
    return row[0]  # type: ignore[return-value]


def test_cron_next_in_zones_agrees_with_croniter_across_dst(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    checked = 0
    for name in ZONES:
        zone = ZoneInfo(name)
        moments = compared(transitions(zone), name, zone)
        assert moments or name == "Asia/Kolkata", f"no transitions found for {name}"
        # a zone without transitions is checked at random instants
        moments = moments or [
            datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(8 * 365)) for _ in range(16)
        ]
        for moment in moments:
            # the wall-clock hours on either side of the change
            local_hours = sorted(
                {(moment + timedelta(minutes=m)).astimezone(zone).hour for m in (-90, -30, 0, 30, 90)}
            )
            for _ in range(16):
                expr = dst_expression(rng, local_hours) if rng.random() < 0.8 else expression(rng)
                while mixed_star_hours(expr):
                    expr = expression(rng)
                # within three hours either side of the change, often on a whole minute
                after = moment + timedelta(seconds=rng.randrange(-3 * 3600, 3 * 3600))
                if rng.random() < 0.5:
                    after = after.replace(second=0)
                for _ in range(2):  # the next fire time, then the one after it
                    want = oracle(expr, after, zone)
                    got = ours(conn, expr, after, name)
                    assert got == want, (
                        f"seed {seed}: cron_next({expr!r}, {after.isoformat()}, {name!r}) = {got}, "
                        f"croniter says {want}"
                    )
                    checked += 1
                    if want is None:
                        break
                    after = want
    assert checked >= 3000, checked


def oracle_before(expr: str, at: datetime, zone: ZoneInfo) -> datetime | None:
    """croniter's latest fire time before `at`, its second occurrences left out as in oracle()."""
    try:
        it = croniter(expr, at.astimezone(zone))
        every_hour = it.expanded[1] == ["*"]
        while True:
            got: datetime = it.get_prev(datetime)
            if every_hour or not second_occurrence(got, zone):
                return got.astimezone(UTC)
    except CroniterBadDateError:
        return None


def test_the_backward_walk_in_zones_agrees_with_croniter_across_dst(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    """The expander finds the latest missed fire times by walking backwards (_cron_walk with p_back)."""
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    checked = 0
    for name in ZONES:
        zone = ZoneInfo(name)
        for moment in compared(transitions(zone), name, zone)[:10] or [datetime(2026, 1, 1, tzinfo=UTC)]:
            local_hours = sorted(
                {(moment + timedelta(minutes=m)).astimezone(zone).hour for m in (-90, 0, 90)}
            )
            for _ in range(10):
                expr = dst_expression(rng, local_hours) if rng.random() < 0.8 else expression(rng)
                while mixed_star_hours(expr):
                    expr = expression(rng)
                at = moment + timedelta(seconds=rng.randrange(-3 * 3600, 3 * 3600))
                if rng.random() < 0.5:
                    at = at.replace(second=0)
                want = oracle_before(expr, at, zone)
                if want is None:
                    continue
                row = conn.execute("select jobctl._cron_walk(%s, %s, true, %s)", (expr, at, name)).fetchone()
                assert row is not None and row[0] == want, (
                    f"seed {seed}: _cron_walk({expr!r}, {at.isoformat()}, back, {name!r}) = {row}, "
                    f"croniter says {want}"
                )
                checked += 1
    assert checked >= 500, checked


def test_the_fall_backs_croniter_gets_wrong_against_every_minute(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    """The fall-backs of ODD_REPEATS against a brute force instead of croniter's iteration: every
    minute within hours of the change whose wall time the expression matches (croniter.match) fires,
    but a second occurrence unless the hour field is every hour; both walks must find those."""
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    checked = 0
    for name in sorted(ODD_REPEATS):
        zone = ZoneInfo(name)
        fall_backs = [m for m in transitions(zone) if m not in compared([m], name, zone)]
        for moment in rng.sample(fall_backs, 3):
            local_hours = sorted(
                {(moment + timedelta(minutes=m)).astimezone(zone).hour for m in (-90, 0, 90)}
            )
            for _ in range(4):
                expr = dst_expression(rng, local_hours)
                every_hour = croniter(expr).expanded[1] == ["*"]
                start, end = moment - timedelta(hours=3), moment + timedelta(hours=4)
                minutes = (
                    start + timedelta(minutes=i) for i in range(int((end - start).total_seconds() // 60))
                )
                fires = [
                    t
                    for t in minutes
                    if croniter.match(expr, t.astimezone(zone).replace(tzinfo=None))
                    and (every_hour or not second_occurrence(t, zone))
                ]
                for _ in range(5):
                    at = start + timedelta(seconds=rng.randrange(3600, 6 * 3600))
                    after = next((f for f in fires if f > at), None)
                    before = next((f for f in reversed(fires) if f < at), None)
                    for back, want in ((False, after), (True, before)):
                        if want is None:
                            continue
                        sql = "select jobctl._cron_walk(%s, %s, %s, %s)"
                        row = conn.execute(sql, (expr, at, back, name)).fetchone()
                        assert row is not None and row[0] == want, (
                            f"seed {seed}: _cron_walk({expr!r}, {at.isoformat()}, {back}, {name!r}) = {row}, "
                            f"every minute says {want}"
                        )
                        checked += 1
    assert checked >= 100, checked
