"""The run's journal: where a start waits for its row without a daily budget. What a dead
run left there is recorded once, a live run's is counted by a daily budget elsewhere and
shown by the history, a row written but not yet freed is never counted twice, and a
journal that still holds requests when its writer fails outlives the run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from copilot_host.gateway._ledger import (
    IN_FLIGHT,
    INTERRUPTED,
    OverDailyBudget,
    read_history,
)
from copilot_host.gateway._ledger import _ledger as ledger_module
from copilot_host.gateway._ledger._journal import SIZE, SLOTS, Journal

from ._support import NOON, begun, end, ledger_at, rows, runs, start
from .test_processes import writers
from .test_writer import _hold_write_lock

RUNS = "ledger.sqlite3-runs"


def test_a_start_is_a_slot_of_the_run_file_and_its_row_frees_it(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        lock = tmp_path / RUNS / f"{ledger.run_id}.lock"
        assert lock.stat().st_size == SIZE
        assert (lock.stat().st_mode & 0o777) == 0o600
        row = begun(ledger, start(model_asked="sonnet-journal"))
        assert b"sonnet-journal" in lock.read_bytes()
        assert [r.status for r in read_history(path, since=0).rows] == [IN_FLIGHT]
        ledger.end(end(row))
        assert ledger.flush()
        assert [r.status for r in read_history(path, since=0).rows] == [200]
        # Freed: the next start takes the same slot (the file's pages stay few).
        again = begun(ledger, start())
        assert again % SLOTS == row % SLOTS and again != row
        ledger.end(end(again))
    assert not lock.exists()
    assert [(r["status"], r["seq"]) for r in rows(path)] == [(200, 1), (200, 2)]


def test_a_row_written_but_not_yet_freed_is_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that dies between its row's commit and freeing the slot leaves both: the
    history and the next settling find the row by its ``seq`` and add nothing."""
    monkeypatch.setattr(Journal, "free", lambda self, key: None)
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start(reserved=0.75))))
        assert ledger.flush()
        shown = read_history(path, since=0)
        assert [r.status for r in shown.rows] == [200]
        assert (shown.requests, shown.credits) == (1, 0.25)
    # Closing settles what the journal still holds: nothing new.
    assert [(r["status"], r["seq"]) for r in rows(path)] == [(200, 1)]
    assert runs(path) == []


@pytest.mark.slow
def test_a_daily_budget_counts_what_another_process_holds_in_its_journal(
    tmp_path: Path,
) -> None:
    """A process without a budget holds 0.75 credits in flight (three answers of 0.25
    spent): a process with a budget of 1.5 counts both, and after the holder is killed,
    the reservation still counts once settled."""
    path = tmp_path / "ledger.sqlite3"
    with writers(path, 1, "hold", "2", "0.75") as (held,):
        held.go()
        killed = held.result()
        assert killed["row"] < 0  # kept in the journal, not a row
        with ledger_at(path, max_credits_per_day=1.5) as ledger:
            day = rows(path)[0]["time"]
            assert ledger.spent_today("octocat", now=day) == 1.25
            refused = ledger.begin_wait(start(time=day, reserved=0.5))
            assert isinstance(refused, OverDailyBudget)
            assert (refused.spent, refused.reserved) == (0.5, 0.75)
            fits = ledger.begin_wait(start(time=day, reserved=0.25))
            assert not isinstance(fits, OverDailyBudget)
            ledger.end(end(fits.row, credits=0.25))
        held.kill()
    with ledger_at(path, max_credits_per_day=1.5) as ledger:
        assert ledger.spent_today("octocat", now=day) == 1.5
    statuses = sorted(str(r["status"]) for r in rows(path))
    assert statuses == ["200", "200", "200", INTERRUPTED]


def test_a_journal_still_holding_requests_when_recording_fails_outlives_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row of an answer cannot be written (the file stays locked past the busy
    timeout): recording stops with one warning, the run's file keeps the start, and the
    next start records it ``interrupted``. Never lost."""
    monkeypatch.setattr(ledger_module, "BUSY_SECONDS", 0.2)
    path = tmp_path / "ledger.sqlite3"
    warnings: list[str] = []
    with ledger_at(path, warn=warnings.append) as ledger:
        row = begun(ledger, start(time=NOON, reserved=0.75))
        other = _hold_write_lock(path)
        ledger.end(end(row))
        ledger.flush(timeout=10)
        assert ledger.failed is not None
        run_id = ledger.run_id
    other.execute("COMMIT")
    other.close()
    assert len(warnings) == 1
    assert os.listdir(tmp_path / RUNS) == [f"{run_id}.lock"]
    assert [r.status for r in read_history(path, since=0).rows] == [INTERRUPTED]
    with ledger_at(path):
        pass
    (found,) = rows(path)
    assert (found["run_id"], found["status"], found["credits"]) == (run_id, INTERRUPTED, 0.75)
    assert found["credits_estimated"] == 1
    assert os.listdir(tmp_path / RUNS) == []


def test_a_start_that_does_not_fit_a_slot_is_a_row(tmp_path: Path) -> None:
    """Names too long for a slot (or every slot taken): the start is written as a row,
    the slower way that always works."""
    path = tmp_path / "ledger.sqlite3"
    long = "\u20ac" * 128  # three bytes a character, as many characters as a name keeps
    with ledger_at(path) as ledger:
        row = begun(ledger, start(login=long, model_asked=long, model=long))
        assert row > 0
        assert [r["status"] for r in rows(path)] == [None]
        ledger.end(end(row))
    assert [(r["status"], r["seq"]) for r in rows(path)] == [(200, None)]


def test_a_damaged_journal_is_read_for_what_it_holds_whole(tmp_path: Path) -> None:
    """Slots that do not read back (bytes changed by hand) are skipped; the others are
    recorded as usual when the run is settled."""
    path = tmp_path / "ledger.sqlite3"
    with writers(path, 1, "hold", "0", "0.5") as (held,):
        held.go()
        killed = held.result()
        held.kill()
    journal = tmp_path / RUNS / f"{killed['run_id']}.lock"
    data = bytearray(journal.read_bytes())
    # A second slot marked taken whose names are garbage, and a third with a bad length.
    data[1024] = 1
    data[1024 + 8 : 1024 + 8 + 26] = data[8 : 8 + 26]
    data[1024 + 34 : 1024 + 40] = b"\xff\xfe\xfd\xfc\xfb\xfa"
    data[2048] = 1
    data[2048 + 32 : 2048 + 34] = (60_000).to_bytes(2, "little")
    journal.write_bytes(bytes(data))
    with ledger_at(path):
        pass
    (found,) = rows(path)
    assert (found["status"], found["credits"], found["model"]) == (INTERRUPTED, 0.5, "gpt-5")
