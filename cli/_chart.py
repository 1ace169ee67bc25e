"""A stacked bar chart as inline SVG: credits per UTC day, one colour per series.

Pure: figures in, markup out; no script, font or image. Its size is bounded by days times
series (at most :data:`SERIES` of them: the costliest, then one for the rest), never by
ledger rows. Colours come from the page's CSS classes ``s0``..``s7`` (custom properties
that change with ``prefers-color-scheme``), so the same markup reads in light and dark.
Each bar part carries a ``<title>`` with its figure, and the chart a ``<title>`` and
``<desc>``; every figure is also in a table on the page (the chart only draws them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["SERIES", "Chart", "Series", "chart", "nice_step", "series_of"]

# Seven named series and "other": eight colours that stay apart in light and dark.
SERIES = 8
_WIDTH, _HEIGHT = 640, 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 8, 10, 26
_TICKS = 4
_X_LABELS = 6


@dataclass(frozen=True, slots=True)
class Series:
    """One colour of the chart: a name (a model, an agent, or ``other ...``) and the
    credits it holds on each day it has any."""

    name: str
    credits: dict[str, float]


@dataclass(frozen=True, slots=True)
class Chart:
    """What to draw: the days along the axis (every UTC day of the span, in order), the
    series bottom up, and the words for the title and description."""

    days: tuple[str, ...]
    series: tuple[Series, ...]
    title: str
    description: str


def series_of(
    cells: Iterable[tuple[str, str, float]], order: Sequence[str], other: str
) -> tuple[Series, ...]:
    """``(day, name, credits)`` cells as series: one per name in ``order`` (costliest
    first), the names past the first :data:`SERIES` - 1 summed into one called ``other``."""
    named = list(order[: SERIES - 1]) if len(order) > SERIES else list(order)
    slot = {name: index for index, name in enumerate(named)}
    parts: list[dict[str, float]] = [{} for _ in named]
    rest: dict[str, float] = {}
    for day, name, credits in cells:
        index = slot.get(name)
        target = rest if index is None else parts[index]
        target[day] = target.get(day, 0.0) + credits
    found = tuple(Series(name, part) for name, part in zip(named, parts, strict=True))
    return (*found, Series(other, rest)) if rest else found


def nice_step(top: float, ticks: int = _TICKS) -> float:
    """A round step (1, 2 or 5 times a power of ten) that splits ``top`` into at most
    ``ticks`` parts."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


def _label(value: float) -> str:
    text = f"{value:,.4f}".rstrip("0").rstrip(".")
    return text or "0"


def chart(found: Chart, *, figure_id: str) -> str:
    """The SVG of ``found``; ``figure_id`` names its title and description."""
    days = found.days
    totals = [sum(series.credits.get(day, 0.0) for series in found.series) for day in days]
    top = max(totals, default=0.0)
    step = nice_step(top)
    ceiling = step * max(1, math.ceil(top / step - 1e-9))
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM
    slot = plot_w / max(1, len(days))
    bar = slot * (0.8 if slot > 3 else 1.0)
    scale = plot_h / ceiling
    out = [
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-labelledby="{figure_id}-t {figure_id}-d" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{figure_id}-t">{escape(found.title)}</title>',
        f'<desc id="{figure_id}-d">{escape(found.description)}</desc>',
    ]
    out += _y_axis(ceiling, step, scale)
    out += _x_axis(days, slot)
    for index, series in enumerate(found.series):
        out.append(f'<g class="s{index}">')
        for position, day in enumerate(days):
            credits = series.credits.get(day)
            if not credits or credits <= 0:
                continue
            below = sum(s.credits.get(day, 0.0) for s in found.series[:index])
            height = credits * scale
            y = _TOP + plot_h - (below * scale) - height
            x = _LEFT + position * slot + (slot - bar) / 2
            out.append(
                f'<rect x="{x:.2f}" y="{y:.2f}" width="{bar:.2f}" height="{height:.2f}">'
                f"<title>{escape(day)}, {escape(series.name)}: {_label(credits)} credits"
                "</title></rect>"
            )
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _y_axis(ceiling: float, step: float, scale: float) -> list[str]:
    plot_h = _HEIGHT - _TOP - _BOTTOM
    out = ['<g class="axis" aria-hidden="true">']
    ticks = round(ceiling / step)
    for tick in range(ticks + 1):
        value = tick * step
        y = _TOP + plot_h - value * scale
        out.append(
            f'<line class="grid" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y:.2f}" y2="{y:.2f}"/>'
            f'<text x="{_LEFT - 6}" y="{y + 4:.2f}" text-anchor="end">{_label(value)}</text>'
        )
    out.append("</g>")
    return out


def _x_axis(days: Sequence[str], slot: float) -> list[str]:
    if not days:
        return []
    y = _HEIGHT - _BOTTOM + 16
    count = len(days)
    picks = sorted({round(i * (count - 1) / (_X_LABELS - 1)) for i in range(_X_LABELS)})
    if count < _X_LABELS:
        picks = list(range(count))
    out = ['<g class="axis" aria-hidden="true">']
    for position in picks:
        x = _LEFT + (position + 0.5) * slot
        anchor = "start" if position == 0 and count > 1 else "middle"
        if position == count - 1 and count > 1:
            anchor = "end"
            x = _LEFT + count * slot  # the ends are labelled at the plot's edges
        if anchor == "start":
            x = max(_LEFT, x - slot / 2)
        # The ends carry the year; the labels between, month and day.
        shown = days[position] if position in (0, count - 1) else days[position][5:]
        out.append(f'<text x="{x:.2f}" y="{y}" text-anchor="{anchor}">{escape(shown)}</text>')
    out.append("</g>")
    return out
