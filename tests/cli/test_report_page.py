"""The report page as a pure function of a summary: series past the seventh summed as
"other", the costliest runs listed and the rest totalled, Auto's saving shown once the
ledger has it, and the chart's axis. (tests/ledger/test_report_cli.py checks the page's
figures against ``usage --history --json``.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from copilot_host_cli._chart import Chart, Series, chart, nice_step, series_of
from copilot_host_cli._report import RUNS_SHOWN, report_html

from copilot_host.gateway._ledger import BY, Cell, Group, History, RunSpan, Summary
from tests.ledger._page import parse

DAY = 86_400.0
NOW = 1_796_558_400.0  # 2026-12-06 12:00 UTC
SINCE = NOW - 2 * DAY - 12 * 3600  # 2026-12-04 00:00 UTC


def _history(by: str | None, groups: list[Group]) -> History:
    return History(
        Path("/ledger"),
        True,
        SINCE,
        by,
        (),
        tuple(groups),
        sum(g.requests for g in groups),
        sum(g.credits for g in groups),
        0.0,
    )


def _summary(*, models: int = 3, runs: int = 2, saved: float | None = None) -> Summary:
    """One request per model on 2026-12-05, each model costing its number in credits; one
    run per entry of ``runs``, each of one request."""
    names = [f"model-{i:02d}" for i in range(models)]
    by_model = sorted(
        (Group(name, 1, float(i + 1), 10, 1) for i, name in enumerate(names)),
        key=lambda g: -g.credits,
    )
    credits = sum(g.credits for g in by_model)
    day = Group("2026-12-05", models, credits, 10 * models, models)
    agent = Group("codex", models, credits, 10 * models, models)
    run_groups = [Group(f"run{i:03d}", 1, float(runs - i), 1, 1) for i in range(runs)]
    by = {
        "day": _history("day", [day]),
        "agent": _history("agent", [agent]),
        "model": _history("model", by_model),
        "run": _history("run", run_groups),
    }
    assert sorted(by) == sorted(BY)
    return Summary(
        Path("/ledger"),
        True,
        SINCE,
        _history(None, [day]),
        by,
        tuple(Cell("2026-12-05", g.key, 1, g.credits) for g in by_model),
        (Cell("2026-12-05", "codex", models, credits),),
        {g.key: RunSpan(NOW - DAY, NOW - DAY + 60, ("codex",)) for g in run_groups[:RUNS_SHOWN]},
        (2, 0.5),
        saved,
    )


def test_past_seven_models_the_rest_are_one_series_named_other() -> None:
    page = parse(report_html(_summary(models=10), "not logged in", now=NOW))
    legend = [a for t, a in page.tags if t == "span" and "sw" in (a.get("class") or "")]
    assert legend  # swatches beside the legend's names
    # The day's breakdown names the seven costliest and sums the three cheapest (1+2+3).
    breakdown = page.rows("days")[0][3]
    assert breakdown == (
        "model-09 10 model-08 9 model-07 8 model-06 7 model-05 6 other models 6 "
        "model-04 5 model-03 4"
    )
    # The table of models still lists all ten.
    assert [row[0] for row in page.rows("models")] == [f"model-{i:02d}" for i in range(9, -1, -1)]


def test_the_costliest_runs_are_listed_and_the_rest_totalled() -> None:
    page = parse(report_html(_summary(runs=RUNS_SHOWN + 5), "not logged in", now=NOW))
    rows = page.tables["runs"]
    listed = page.rows("runs")
    assert len(listed) == RUNS_SHOWN + 1  # the shown runs and the footer
    assert listed[0][0] == "run000" and listed[0][1:3] == ["2026-12-05 12:00", "2026-12-05 12:01"]
    # The five cheapest: 5+4+3+2+1 credits, one request each.
    assert rows[-1] == ["5 other runs", "5", "15"]
    assert page.words("runs").startswith(f"The {RUNS_SHOWN} costliest of 25 runs")


@pytest.mark.parametrize(("saved", "shown"), [(None, "not reported"), (1.25, "1.25")])
def test_autos_saving_is_shown_once_the_ledger_has_it(saved: float | None, shown: str) -> None:
    page = parse(report_html(_summary(saved=saved), "not logged in", now=NOW))
    assert page.pairs("auto")["Saved by Auto's discount"].startswith(shown)
    assert page.pairs("auto")["Requests that asked for auto"] == "2"


def test_the_axis_spans_every_day_of_the_range_to_today() -> None:
    html = report_html(_summary(), "not logged in", now=NOW)
    # 2026-12-04, -05 and -06: three slots, the ends labelled with the year.
    assert ">2026-12-04</text>" in html and ">2026-12-06</text>" in html
    assert ">12-05</text>" in html
    # A range longer than the ledger keeps starts at its first request instead.
    long = dataclasses.replace(_summary(), since=NOW - 1000 * DAY)
    html = report_html(long, "not logged in", now=NOW)
    assert ">2026-12-05</text>" in html and ">2026-12-06</text>" in html
    assert html.count('text-anchor="middle"') == 0  # two days: the two ends, no middle
    # A time SQLite cannot date (edited by hand: 1e20) groups as "None": drawn as found.
    odd = _summary()
    days = dataclasses.replace(odd.by["day"], groups=(Group("None", 1, 1.0, 1, 1),))
    html = report_html(
        dataclasses.replace(odd, by={**odd.by, "day": days}), "not logged in", now=NOW
    )
    assert ">None</text>" in html and html.count('text-anchor="start"') == 0


def test_nice_steps_are_one_two_or_five_times_a_power_of_ten() -> None:
    assert [nice_step(x) for x in (0, 4, 9, 10, 0.07, 130, 30, 2_000_000)] == [
        1.0,
        1.0,
        5.0,
        5.0,
        0.02,
        50.0,
        10.0,
        500_000.0,
    ]


def test_series_keep_their_order_and_sum_the_rest() -> None:
    cells = [("d1", "a", 1.0), ("d1", "b", 2.0), ("d2", "a", 3.0)]
    assert series_of(cells, ["b", "a"], "other") == (
        Series("b", {"d1": 2.0}),
        Series("a", {"d1": 1.0, "d2": 3.0}),
    )
    many = [("d1", f"m{i}", 1.0) for i in range(9)]
    found = series_of(many, [f"m{i}" for i in range(9)], "other")
    assert [s.name for s in found][-2:] == ["m6", "other"]
    assert found[-1].credits == {"d1": 2.0}


def test_a_chart_draws_a_titled_part_per_figure_and_nothing_for_none() -> None:
    drawn = Chart(
        ("2026-12-05", "2026-12-06"),
        (Series("a <b>", {"2026-12-05": 1.5}), Series("c", {"2026-12-06": 0.0})),
        "T",
        "D",
    )
    svg = chart(drawn, figure_id="x")
    assert svg.count("<rect ") == 1
    # No days: the axes and no bar (the page draws no chart then, but the chart holds).
    empty = chart(Chart((), (), "T", "D"), figure_id="y")
    assert "<rect " not in empty and ">0</text>" in empty
    assert "<title>2026-12-05, a &lt;b&gt;: 1.5 credits</title>" in svg
    assert '<title id="x-t">T</title><desc id="x-d">D</desc>' in svg


def test_a_name_as_long_as_the_ledger_keeps_is_shown_whole() -> None:
    long = "m" * 128  # the ledger cuts names to 128 characters
    summary = _summary()
    models = summary.by["model"]
    renamed = (Group(long, 1, 9.0, 1, 1), *models.groups)
    summary = dataclasses.replace(
        summary, by={**summary.by, "model": dataclasses.replace(models, groups=renamed)}
    )
    page = parse(report_html(summary, "not logged in", now=NOW))
    assert page.rows("models")[0][0] == long
