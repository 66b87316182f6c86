"""Cron expressions in plain words, for the schedules page: presentation only. The database decides
when a schedule fires (jobctl.cron_next); this only reads the five fields (minute, hour, day of
month, month, day of week) and the @-forms jobctl accepts, and falls back to the expression itself
for anything it does not recognise."""

from __future__ import annotations

import re
from collections.abc import Callable

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")  # fmt: skip
DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
MONTH_NAMES = {m[:3].lower(): i + 1 for i, m in enumerate(MONTHS)}
DAY_NAMES = {d[:3].lower(): i for i, d in enumerate(DAYS)}
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
EVERY = re.compile(r"^@every\s+(\d+)\s*(second|minute|hour|day)s?$", re.IGNORECASE)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _value(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def _items(field: str, names: dict[str, int]) -> list[tuple[int, int, int]]:
    """(low, high, step) for each comma item; '*' is (-1, -1, step)."""
    out = []
    for item in field.split(","):
        part, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if part == "*":
            out.append((-1, -1, step))
        elif "-" in part:
            lo, hi = part.split("-", 1)
            out.append((_value(lo, names), _value(hi, names), step))
        else:
            v = _value(part, names)
            out.append((v, v if not step_text else -2, step))
    return out


def _list(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _describe_field(field: str, names: dict[str, int], word: str, name: Callable[[int], str]) -> str | None:
    """Words for a non-time field (day of month, month, day of week), each value named by name; None
    for '*'."""
    if field in ("*", "?"):
        return None
    parts = []
    for lo, hi, step in _items(field, names):
        if lo == -1:
            parts.append(f"every {_ordinal(step)} {word}" if step > 1 else f"every {word}")
        elif hi == -2:
            parts.append(f"every {_ordinal(step)} {word} from {name(lo)}")
        elif lo == hi:
            parts.append(name(lo))
        else:
            parts.append(f"{name(lo)} to {name(hi)}" + (f" (every {_ordinal(step)})" if step > 1 else ""))
    return _list(parts)


def _times(minute: str, hour: str) -> str:
    if minute.isdigit() and all(h.isdigit() for h in hour.split(",")):
        return "at " + _list([f"{int(h):02d}:{int(minute):02d}" for h in hour.split(",")])
    if minute.isdigit() and hour == "*":
        return f"at minute {int(minute)} of every hour" if minute != "0" else "every hour, on the hour"
    if minute.isdigit() and re.fullmatch(r"\*/\d+", hour):
        return f"every {int(hour[2:])} hours at minute {int(minute)}"
    minute_words = "every minute" if minute == "*" else f"minute {minute}"
    if re.fullmatch(r"\*/\d+", minute):
        minute_words = f"every {int(minute[2:])} minutes"
    if hour == "*" and minute_words.startswith("every"):
        return minute_words
    hour_words = "every hour" if hour == "*" else f"hour {hour}"
    if re.fullmatch(r"\d+-\d+", hour):
        lo, hi = hour.split("-")
        hour_words = f"from {int(lo):02d}:00 to {int(hi):02d}:59"
    return f"{minute_words}, {hour_words}"


def describe(expression: str, time_zone: str = "UTC") -> str:
    """The expression in words, e.g. '30 2 * * 1-5' -> 'at 02:30, Monday to Friday (UTC)'; the zone
    is the schedule's, whose wall time the expression reads."""
    text = " ".join(expression.split())
    every = EVERY.match(text)
    if every:
        n, unit = int(every.group(1)), every.group(2).lower()
        return f"every {unit}" if n == 1 else f"every {n} {unit}s"
    text = MACROS.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) != 5:
        return expression
    minute, hour, dom, month, dow = fields
    try:
        words = [_times(minute, hour)]
        days = _describe_field(dom, {}, "day", lambda v: f"the {_ordinal(v)}")
        weekdays = _describe_field(dow, DAY_NAMES, "day of the week", lambda v: DAYS[v % 7])
        months = _describe_field(month, MONTH_NAMES, "month", lambda v: MONTHS[(v - 1) % 12])
    except (ValueError, IndexError):
        return expression
    if not days and not weekdays and words[0].startswith("at ") and not words[0].startswith("at minute"):
        words[0] = "every day " + words[0]
    if days and weekdays:
        words.append(f"on {days} of the month or on {weekdays}")  # cron: either matches
    elif days:
        words.append(f"on {days} of the month")
    elif weekdays:
        words.append("on " + weekdays)
    if months:
        words.append(f"in {months}")
    return ", ".join(words) + f" ({time_zone})"
