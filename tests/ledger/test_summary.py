"""``read_summary``: what ``usage --report`` shows, against ``usage --history``'s own reads."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from copilot_host.gateway._ledger import (
    BY,
    End,
    history_json,
    read_history,
    read_summary,
)

from ._support import DAY, NOON, begun, clock_at, ledger_at, start

AGENTS = ("claude-code", "codex", "aider", "opencode")
MODELS = ("claude-sonnet-4.5", "gpt-5", "gpt-4.1", "claude-haiku-4.5")


def seed_mixed(
    path: Path,
    *,
    rows: int = 120,
    seed: int = 5,
    now: float = NOON,
    days: float = 9.9,
    models: tuple[str, ...] = MODELS,
    agents: tuple[str, ...] = AGENTS,
) -> None:
    """``rows`` requests over the last ``days`` days from three runs, across ``agents``
    and ``models``: about one in eight asked for ``auto``, one in ten never ended (its run
    is closed, so it is interrupted, holding its reservation)."""
    rng = random.Random(seed)
    for run in range(3):
        with ledger_at(path, clock=clock_at(now)) as ledger:
            for _ in range(rows // 3):
                model = rng.choice(models)
                row = begun(
                    ledger,
                    start(
                        time=now - rng.uniform(0, days) * DAY,
                        agent=agents[(run + rng.randrange(3)) % len(agents)],
                        model_asked="auto" if rng.random() < 0.125 else model,
                        model=model,
                        reserved=0.5,
                    ),
                )
                if rng.random() < 0.1:
                    continue
                credits = rng.randrange(1, 4000) / 1024
                tokens_in, tokens_out = rng.randrange(10, 5000), rng.randrange(1, 900)
                ledger.end(End(row, 200, tokens_in, tokens_out, 0, credits, False, 900))


def test_every_figure_is_the_one_history_reads(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    seed_mixed(path)
    since = NOON - 7 * DAY
    summary = read_summary(path, since=since, runs=2)
    assert summary.found
    # The totals are --history --json's "total" exactly; the estimated part is history's.
    document = json.loads(history_json(path, since=since)[0])
    assert summary.totals.requests == document["total"]["requests"] > 40
    assert round(summary.totals.credits, 9) == document["total"]["credits"]
    rows = read_history(path, since=since)
    assert summary.totals.estimated == rows.estimated > 0
    # Each breakdown is read_history(by=...), group for group.
    for by in BY:
        assert summary.by[by] == read_history(path, since=since, by=by), by
    # The cells the charts draw add up, per day and per model or agent, to the rows.
    for cells, field in ((summary.day_model, "model"), (summary.day_agent, "agent")):
        expected: dict[tuple[str, str], list[float]] = {}
        for row in rows.rows:
            day = time.strftime("%Y-%m-%d", time.gmtime(row.time))
            found = expected.setdefault((day, getattr(row, field)), [0, 0.0])
            found[0] += 1
            found[1] += row.credits or 0.0
        assert {(c.day, c.key): [c.requests, round(c.credits, 9)] for c in cells} == {
            key: [count, round(credits, 9)] for key, (count, credits) in expected.items()
        }
    # Spans for the two costliest runs only: their first and last request and agents.
    costliest = [group.key for group in summary.by["run"].groups[:2]]
    assert sorted(summary.spans) == sorted(costliest)
    for run_id, span in summary.spans.items():
        mine = [row for row in rows.rows if row.run_id == run_id]
        assert (span.first, span.last) == (mine[0].time, mine[-1].time)
        assert span.agents == tuple(sorted({row.agent for row in mine}))
    # The requests that asked for auto, and no discount recorded.
    auto = [row for row in rows.rows if row.model_asked == "auto"]
    assert summary.auto[0] == len(auto) > 0
    assert round(summary.auto[1], 9) == round(sum(row.credits or 0.0 for row in auto), 9)
    assert summary.auto_saved is None


def test_a_missing_or_empty_ledger_is_an_empty_summary(tmp_path: Path) -> None:
    missing = read_summary(tmp_path / "none.sqlite3", since=0.0)
    assert not missing.found
    assert (missing.totals.requests, missing.day_model, missing.spans) == (0, (), {})
    assert sorted(missing.by) == sorted(BY)
    assert all(not history.groups for history in missing.by.values())
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path, clock=clock_at()):
        pass
    made = read_summary(path, since=0.0)
    assert made.found
    assert (made.totals.requests, made.totals.credits, made.auto) == (0, 0.0, (0, 0.0))


def test_the_range_starts_at_since(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path, clock=clock_at()) as ledger:
        for days in (3, 1, 0):
            row = begun(ledger, start(time=NOON - days * DAY))
            ledger.end(End(row, 200, 10, 1, 0, 0.25, False, 5))
    summary = read_summary(path, since=NOON - 1 * DAY - 1)
    assert summary.totals.requests == 2
    assert [group.key for group in summary.by["day"].groups] == [
        time.strftime("%Y-%m-%d", time.gmtime(NOON - d * DAY)) for d in (1, 0)
    ]
