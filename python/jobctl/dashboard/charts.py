"""Charts as inline SVG, drawn on the server: no script, no style attributes (the page's CSP allows
neither inline), only presentation attributes and the style sheet's classes."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from html import escape
from itertools import groupby

from markupsafe import Markup

WIDTH, HEIGHT = 560, 180
LEFT, RIGHT, TOP, BOTTOM = 46, 10, 12, 24


def _axis(peak: float) -> tuple[float, int]:
    """The axis top and its number of intervals: steps of 1, 2 or 5 times a power of ten, 3 to 5 of
    them (1 and 4 for nothing to show)."""
    if peak <= 0:
        return 1.0, 4
    rough = peak / 4
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if rough <= m * power)
    intervals = max(1, math.ceil(peak / step - 1e-9))
    return step * intervals, intervals


def number(value: float | None, unit: str = "") -> str:
    """A figure for a chart's axis or a table cell: short, with k/M for large ones."""
    if value is None:
        return "–"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.1f}M{unit}"
    if abs(value) >= 1e4:
        return f"{value / 1e3:.0f}k{unit}"
    if abs(value) >= 100 or value == int(value):
        return f"{value:.0f}{unit}"
    if abs(value) >= 1:
        return f"{value:.1f}{unit}"
    return f"{value:.2f}{unit}"


SPANS = (("s", 1, 60), ("min", 60, 3600), ("h", 3600, 86400))  # unit, its seconds, the span it shows


def seconds(value: timedelta | float | None) -> str:
    """A duration: ms under a second, s under a minute, then m and h."""
    if value is None:
        return "–"
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if value < 1:
        return f"{value * 1000:.0f} ms"
    unit, size = next(((u, size) for u, size, below in SPANS if value < below), ("d", 86400))
    return f"{value / size:.1f} {unit}"


def line_chart(
    title: str,
    times: Sequence[datetime],
    series: Sequence[tuple[str, Sequence[float | None]]],
    fmt: Callable[[float], str],
) -> Markup:
    """A line chart of a few series over the same minutes: (css class, values); the page's legend names
    them; fmt writes the axis' figures. Gaps (None) break a line."""
    peak = max((v for _, values in series for v in values if v is not None), default=0.0)
    top, intervals = _axis(peak)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = max(len(times), 2)

    def x(i: int) -> float:
        return LEFT + plot_w * i / (n - 1)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / top)

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for k in range(intervals + 1):  # grid lines and their figures
        value = top * k / intervals
        gy = y(value)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}"/>')
        label = escape(fmt(value))
        parts.append(f'<text class="axis" x="{LEFT - 6}" y="{gy + 4:.1f}" text-anchor="end">{label}</text>')
    if times:
        for i in sorted({0, (len(times) - 1) // 2, len(times) - 1}):
            label = times[i].strftime("%H:%M")
            anchor = "start" if i == 0 else "end" if i == len(times) - 1 else "middle"
            parts.append(
                f'<text class="axis" x="{x(i):.1f}" y="{HEIGHT - 6}" text-anchor="{anchor}">{label}</text>'
            )
    for css, values in series:
        for gap, run in groupby(enumerate(values), key=lambda point: point[1] is None):
            points = [f"{x(i):.1f},{y(v):.1f}" for i, v in run if v is not None]
            if len(points) == 1:
                cx, cy = points[0].split(",")
                parts.append(f'<circle class="line {css}" cx="{cx}" cy="{cy}" r="2"/>')
            elif not gap:
                parts.append(f'<polyline class="line {css}" points="{" ".join(points)}"/>')
    if not any(v is not None and v > 0 for _, values in series for v in values):
        parts.append(
            f'<text class="empty" x="{LEFT + plot_w / 2:.0f}" y="{TOP + plot_h / 2:.0f}" '
            'text-anchor="middle">nothing in the last hour</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def share_bar(claim_share: float | None, weight_share: float | None) -> Markup:
    """A tenant's share of the claims (bar) against its weight's share (tick), both 0..1."""
    w = 160
    got = max(0.0, min(1.0, claim_share or 0.0))
    due = max(0.0, min(1.0, weight_share or 0.0))
    if weight_share is None:  # nothing due or running: no share is owed
        over = "fair"
    else:
        over = "over" if got > due * 1.5 and got - due > 0.02 else "under" if got < due / 1.5 else "fair"
    tick = (
        f'<line class="tick" x1="{w * due:.1f}" x2="{w * due:.1f}" y1="0" y2="14"/>' if weight_share else ""
    )
    return _bar("share", w, 14, got, over, f"claims {got:.0%}, weight {due:.0%}", y=3, extra=tick)


def meter(used: int, limit: int | None) -> Markup:
    """used of limit as a small bar (no limit: the figure alone)."""
    if not limit:
        return Markup("")
    part = max(0.0, min(1.0, used / limit))
    return _bar("meter", 60, 8, part, "full" if part >= 1 else "busy" if part >= 0.8 else "ok", f"{part:.0%}")


def progress_bar(part: float) -> Markup:
    """How far a job is (0 to 1), as a meter."""
    return _bar("meter progress", 240, 10, part, "ok", f"{part:.0%} done")


def _bar(
    svg_class: str, w: int, h: int, part: float, css: str, label: str, y: int = 0, extra: str = ""
) -> Markup:
    """An SVG w by h: a track and a bar filled to part (0 to 1) of its width, both h - 2y high at y, then
    the extra shapes."""
    size = f'height="{h - 2 * y}" rx="2"'
    return Markup(
        f'<svg class="{svg_class}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        f'aria-label="{label}"><rect class="track" x="0" y="{y}" width="{w}" {size}/>'
        f'<rect class="bar {css}" x="0" y="{y}" width="{w * part:.1f}" {size}/>{extra}</svg>'
    )
