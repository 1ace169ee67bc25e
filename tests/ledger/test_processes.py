"""Real processes writing one ledger at once: no row lost or doubled, a writer killed
mid-request recorded ``interrupted`` once, and the daily budget counted across them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from copilot_host.gateway._ledger import (
    IN_FLIGHT,
    INTERRUPTED,
    OverDailyBudget,
    read_history,
)

from ._support import begun, end, ledger_at, rows, runs, start

pytestmark = pytest.mark.slow

CHILD = Path(__file__).resolve().parent / "writer_child.py"
REPO = Path(__file__).resolve().parents[2]


class Writer:
    def __init__(self, path: Path, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(path), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.line() == "ready"

    def line(self) -> str:
        assert self.process.stdout is not None
        text = self.process.stdout.readline()
        if not text:
            assert self.process.stderr is not None
            raise AssertionError(f"the writer ended: {self.process.stderr.read()[-2000:]}")
        return text.strip()

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def result(self) -> Any:
        return json.loads(self.line())

    def finish(self) -> None:
        assert self.process.wait(60) == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(60)


@contextmanager
def writers(path: Path, count: int, *args: str) -> Iterator[list[Writer]]:
    started: list[Writer] = []
    try:
        for _ in range(count):
            started.append(Writer(path, *args))
        yield started
    finally:
        for one in started:
            if one.process.poll() is None:
                one.kill()
            for stream in (one.process.stdin, one.process.stdout, one.process.stderr):
                if stream is not None:
                    stream.close()


def test_a_thousand_requests_from_four_processes_make_exactly_a_thousand_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with writers(path, 4, "record", "250", "8") as started:
        for one in started:
            one.go()
        results = [one.result() for one in started]
        for one in started:
            one.finish()
    found = rows(path)
    assert len(found) == 1000
    # Each request once: its start had a sequence number of its run's journal, or (every
    # slot taken: ends free them only once committed) it was a row.
    kept = [(row["run_id"], row["seq"]) for row in found if row["seq"] is not None]
    assert len(kept) == len(set(kept)) and kept
    assert all(len(set(res["rows"])) == 250 for res in results)
    assert Counter(row["run_id"] for row in found) == {res["run_id"]: 250 for res in results}
    assert {row["status"] for row in found} == {200}
    assert sum(row["credits"] for row in found) == 250.0
    history = read_history(path, since=0)
    assert (history.requests, history.credits, history.estimated) == (1000, 250.0, 0.0)
    assert runs(path) == []
    assert list((tmp_path / "ledger.sqlite3-runs").iterdir()) == []


def test_a_writer_killed_mid_request_is_interrupted_once_with_its_reservation(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with writers(path, 1, "hold", "3", "0.75") as (held,):
        held.go()
        killed = held.result()
        # Alive: its request is in flight, whoever looks (a start of another process
        # included: it settles only the dead).
        with ledger_at(path):
            pass
        assert read_history(path, since=0).rows[-1].status == IN_FLIGHT
        held.kill()
    before = rows(path)
    # Its start is in its run's journal, not a row.
    assert [row["status"] for row in before] == [200, 200, 200]
    # Dead: history shows it interrupted before anyone records that...
    shown = read_history(path, since=0)
    assert [row.status for row in shown.rows] == [200, 200, 200, INTERRUPTED]
    assert (shown.credits, shown.estimated) == (1.5, 0.75)
    assert rows(path) == before
    # ...and the next start records it, once.
    for _ in range(2):
        with ledger_at(path) as ledger:
            assert ledger.spent_today("octocat", now=before[0]["time"]) == 1.5
    after = rows(path)
    assert len(after) == 4
    last = after[-1]
    assert (last["run_id"], last["seq"]) == (killed["run_id"], 4)
    assert (last["status"], last["credits"], last["credits_estimated"]) == (INTERRUPTED, 0.75, 1)
    assert killed["run_id"] not in runs(path)
    assert list((tmp_path / "ledger.sqlite3-runs").iterdir()) == []
    assert read_history(path, since=0).credits == 1.5


def test_a_run_id_whose_process_died_is_taken_again_and_its_request_settled_once(
    tmp_path: Path,
) -> None:
    """A library caller that names its runs starts again under the same id after a crash:
    the dead run (its lock file, its ``runs`` row, its request in flight) is settled as
    any dead run is, not mistaken for a live one holding the id."""
    path = tmp_path / "ledger.sqlite3"
    with writers(path, 1, "hold", "1", "0.75") as (held,):
        held.go()
        killed = held.result()
        held.kill()
    run_id = killed["run_id"]
    assert runs(path) == [run_id]
    with ledger_at(path, run_id=run_id) as ledger:
        assert ledger.run_id == run_id
        row = begun(ledger, start())
        ledger.end(end(row, credits=0.5))
    found = rows(path)
    # The dead run's request that ended, the one in flight when it was killed (once),
    # and the new run's.
    assert Counter((r["run_id"], r["status"], r["credits"]) for r in found) == {
        (run_id, 200, 0.25): 1,
        (run_id, 200, 0.5): 1,
        (run_id, INTERRUPTED, 0.75): 1,
    }
    assert runs(path) == []
    assert list((tmp_path / "ledger.sqlite3-runs").iterdir()) == []
    assert read_history(path, since=0).credits == 1.5


def test_the_daily_budget_counts_what_every_process_spent_and_holds(tmp_path: Path) -> None:
    """Three processes take 0.125-credit reservations at once against 1 credit a day:
    exactly eight fit, whoever took them; a killed holder's still count."""
    path = tmp_path / "ledger.sqlite3"
    with writers(path, 3, "greedy", "1.0", "0.125") as started:
        for one in started:
            one.go()
        results = [one.result() for one in started]
        assert sum(len(res["admitted"]) for res in results) == 8
        for res in results:
            assert res["refused"]["spent"] + res["refused"]["reserved"] <= 1.0
        started[0].kill()
        for one in started[1:]:
            one.go()
            one.finish()
    with ledger_at(path, max_credits_per_day=1.0) as ledger:
        day = rows(path)[0]["time"]
        assert ledger.spent_today("octocat", now=day) == 1.0
        assert isinstance(ledger.begin_wait(start(time=day, reserved=0.0)), OverDailyBudget)
    assert {row["status"] for row in rows(path)} == {INTERRUPTED}
    assert len(rows(path)) == 8
