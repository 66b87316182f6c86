r"""How the command line shows things: aligned text tables, key: value blocks, human ages, and JSON.

Display only: nothing here decides anything. Times are shown in UTC; durations as "850ms", "4.2s",
"12s", "3m", "2h", "5d". JSON is one document with ISO 8601 times, intervals in seconds and numerics
as numbers.

Tenants' strings (queue and schedule names, payloads, errors) reach an operator's terminal: every
text cell, and every error line (`printable`), shows control characters (C0, DEL, C1) and the bidi
overrides and isolates as visible escapes (`\x1b`, `\u202e`), never raw; JSON output spells the
same characters as `\uXXXX` escapes. JSON nested too deeply to decode comes from the client as a
`RawJson`: text output shows its start, JSON output all of it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from operator import attrgetter
from typing import Any

from jobctl.client import RawJson

MISSING = "-"

# What a terminal would act on: C0 (newline and tab included), DEL and C1 controls, and the bidi
# embeddings, overrides (U+202A-U+202E) and isolates (U+2066-U+2069) that reorder the text after them
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# json.dumps escapes C0 itself; the rest it leaves raw with ensure_ascii=False
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

RAW_SHOWN = 200  # characters of JSON too deeply nested to decode (client.RawJson) that text output shows


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    code = ord(m[0])
    return _SHORT.get(m[0]) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    r"""`text` with every character a terminal would act on shown as an escape: `\x1b`, `\u202e`."""
    return _UNSAFE.sub(_escape, text)


def record(value: object) -> list[tuple[str, object]]:
    """A dataclass's fields as (name, value) pairs, in their order (a row of the client's)."""
    assert dataclasses.is_dataclass(value) and not isinstance(value, type)
    return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]


def _default(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dict(record(value))
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
    """One JSON document, indented for people who read it and parseable by anything. A RawJson is
    spliced in as it is; DEL, C1 and the bidi controls are `\\uXXXX` escapes (they can only be inside
    strings, where an escape means the same)."""
    raws: list[str] = []
    mark = secrets.token_hex(8)  # a placeholder no value holds: "\\u0000<mark>:<n>" once dumped

    def default(value: object) -> object:
        if isinstance(value, RawJson):
            raws.append(value.text)
            return f"\x00{mark}:{len(raws) - 1}"
        return _default(value)

    text = json.dumps(doc, default=default, indent=2, ensure_ascii=False)
    if raws:
        text = re.sub(rf'"\\u0000{mark}:(\d+)"', lambda m: raws[int(m[1])], text)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def duration(seconds: float | None) -> str:
    """A short human duration: 850ms, 4.2s, 12s, 3m, 2h, 5d."""
    if seconds is None:
        return MISSING
    sign, s = "-" if seconds < 0 else "", abs(seconds)
    if s < 1:
        return f"{sign}{s * 1000:.0f}ms"
    if s < 60:
        return f"{sign}{s:.1f}s" if s < 10 else f"{sign}{s:.0f}s"
    size, unit = next((size, unit) for size, unit in ((86400, "d"), (3600, "h"), (60, "m")) if s >= size)
    return f"{sign}{s // size:.0f}{unit}"


def timestamp(value: datetime | None) -> str:
    """A time in UTC to the second: 2026-11-30 08:13:00Z."""
    if value is None:
        return MISSING
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def truncate(text: str, width: int) -> str:
    """One line of at most `width` characters (newlines become spaces; an ellipsis marks a cut)."""
    return clip(" ".join(text.split()), width)


def clip(line: str, width: int | None) -> str:
    """A line cut to at most `width` characters, an ellipsis marking the cut (None: as it is)."""
    return line if width is None or len(line) <= width else line[: max(width - 1, 0)] + "…"


def cell(value: object) -> str:
    """The text of one value in a table or a key: value block, safe for a terminal (`printable`)."""
    return printable(_cell(value))


def _cell(value: object) -> str:
    if isinstance(value, RawJson):
        shown = value.text if len(value.text) <= RAW_SHOWN else value.text[:RAW_SHOWN] + "…"
        return f"{shown} ({len(value.text):,} characters, nested too deeply to decode; --json shows it all)"
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
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if isinstance(value, dict | list | tuple):
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


# A table's columns: each header and the field of a row it shows, or a function of the row
Columns = Mapping[str, str | Callable[[Any], object]]


def rows_table(rows: Iterable[object], columns: Columns, right: Iterable[int] = (), empty: str = "") -> str:
    """`table` of client rows (`empty`, when given, instead of a table without rows)."""
    getters = [attrgetter(c) if isinstance(c, str) else c for c in columns.values()]
    body = [[get(row) for get in getters] for row in rows]
    return table(list(columns), body, right) if body or not empty else empty


def key_values(pairs: Iterable[tuple[str, object]]) -> str:
    """`key: value` lines with the values aligned."""
    items = [(k, cell(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0) + 1
    return "\n".join(f"{(k + ':').ljust(width)} {v}".rstrip() for k, v in items)


@dataclasses.dataclass(frozen=True)
class Column:
    """A column of `fitted_table`: its header, a shorter one for a narrow terminal, whether its cells
    are right-aligned (figures), `drop`: when the table is still too wide, columns go in this order
    (1 first, then 2, ...; 0: never; left-aligned columns that stay are cut instead), and `text`: how
    its values are shown (None: as `cell` shows them)."""

    header: str
    short: str
    right: bool = False
    drop: int = 0
    text: Callable[[Any], str] | None = None


NAME_ROOM = 16  # a left-aligned cell of a fitted table is cut to this before columns are dropped


def fitted_table(
    columns: Sequence[Column], rows: Iterable[Sequence[object]], width: int | None = None
) -> str:
    """`table` at most `width` characters wide (None: as wide as it takes). In turn, until it fits:
    the short headers; left-aligned cells (names) cut to NAME_ROOM characters; fewer columns (by
    `drop`); the names cut to share what room is left (at least 4 characters; an ellipsis marks a
    cut)."""
    text = [[cell(c.text(v) if c.text else v) for c, v in zip(columns, r, strict=True)] for r in rows]
    heads = [c.header for c in columns]
    keep = list(range(len(columns)))
    names = [i for i, c in enumerate(columns) if not c.right]

    def widths() -> dict[int, int]:
        return {i: max([len(heads[i])] + [len(r[i]) for r in text]) for i in keep}

    def fits() -> bool:
        return width is None or sum(widths().values()) + 2 * (len(keep) - 1) <= width

    def cut(room: int) -> None:
        nonlocal text
        text = [[clip(v, room) if i in names else v for i, v in enumerate(r)] for r in text]

    if not fits():
        heads = [c.short for c in columns]
    if not fits():
        cut(NAME_ROOM)
    for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: columns[i].drop):
        if fits():
            break
        keep.remove(i)
    if not fits() and width is not None and names:
        fixed = sum(w for i, w in widths().items() if i not in names) + 2 * (len(keep) - 1)
        cut(max((width - fixed) // len(names), 4))
    right = [n for n, i in enumerate(keep) if columns[i].right]
    return table([heads[i] for i in keep], [[r[i] for i in keep] for r in text], right=right)
