"""The page ``usage --report FILE`` writes: one self-contained HTML file.

Pure: a :class:`~copilot_host.gateway._ledger.Summary` (and the plan, or why it is not
known) in, markup out. Inline CSS and SVG only, and a Content-Security-Policy that lets the
page fetch nothing at all, so it opens anywhere with no server and tells nobody it was
opened. Every figure is text in a table (the charts draw them again, never alone), from
the same queries as ``usage --history --json``; a year of rows is a few thousand elements
(days, models, agents, the costliest runs), never a row per request.

Light and dark follow ``prefers-color-scheme``; print is always light; at a phone's width
the tables and charts scroll sideways inside their own box. Text from the ledger or the
service is cleaned of control characters and escaped.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import date, timedelta
from html import escape
from typing import TYPE_CHECKING, Any

from ._chart import SERIES, Chart, chart, series_of

if TYPE_CHECKING:
    from copilot_host import CopilotUsage, Quota
    from copilot_host.gateway._ledger import Cell, Group, Summary

__all__ = ["RUNS_SHOWN", "report_html"]

# The costliest runs listed one by one; the rest are one line of totals.
RUNS_SHOWN = 20
NOT_REPORTED = "not reported"

_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;
--head:#f6f8fa;--c0:#0072b2;--c1:#e69f00;--c2:#009e73;--c3:#cc79a7;--c4:#56b4e9;
--c5:#d55e00;--c6:#7c4dbd;--c7:#8c959f}
@media screen and (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;
--muted:#9198a1;--line:#3d444d;--head:#161b22;--c0:#4aa3e0;--c1:#f0b429;--c2:#3fc59b;
--c3:#e08fc4;--c4:#8fd0f5;--c5:#f07b3f;--c6:#b392f0;--c7:#8b949e}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main,header,footer{max-width:60rem;margin:0 auto;padding:0 1rem}
header{padding-top:1rem}
h1{font-size:1.4rem;margin:.4rem 0}h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
p{margin:.4rem 0}.muted{color:var(--muted)}
.scroll{overflow-x:auto;max-width:100%}figure{margin:0}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.3rem 0}
th,td{border-bottom:1px solid var(--line);padding:.3rem .6rem;text-align:left;
vertical-align:top}
thead th{background:var(--head);font-weight:600}
tbody th{font-weight:500}.wide tbody th{white-space:nowrap}
td.n,th.n{text-align:right;white-space:nowrap}
table.wide{width:100%}
.chart{display:block;width:100%;min-width:30rem;height:auto}
.chart text{fill:var(--muted);font-size:12px;font-family:inherit}
.chart rect{shape-rendering:crispEdges}
.chart .grid{stroke:var(--line);stroke-width:1}
.legend{list-style:none;padding:0;margin:.3rem 0;display:flex;flex-wrap:wrap;gap:.2rem 1rem}
.sw{display:inline-block;width:.8rem;height:.8rem;margin-right:.35rem;
vertical-align:-.05rem;border-radius:2px}
.bar{width:6rem;height:.7rem;vertical-align:middle}
.bar .track{fill:var(--line)}.bar .used{fill:var(--c0)}
.s0{fill:var(--c0);background:var(--c0)}.s1{fill:var(--c1);background:var(--c1)}
.s2{fill:var(--c2);background:var(--c2)}.s3{fill:var(--c3);background:var(--c3)}
.s4{fill:var(--c4);background:var(--c4)}.s5{fill:var(--c5);background:var(--c5)}
.s6{fill:var(--c6);background:var(--c6)}.s7{fill:var(--c7);background:var(--c7)}
.part{white-space:nowrap;margin-right:.7rem}
caption{text-align:left;padding:.2rem 0}
.empty{font-size:1.1rem;padding:1rem;border:1px solid var(--line);border-radius:6px}
footer{margin:2rem auto 1rem;font-size:.85rem;color:var(--muted)}
@media print{body{font-size:11pt}.scroll{overflow:visible}.chart{min-width:0}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
tr,figure{break-inside:avoid}h2{break-after:avoid}thead{display:table-header-group}}
"""
_HEAD = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    # Nothing may be fetched: no script, font, image, frame or form target.
    '<meta http-equiv="Content-Security-Policy" '
    "content=\"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'\">"
    '<meta name="color-scheme" content="light dark">'
    '<meta name="generator" content="copilot-host usage --report">'
)


