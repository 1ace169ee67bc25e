"""One process recording: what a row holds, waiting for a busy file without blocking the
event loop, a request cancelled before it went upstream, a failing write, the daily budget."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from copilot_host.gateway._ledger import (
    IN_FLIGHT,
    INTERRUPTED,
    Admitted,
    End,
    OverDailyBudget,
    _writer,
    new_run_id,
    read_history,
)
from copilot_host.gateway._ledger._journal import SLOTS

from ._support import NOON, begun, clock_at, end, ledger_at, opened, rows, runs, start


def test_a_request_is_one_row_holding_what_the_gateway_knew(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    run_id = new_run_id()
    with ledger_at(path, run_id=run_id) as ledger:
        admitted = ledger.begin_wait(start(rewrote=("billing-header", "max_tokens")))
        assert isinstance(admitted, Admitted) and admitted.row is not None
        # Kept in the run's journal before the request goes upstream: in flight, its
        # reservation held, for anyone reading; the row is written whole at its end.
        assert rows(path) == []
        (flying,) = read_history(path, since=0).rows
        assert (flying.status, flying.credits, flying.credits_estimated) == (IN_FLIGHT, 0.5, True)
        assert flying.rewrote == ("billing-header", "max_tokens")
        ledger.end(End(admitted.row, 200, 1200, 310, 100, 0.0425, False, 2310))
    (row,) = rows(path)
    assert row == {
        "id": 1,
        "time": NOON,
        "run_id": run_id,
        "login": "octocat",
        "agent": "claude-code",
        "api": "messages",
        "model_asked": "sonnet",
        "model": "claude-sonnet-4.5",
        "status": 200,
        "input_tokens": 1200,
        "output_tokens": 310,
        "cached_tokens": 100,
        "credits": 0.0425,
        "credits_estimated": 0,
        "duration_ms": 2310,
        "rewrote": "billing-header,max_tokens",
        "seq": 1,
    }
    assert runs(path) == []  # the run is forgotten once closed


def test_an_end_that_names_the_changes_replaces_the_starts(tmp_path: Path) -> None:
    """The answer's own changes are known at its end: the row names them all, as the
    access line does; an end that names none keeps the start's."""
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        first = begun(ledger, start(rewrote=("namespaces",)))
        ledger.end(End(first, 200, rewrote=("namespaces", "custom-tools")))
        ledger.end(end(begun(ledger, start(rewrote=("namespaces",)))))
    assert [row["rewrote"] for row in rows(path)] == ["namespaces,custom-tools", "namespaces"]


def test_an_answer_the_gateway_gave_itself_is_one_row_of_no_credits(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.answered(
            start(api="messages", agent="claude-code", reserved=None, rewrote=()),
            End(0, 200, credits=0.0, duration_ms=1),
        )
    (row,) = rows(path)
    assert (row["status"], row["credits"], row["credits_estimated"]) == (200, 0.0, 0)


def test_an_agent_outside_the_vocabulary_is_other_and_an_unknown_api_a_mistake(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start(agent="Mozilla/5.0 (X11)"))))
        with pytest.raises(ValueError, match="unknown API"):
            ledger.begin_wait(start(api="completions"))
        with pytest.raises(ValueError, match="unknown API"):  # the request path's way in
            ledger.begin_now(start(api="completions"))
        assert ledger.failed is None  # a caller's mistake does not stop recording
    assert [row["agent"] for row in rows(path)] == ["other"]


