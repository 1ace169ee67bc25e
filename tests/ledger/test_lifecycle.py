"""A ledger's life beyond the common request: recording off, a closed ledger, old rows
pruned at start, more starts waiting for a busy file than one batch holds, and the ways
recording stops mid-run (a file locked past the busy timeout, a table gone at close, a
caller's bug), each said once while serving goes on."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from copilot_host.gateway._ledger import (
    INTERRUPTED,
    KEEP_DAYS,
    Admitted,
    LedgerOff,
    Start,
    open_ledger,
    read_history,
)
from copilot_host.gateway._ledger import _ledger as ledger_module
from copilot_host.gateway._ledger._writer import MAX_BATCH

from ._support import DAY, NOON, begun, clock_at, end, ledger_at, opened, rows, runs, start
from .test_writer import _hold_write_lock

NOT_RECORDED = Admitted(None)


def test_recording_off_answers_every_call_as_not_recorded_and_makes_nothing(
    copilot_home: Path,
) -> None:
    off = open_ledger(None)
    assert off == LedgerOff(None)
    assert asyncio.run(off.begin(start())) == NOT_RECORDED
    assert off.begin_wait(start()) == NOT_RECORDED
    off.end(end(1))
    off.answered(start(), end(1))
    assert off.spent_today("octocat") == 0.0
    off.close()
    assert list(copilot_home.iterdir()) == []


def test_a_closed_ledger_records_nothing_more(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = opened(path, clock=clock_at())
    assert repr(ledger) == f"Ledger(path={str(path)!r}, run_id={ledger.run_id!r})"
    row = begun(ledger, start())
    ledger.end(end(row))
    assert ledger.spent_today("octocat") == 0.25
    ledger.close()
    assert asyncio.run(ledger.begin(start())) == NOT_RECORDED
    assert ledger.begin_wait(start()) == NOT_RECORDED
    ledger.answered(start(reserved=None), end(0))
    assert ledger.spent_today("octocat") == 0.0  # no one left to ask
    assert not ledger.flush(timeout=1)
    assert [r["status"] for r in rows(path)] == [200]


def test_ended_rows_older_than_the_kept_days_go_at_start_whatever_their_number(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    old = NOON - (KEEP_DAYS + 1) * DAY
    # A run that started long ago and still has a request in flight from then, a row (a
    # daily budget makes it one; a start in the journal is not in the table at all).
    with ledger_at(path, clock=clock_at(old), max_credits_per_day=100.0) as long_lived:
        in_flight = begun(long_lived, start(time=old))
        db = sqlite3.connect(path)
        with db:
            db.executemany(
                "INSERT INTO requests (time, run_id, login, agent, api, model_asked, model, "
                "status, credits) VALUES (?, 'gone-1', 'octocat', 'codex', 'responses', "
                "'gpt-5', 'gpt-5', 200, 0.25)",
                [(old + i * 0.001,) for i in range(12_001)]
                + [(NOON - (KEEP_DAYS - 1) * DAY,), (NOON,)],
            )
        db.close()
        with ledger_at(path, clock=clock_at()):
            pass
        kept = rows(path)
        assert [(r["id"], r["time"], r["status"]) for r in kept] == [
            (in_flight, old, None),
            (in_flight + 12_002, NOON - (KEEP_DAYS - 1) * DAY, 200),
            (in_flight + 12_003, NOON, 200),
        ]
    assert rows(path)[0]["status"] == INTERRUPTED


def test_more_starts_than_one_batch_waiting_for_a_busy_file_are_all_recorded(
    tmp_path: Path,
) -> None:
    """Over two batches' worth of requests start while another process holds the file:
    the writer thread takes them a batch at a time once it is free."""
    path = tmp_path / "ledger.sqlite3"
    count = 2 * MAX_BATCH + 1

    async def main() -> list[Admitted]:
        with ledger_at(path, max_credits_per_day=1e9) as ledger:
            other = _hold_write_lock(path)
            waiting = [asyncio.ensure_future(ledger.begin(start())) for _ in range(count)]
            await asyncio.sleep(0)  # each has run up to its wait: all are queued
            assert not any(one.done() for one in waiting)
            other.execute("COMMIT")
            other.close()
            admitted = await asyncio.wait_for(asyncio.gather(*waiting), 30)
            for one in admitted:
                assert isinstance(one, Admitted)
                ledger.end(end(one.row))
            return [one for one in admitted if isinstance(one, Admitted)]

    admitted = asyncio.run(main())
    assert len({one.row for one in admitted}) == count
    found = rows(path)
    assert sorted(r["id"] for r in found) == sorted(one.row for one in admitted if one.row)
    assert {r["status"] for r in found} == {200}


def test_a_file_locked_past_the_busy_timeout_stops_recording_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_module, "BUSY_SECONDS", 0.2)
    path = tmp_path / "ledger.sqlite3"
    warnings: list[str] = []
    with ledger_at(path, warn=warnings.append, max_credits_per_day=100.0) as ledger:
        row = begun(ledger, start())
        other = _hold_write_lock(path)
        # Queued to the writer thread, which waits the busy timeout, then gives up.
        assert ledger.begin_wait(start(), timeout=10) == NOT_RECORDED
        assert warnings == [
            f"the ledger stopped recording: The ledger {path} stayed locked by another "
            "process for 0.2 s"
        ]
        assert ledger.failed == warnings[0]
        other.execute("COMMIT")
        other.close()
        # Serving goes on, unrecorded; nothing more is said.
        assert ledger.begin_wait(start(), timeout=10) == NOT_RECORDED
        ledger.end(end(row))
    assert len(warnings) == 1
    # Its request in flight was never ended in the file: the next start settles it.
    assert [r.status for r in read_history(path, since=0).rows] == [INTERRUPTED]
    with ledger_at(path):
        pass
    assert [(r["id"], r["status"]) for r in rows(path)] == [(row, INTERRUPTED)]
    assert runs(path) == []


def test_a_close_that_cannot_finish_says_so_once_and_lets_the_run_go(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    warnings: list[str] = []
    with ledger_at(path, warn=warnings.append) as ledger:
        ledger.end(end(begun(ledger, start())))
        with sqlite3.connect(path) as vandal:  # the table a close forgets the run in
            vandal.execute("DROP TABLE runs")
        vandal.close()
        ledger.end(end(begun(ledger, start())))
    assert len(warnings) == 1
    assert warnings[0].startswith("the ledger stopped recording: The ledger ")
    assert "SQLITE_ERROR" in warnings[0]
    assert [r["status"] for r in rows(path)] == [200, 200]
    # The run's lock went with it all the same.
    assert list((tmp_path / "ledger.sqlite3-runs").iterdir()) == []


def test_a_bug_in_what_the_gateway_hands_over_is_named_by_its_type_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    warnings: list[str] = []
    secret = "gho_" + "0" * 36
    broken = Start(secret, "octocat", "codex", "responses", "gpt-5", "gpt-5", 0.5, ())  # type: ignore[arg-type]
    with ledger_at(path, warn=warnings.append) as ledger:
        assert ledger.begin_wait(broken) == NOT_RECORDED
        assert ledger.begin_wait(start()) == NOT_RECORDED
    assert warnings == ["the ledger stopped recording: TypeError writing ledger.sqlite3"]
    assert rows(path) == []