def _text(value: object, limit: int = 200) -> str:
    from copilot_host._internal import clean

    return escape(clean(value, limit=limit))


def _credits(value: float) -> str:
    from copilot_host.gateway._ledger import format_credits

    return format_credits(value)


def _day(moment: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(moment))


def _utc(moment: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(moment))


def _cell(text: str, *, number: bool = False) -> str:
    return f'<td class="n">{text}</td>' if number else f"<td>{text}</td>"


def _table(
    table_id: str,
    caption: str,
    header: Sequence[str],
    rows: Sequence[str],
    *,
    numbers: range = range(0),
    foot: str = "",
) -> str:
    """A table with a caption and column headers (``rows`` are ``<tr>`` markup); the
    columns in ``numbers`` hold numbers (right-aligned)."""
    heads = "".join(
        f'<th scope="col"{" class=n" if i in numbers else ""}>{escape(name)}</th>'
        for i, name in enumerate(header)
    )
    return (
        f'<div class="scroll"><table id="{table_id}" class="wide"><caption class="muted">'
        f"{escape(caption)}</caption><thead><tr>{heads}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody>{foot}</table></div>"
    )


def _totals(summary: Summary) -> str:
    totals = summary.totals
    by_day = summary.by["day"].groups
    rows = [
        ("Model requests", f"{totals.requests:,}"),
        ("AI credits", _credits(totals.credits)),
        ("of which estimated", _credits(totals.estimated)),
        ("Input tokens", f"{sum(g.input_tokens for g in by_day):,}"),
        ("Output tokens", f"{sum(g.output_tokens for g in by_day):,}"),
        ("Days with requests", f"{len(by_day):,}"),
        ("Runs", f"{len(summary.by['run'].groups):,}"),
    ]
    body = "".join(
        f'<tr><th scope="row">{escape(name)}</th><td class="n">{value}</td></tr>'
        for name, value in rows
    )
    return (
        f'<div class="scroll"><table id="totals"><caption class="muted">Since '
        f"{_day(summary.since)} (UTC)</caption><tbody>{body}</tbody></table></div>"
    )


def _group_rows(groups: Sequence[Group]) -> list[str]:
    return [
        f'<tr><th scope="row">{_text(g.key)}</th>{_cell(f"{g.requests:,}", number=True)}'
        f"{_cell(_credits(g.credits), number=True)}{_cell(f'{g.input_tokens:,}', number=True)}"
        f"{_cell(f'{g.output_tokens:,}', number=True)}</tr>"
        for g in groups
    ]


def _span_days(summary: Summary, now: float) -> tuple[str, ...]:
    """Every UTC day from the range's start to today (or the last request, when a clock
    put one later); from the first request instead when the range is longer than the
    ledger keeps rows (``--since 2020-01-01``), so the bars keep a readable width."""
    from copilot_host.gateway._ledger import KEEP_DAYS

    days = [g.key for g in summary.by["day"].groups]
    last = max(_day(now), days[-1]) if days else _day(now)
    try:
        start, end = date.fromisoformat(_day(summary.since)), date.fromisoformat(last)
        if (end - start).days > KEEP_DAYS and days:
            start = max(start, date.fromisoformat(days[0]))
    except ValueError:  # a day SQLite could not name (a time edited by hand): the days found
        return tuple(days)
    count = (end - start).days + 1
    return tuple((start + timedelta(days=i)).isoformat() for i in range(max(count, 0)))


def _legend(series: Sequence[tuple[int, str]]) -> str:
    items = "".join(
        f'<li><span class="sw s{index}" aria-hidden="true"></span>{_text(name)}</li>'
        for index, name in series
    )
    return f'<ul class="legend">{items}</ul>'


