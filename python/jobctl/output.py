"""How the command line shows things: aligned text tables, key: value blocks, human ages, and JSON.

Display only: nothing here decides anything. Times are shown in UTC; durations as "850ms", "4.2s",
"12s", "3m", "2h", "5d". JSON is one document with ISO 8601 times, intervals in seconds and numerics
as numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

MISSING = "-"


def _default(value: object) -> object:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def to_json(doc: object) -> str:
    """One JSON document, indented for people who read it and parseable by anything."""
    return json.dumps(doc, default=_default, indent=2, ensure_ascii=False)


def duration(seconds: float | None) -> str:
    """A short human duration: 850ms, 4.2s, 12s, 3m, 2h, 5d."""
    if seconds is None:
        return MISSING
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s < 1:
        text = f"{s * 1000:.0f}ms"
    elif s < 10:
        text = f"{s:.1f}s"
    elif s < 60:
        text = f"{s:.0f}s"
    elif s < 3600:
        text = f"{s // 60:.0f}m"
    elif s < 86400:
        text = f"{s // 3600:.0f}h"
    else:
        text = f"{s // 86400:.0f}d"
    return sign + text


def timestamp(value: datetime | None) -> str:
    """A time in UTC to the second: 2026-11-30 08:13:00Z."""
    if value is None:
        return MISSING
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def truncate(text: str, width: int) -> str:
    """One line of at most `width` characters (newlines become spaces; an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def cell(value: object) -> str:
    """The text of one value in a table or a key: value block."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, timedelta):
        return duration(value.total_seconds())
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, dict):
        return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, list | tuple):
        if all(isinstance(v, str) for v in value):
            return ",".join(value)
        return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], right: Iterable[int] | None = None
) -> str:
    """Columns padded to their widest cell; numbers (or the columns in `right`) right-aligned.

    Cells may be any value (shown with `cell`) or already-formatted strings.
    """
    body = [list(r) for r in rows]
    right_cols = set(right or ())
    for i in range(len(headers)):
        values = [r[i] for r in body if r[i] is not None]
        if values and all(_is_number(v) for v in values):
            right_cols.add(i)
    text = [[cell(v) for v in r] for r in body]
    widths = [max([len(h)] + [len(r[i]) for r in text]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if i in right_cols else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(list(headers)), *(line(r) for r in text)])


def key_values(pairs: Iterable[tuple[str, object]]) -> str:
    """`key: value` lines with the values aligned."""
    items = [(k, cell(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0) + 1
    return "\n".join(f"{(k + ':').ljust(width)} {v}".rstrip() for k, v in items)