def test_closing_with_a_request_in_flight_records_it_interrupted_with_its_reservation(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.begin_wait(start(reserved=0.75))
        unknown = begun(ledger, start(reserved=None))
    first, second = rows(path)
    assert (first["status"], first["credits"], first["credits_estimated"]) == (
        INTERRUPTED,
        0.75,
        1,
    )
    assert (second["status"], second["credits"], second["credits_estimated"]) == (
        INTERRUPTED,
        None,
        0,
    )
    # An end that comes after the close changes nothing.
    ledger.end(end(unknown))
    assert rows(path)[1]["status"] == INTERRUPTED


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_without_a_daily_budget_a_start_needs_nothing_of_the_file(tmp_path: Path) -> None:
    """Its start goes into the run's journal: another process holding the write lock
    does not hold it up; its row is written once the lock is free."""
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        other = _hold_write_lock(path)
        admitted = ledger.begin_wait(start(), timeout=0.5)
        assert isinstance(admitted, Admitted) and admitted.row is not None
        ledger.end(end(admitted.row))
        other.execute("COMMIT")
        other.close()
        assert ledger.flush()
    assert [row["status"] for row in rows(path)] == [200]


def test_a_busy_file_is_waited_for_by_the_writer_thread_not_the_event_loop(
    tmp_path: Path,
) -> None:
    """With a daily budget a start is admitted in a transaction (see the next test)."""
    path = tmp_path / "ledger.sqlite3"

    async def main() -> tuple[Admitted | OverDailyBudget, int]:
        ticks = 0
        with ledger_at(path, max_credits_per_day=100.0) as ledger:
            other = _hold_write_lock(path)
            begun = asyncio.ensure_future(ledger.begin(start()))
            while ticks < 20:  # the loop goes on while the start waits for the file
                await asyncio.sleep(0.005)
                ticks += 1
            assert not begun.done()
            other.execute("COMMIT")
            other.close()
            admitted = await asyncio.wait_for(begun, 10)
            assert isinstance(admitted, Admitted)
            ledger.end(end(admitted.row))
            return admitted, ticks

    admitted, ticks = asyncio.run(main())
    assert isinstance(admitted, Admitted)
    assert ticks == 20
    assert [(row["id"], row["status"]) for row in rows(path)] == [(admitted.row, 200)]


def test_a_request_cancelled_before_it_went_upstream_leaves_no_row(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"

    async def main() -> None:
        with ledger_at(path, max_credits_per_day=100.0) as ledger:
            other = _hold_write_lock(path)
            begun = asyncio.ensure_future(ledger.begin(start()))
            await asyncio.sleep(0.05)
            begun.cancel()
            with pytest.raises(asyncio.CancelledError):
                await begun
            other.execute("COMMIT")
            other.close()
            assert ledger.flush()
            # The next request is recorded as usual.
            admitted = await ledger.begin(start(model_asked="next"))
            assert isinstance(admitted, Admitted)
            ledger.end(end(admitted.row))

    asyncio.run(main())
    assert [(row["model_asked"], row["status"]) for row in rows(path)] == [("next", 200)]


def test_a_write_that_fails_stops_recording_with_one_warning_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    warnings: list[str] = []
    with ledger_at(path, warn=warnings.append) as ledger:
        ledger.end(end(begun(ledger, start())))
        assert ledger.flush()
        vandal = sqlite3.connect(path)
        vandal.execute("DROP TABLE requests")
        vandal.commit()
        vandal.close()
        # The next row cannot be written: recording stops, the request is not lost
        # (its start stays in the journal for the next start to settle).
        ledger.end(end(begun(ledger, start())))
        ledger.flush()
        assert ledger.failed is not None
        for _ in range(3):
            assert ledger.begin_wait(start(), timeout=10) == Admitted(None)
    assert len(warnings) == 1
    assert warnings[0].startswith("the ledger stopped recording: ")


def test_the_daily_budget_counts_spent_and_reserved_credits_of_the_utc_day(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    clock = clock_at()
    with ledger_at(path, clock=clock, max_credits_per_day=1.0) as ledger:
        # A fresh budget lets one request through, whatever its reservation.
        big = ledger.begin_wait(start(reserved=5.0))
        assert isinstance(big, Admitted)
        # While it is in flight, its reservation counts: nothing else fits.
        refused = ledger.begin_wait(start(reserved=0.125))
        assert isinstance(refused, OverDailyBudget)
        assert (refused.spent, refused.reserved, refused.limit) == (0.0, 5.0, 1.0)
        assert "--max-credits-per-day" in refused.message()
        assert "renews at 00:00 UTC" in refused.message()
        ledger.end(end(big.row, credits=0.5))
        assert ledger.spent_today("octocat") == 0.5
        admitted = [ledger.begin_wait(start(reserved=0.125)) for _ in range(5)]
        assert [isinstance(a, Admitted) for a in admitted] == [True] * 4 + [False]
        assert ledger.spent_today("octocat") == 1.0  # 0.5 spent, 4 x 0.125 reserved
        # Another account's day and the next UTC day are budgets of their own.
        assert isinstance(ledger.begin_wait(start(login="hubot", reserved=0.125)), Admitted)
        tomorrow = start(time=NOON + 86_400, reserved=0.125)
        assert isinstance(ledger.begin_wait(tomorrow), Admitted)
        for one in admitted[:4]:
            assert isinstance(one, Admitted)
            ledger.end(end(one.row, credits=0.125))
        assert ledger.spent_today("octocat") == 1.0
        # Spent: refused for the rest of the day, even with nothing in flight.
        assert isinstance(ledger.begin_wait(start(reserved=0.0)), OverDailyBudget)
    assert len([row for row in rows(path) if row["login"] == "octocat"]) == 6


def test_ends_wait_for_the_writers_next_batch_but_a_flush_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start())))
        assert ledger.flush()
        assert rows(path)[0]["status"] == 200
        ledger.end(end(begun(ledger, start())))
        # The writer thread writes it in its next batch, within its linger.
        deadline = time.monotonic() + 5
        while len(rows(path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rows(path)[1]["status"] == 200


def test_ends_that_fill_a_quarter_of_the_journal_wake_the_writer_before_its_linger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiting end holds its journal slot: a busy gateway must not run out of slots (and
    fall back to a row per start) because the writer is lingering."""
    monkeypatch.setattr(_writer, "LINGER", 600.0)  # only the wake can write them
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        begun_rows = [begun(ledger, start()) for _ in range(_writer.WAKE_AT)]
        for row in begun_rows[:-1]:
            ledger.end(end(row))
        assert rows(path) == []  # one short of the mark: still waiting
        ledger.end(end(begun_rows[-1]))
        deadline = time.monotonic() + 5
        while len(rows(path)) < _writer.WAKE_AT and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [row["status"] for row in rows(path)] == [200] * _writer.WAKE_AT
        assert _writer.WAKE_AT * 4 == SLOTS


def test_a_batch_of_ends_of_every_shape_is_written_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer inserts a batch's rows many to a statement, a statement per shape (which
    values are NULL, whether a journal ``seq`` is bound) and size: more rows than one
    statement takes, sizes that are not powers of two, and shapes interleaved must each
    come back as the row its end made, in the order the ends came."""
    monkeypatch.setattr(_writer, "LINGER", 600.0)  # one batch: what close() writes
    path = tmp_path / "ledger.sqlite3"
    ends: list[tuple[int, int | None, float | None]] = []
    with ledger_at(path) as ledger:
        for index in range(50):  # with the local answers, under the writer's wake
            row = begun(ledger, start(time=NOON + index))
            tokens = None if index % 10 == 0 else index
            credits = None if index % 11 == 0 else index / 100
            ledger.end(End(row, 200, tokens, 7, 0, credits, False, index))
            ends.append((index, tokens, credits))
            if index % 7 == 0:  # an answer the gateway gave itself: no seq
                ledger.answered(start(time=NOON + index, reserved=None), End(0, 204))
        assert rows(path) == []  # still waiting for the one batch
    written = rows(path)
    journaled = [row for row in written if row["seq"] is not None]
    assert [(row["duration_ms"], row["input_tokens"], row["credits"]) for row in journaled] == ends
    assert [row["seq"] for row in journaled] == sorted(row["seq"] for row in journaled)
    local = [row for row in written if row["seq"] is None]
    assert [row["status"] for row in local] == [204] * len(range(0, 50, 7))
    assert all(row["output_tokens"] is None and row["credits"] is None for row in local)
    assert len(written) == len(ends) + len(local)


def test_a_second_close_and_an_open_of_a_fresh_run_id_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = opened(path)
    ledger.close()
    ledger.close()
    with pytest.raises(ValueError, match="run id"):
        opened(path, run_id="../escape")