def _by(
    summary: Summary, what: str, cells: Sequence[Cell], days: tuple[str, ...]
) -> tuple[str, Chart]:
    """The section of one breakdown (models or agents): its chart, legend and table."""
    groups = summary.by[what].groups
    order = [g.key for g in groups]
    plural = f"{what}s"
    series = series_of(((c.day, c.key, c.credits) for c in cells), order, f"other {plural}")
    drawn = Chart(
        days,
        series,
        f"AI credits per UTC day by {what}",
        f"Stacked bars, one per UTC day from {days[0]} to {days[-1]}, one colour per "
        f"{what}; the table 'Per day' below holds every figure.",
    )
    header = (what.capitalize(), "Requests", "AI credits", "Input tokens", "Output tokens")
    section = (
        f'<section aria-labelledby="by-{what}-h"><h2 id="by-{what}-h">AI credits per day '
        f'by {what}</h2><figure><div class="scroll">{chart(drawn, figure_id=f"chart-{what}")}</div>'
        f"<figcaption>{_legend(list(enumerate(s.name for s in series)))}</figcaption>"
        "</figure>"
        + _table(
            plural,
            f"Totals per {what} (costliest first)",
            header,
            _group_rows(groups),
            numbers=range(1, 5),
        )
        + "</section>"
    )
    return section, drawn


def _breakdown(drawn: Chart, day: str) -> str:
    parts = [
        (series.credits[day], index, series.name)
        for index, series in enumerate(drawn.series)
        if series.credits.get(day)
    ]
    return " ".join(
        f'<span class="part"><span class="sw s{index}" aria-hidden="true"></span>'
        f"{_text(name)} {_credits(value)}</span>"
        for value, index, name in sorted(parts, key=lambda part: -part[0])
    )


def _days(summary: Summary, models: Chart, agents: Chart) -> str:
    rows = [
        f'<tr><th scope="row">{_text(g.key)}</th>{_cell(f"{g.requests:,}", number=True)}'
        f"{_cell(_credits(g.credits), number=True)}{_cell(_breakdown(models, g.key))}"
        f"{_cell(_breakdown(agents, g.key))}</tr>"
        for g in summary.by["day"].groups
    ]
    header = ("Day (UTC)", "Requests", "AI credits", "By model", "By agent")
    return (
        '<section aria-labelledby="days-h"><h2 id="days-h">Per day</h2>'
        + _table(
            "days",
            "Every UTC day with requests: what the charts draw",
            header,
            rows,
            numbers=range(1, 3),
        )
        + "</section>"
    )


def _runs(summary: Summary) -> str:
    groups = summary.by["run"].groups
    shown, rest = groups[:RUNS_SHOWN], groups[RUNS_SHOWN:]
    rows = []
    for g in shown:
        span = summary.spans.get(g.key)
        first = _utc(span.first) if span else ""
        last = _utc(span.last) if span else ""
        agents = ", ".join(_text(a) for a in span.agents) if span else ""
        rows.append(
            f'<tr><th scope="row"><code>{_text(g.key)}</code></th><td>{first}</td>'
            f"<td>{last}</td><td>{agents}</td>{_cell(f'{g.requests:,}', number=True)}"
            f"{_cell(_credits(g.credits), number=True)}</tr>"
        )
    foot = ""
    if rest:
        count = sum(g.requests for g in rest)
        spent = sum(g.credits for g in rest)
        foot = (
            f'<tfoot><tr><th scope="row" colspan="4">{len(rest):,} other runs</th>'
            f"{_cell(f'{count:,}', number=True)}{_cell(_credits(spent), number=True)}"
            "</tr></tfoot>"
        )
    header = ("Run", "First (UTC)", "Last (UTC)", "Agents", "Requests", "AI credits")
    caption = (
        f"The {len(shown)} costliest of {len(groups):,} runs (one per serve or run process)"
        if rest
        else f"{len(groups):,} run{'s' if len(groups) != 1 else ''} (one per serve or run process)"
    )
    return (
        '<section aria-labelledby="runs-h"><h2 id="runs-h">Runs and their cost</h2>'
        + _table("runs", caption, header, rows, numbers=range(4, 6), foot=foot)
        + "</section>"
    )


def _auto(summary: Summary) -> str:
    requests, credits = summary.auto
    saved = (
        f"<td>{NOT_REPORTED} (the ledger records no discount)</td>"
        if summary.auto_saved is None
        else _cell(_credits(summary.auto_saved), number=True)
    )
    rows = [
        ("Requests that asked for auto", _cell(f"{requests:,}", number=True)),
        ("Their AI credits", _cell(_credits(credits), number=True)),
        ("Saved by Auto's discount", saved),
    ]
    body = "".join(f'<tr><th scope="row">{escape(name)}</th>{value}</tr>' for name, value in rows)
    return (
        '<section aria-labelledby="auto-h"><h2 id="auto-h">Auto model selection</h2>'
        f'<div class="scroll"><table id="auto"><tbody>{body}</tbody></table></div></section>'
    )


def _bar(left: float | None) -> str:
    if left is None:
        return ""
    used = 1 - max(0.0, min(1.0, left))
    return (
        f'<svg class="bar" viewBox="0 0 100 10" role="img" aria-label="{used:.0%} used">'
        f'<rect class="track" width="100" height="10" rx="2"/>'
        f'<rect class="used" width="{used * 100:.1f}" height="10" rx="2"/></svg>'
    )


def _quota_row(quota: Quota, unit: str, *, window: bool = False) -> str:
    from ._quotas import left_fraction, quota_row, window_row

    name, _, shown, percent = window_row(quota) if window else quota_row(quota, unit)
    bar = "" if quota.unlimited else _bar(left_fraction(quota))
    return (
        f'<tr><th scope="row">{_text(name)}</th><td>{bar}</td><td>{escape(shown)}</td>'
        f"<td>{escape(percent)}</td></tr>"
    )


def _auto_now(auto: dict[str, Any] | None) -> str:
    from ._plan import auto_line

    line = auto_line(auto)
    return "" if line is None else f'<p id="auto-now">{_text(line, 2000)}.</p>'


def _plan(plan: CopilotUsage | str, auto: dict[str, Any] | None) -> str:
    head = '<section aria-labelledby="plan-h"><h2 id="plan-h">The plan\'s quota</h2>'
    if isinstance(plan, str):
        return (
            f'{head}<p id="plan-status">Quota: {NOT_REPORTED} ({_text(plan, 200)}).</p></section>'
        )
    from ._quotas import plan_head

    line = escape(plan_head(plan))
    auto_only = plan.auto_only_line()
    rows = [_quota_row(q, plan.unit) for q in plan.quotas]
    rows += [_quota_row(w, plan.unit, window=True) for w in plan.rate_windows]
    header = ("Quota", "Used", "Amount", "Left")
    return (
        f'{head}<p id="plan-status">{line} (looked up live when this page was made).</p>'
        + (f"<p>{_text(auto_only, 300)}</p>" if auto_only else "")
        + _table("quota", "As GitHub reported it", header, rows)
        + _auto_now(auto)
        + "</section>"
    )


def report_html(
    summary: Summary,
    plan: CopilotUsage | str,
    *,
    now: float,
    auto: dict[str, Any] | None = None,
) -> str:
    """The page for ``summary``; ``plan`` is the live lookup, or why there is none, and
    ``auto`` what Copilot Auto picks from now (``usage --json``'s ``auto``)."""
    from copilot_host._internal import show_path

    since = _day(summary.since)
    title = f"AI credits since {since} (UTC)"
    parts = [
        _HEAD,
        f"<title>copilot-host: {escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{escape(title)}</h1><p class=muted>Made by copilot-host usage --report "
        f"at {_utc(now)} UTC from the ledger {_text(show_path(summary.path), 400)}.</p>"
        "</header><main>",
        '<section aria-labelledby="totals-h"><h2 id="totals-h">Totals</h2>',
        _totals(summary),
    ]
    if not summary.totals.requests:
        where = "" if summary.found else " (there is no ledger at that path yet)"
        parts.append(
            f'<p class="empty" id="empty">No model requests recorded since {since} (UTC)'
            f"{where}.</p>"
        )
    parts.append("</section>")
    parts.append(_plan(plan, auto))
    if summary.totals.requests:
        days = _span_days(summary, now)
        models, by_model = _by(summary, "model", summary.day_model, days)
        agents, by_agent = _by(summary, "agent", summary.day_agent, days)
        # The longest table last: a year has a row per day.
        parts += [models, agents, _runs(summary), _auto(summary)]
        parts.append(_days(summary, by_model, by_agent))
    parts.append(
        "</main><footer><p>Days are UTC days. AI credits are what the answers reported; a "
        "request whose cost was not reported counts its reservation, as estimated. "
        f"The charts draw at most {SERIES - 1} names each and sum the rest. The same "
        f"figures: <code>copilot-host usage --history --since {since} --json</code>.</p>"
        "</footer></body></html>\n"
    )
    return "".join(parts)
