"""The run locks when something other than a clean start touched them: a run id already
held, lock files of no run, names in the runs folder that are not lock files, a dead run's
lock file removed by hand, a live run's removed under it, a start that cannot finish, and
another start's sweep racing this one's lock."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from copilot_host import StoreError
from copilot_host.gateway._ledger import INTERRUPTED, read_history
from copilot_host.gateway._ledger import _runs as runs_module
from copilot_host.store import PrivateFolder

from . import _races
from ._support import NOON, begun, end, ledger_at, opened, rows, runs, start
from .test_processes import writers

RUNS = "ledger.sqlite3-runs"
# A process holding a lock file's lock until its stdin ends, as a start of another
# process does between making its lock file and writing its row in ``runs``.
_HOLDER = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def _new_ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path):
        pass
    return path


def _lock_file(path: Path, run_id: str) -> Path:
    made = path.parent / RUNS / f"{run_id}.lock"
    made.touch(mode=0o600)
    return made


def _dead_run(path: Path, run_id: str) -> int:
    """What a process killed mid-request leaves (test_processes.py kills a real one for
    this): its row in ``runs`` and a request in flight holding 0.75 credits; the caller
    says what is left at its lock file's name. Returns the request's row."""
    db = sqlite3.connect(path)
    try:
        with db:
            first = db.execute("SELECT coalesce(max(id), 0) FROM requests").fetchone()[0]
            db.execute("INSERT INTO runs VALUES (?, ?, ?)", (run_id, NOON, first))
            row = db.execute(
                "INSERT INTO requests (time, run_id, login, agent, api, model_asked, model, "
                "credits, credits_estimated) VALUES (?, ?, 'octocat', 'codex', 'responses', "
                "'gpt-5', 'gpt-5', 0.75, 1)",
                (NOON, run_id),
            ).lastrowid
    finally:
        db.close()
    assert row is not None
    return row


@pytest.fixture
def holder() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    try:
        yield started
    finally:
        for child in started:
            if child.poll() is None:
                child.kill()
            child.communicate()


def _hold(started: list[subprocess.Popen[str]], lock: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    started.append(child)
    assert child.stdout is not None and child.stdout.readline() == "held\n"
    return child


def test_a_run_id_another_ledger_holds_is_refused_and_that_run_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path, run_id="feed01") as first:
        row = begun(first, start())
        with pytest.raises(StoreError) as raised:
            opened(path, run_id="feed01")
        assert raised.value.code == "ledger_io" and raised.value.retryable
        assert "another process records into the ledger as run feed01" in raised.value.message
        # The refused start took nothing of the first run's: its lock file, its row.
        assert [p.name for p in (tmp_path / RUNS).iterdir()] == ["feed01.lock"]
        assert runs(path) == ["feed01"]
        first.end(end(row))
    assert [(r["run_id"], r["status"]) for r in rows(path)] == [("feed01", 200)]
    assert list((tmp_path / RUNS).iterdir()) == []


@pytest.mark.slow
def test_lock_files_of_no_run_go_once_free_and_stay_while_held(
    tmp_path: Path, holder: list[subprocess.Popen[str]]
) -> None:
    path = _new_ledger(tmp_path)
    _lock_file(path, "killed-1")  # a start killed before it wrote its row
    starting = _lock_file(path, "starting-1")  # a start that has not written it yet
    child = _hold(holder, starting)
    # Names that are not run locks are none of the ledger's business.
    for name in ("notes.txt", "Upper-Case.lock"):
        (tmp_path / RUNS / name).write_text("keep")
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start())))
    left = sorted(p.name for p in (tmp_path / RUNS).iterdir())
    assert left == ["Upper-Case.lock", "notes.txt", "starting-1.lock"]
    # Once its holder is gone, the next start removes it too.
    child.communicate("")
    with ledger_at(path):
        pass
    assert sorted(p.name for p in (tmp_path / RUNS).iterdir()) == ["Upper-Case.lock", "notes.txt"]
    assert [r["status"] for r in rows(path)] == [200]


def _not_a_lock_file(kind: str, name: str, victim: Path) -> None:
    """``name`` (in the current folder) made as something no start of ours makes."""
    if kind == "link":
        os.symlink(victim, name)
    elif kind == "fifo":
        os.mkfifo(name, 0o600)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as made:
            made.bind(name)  # a relative name: socket paths are short
    else:
        os.mkdir(name, 0o700)


@pytest.mark.parametrize("kind", ["link", "socket", "folder", "fifo"])
def test_what_is_not_a_lock_file_is_left_alone_and_never_stops_a_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A link, a socket, a folder or a FIFO at a lock file's name: no one holds it, so a
    dead run of that name is settled and an orphan's name is skipped; neither is followed,
    opened as a lock, read as a journal or removed. (A folder made every start fail with
    IsADirectoryError.)"""
    path = _new_ledger(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    dead = _dead_run(path, "dead-1")
    monkeypatch.chdir(tmp_path / RUNS)
    for name in ("dead-1.lock", "orphan-1.lock"):
        _not_a_lock_file(kind, name, victim)
    # Reading (which looks for journals too) is not stopped by it either.
    assert [row.status for row in read_history(path, since=0).rows] == [INTERRUPTED]
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start())))
    found = {r["id"]: r for r in rows(path)}
    assert (found[dead]["status"], found[dead]["credits"]) == (INTERRUPTED, 0.75)
    assert found[dead]["credits_estimated"] == 1
    assert runs(path) == []
    assert sorted(p.name for p in (tmp_path / RUNS).iterdir()) == ["dead-1.lock", "orphan-1.lock"]
    assert victim.read_text() == "keep"


@pytest.mark.slow
def test_a_dead_runs_rows_are_settled_after_its_lock_files_were_removed_by_hand(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    # Its start a row (the journal is in the runs folder: removing that loses what it
    # holds, as removing the ledger loses its rows).
    with writers(path, 1, "hold", "1", "0.75", "rows") as (held,):
        held.go()
        killed = held.result()
        held.kill()
    shutil.rmtree(tmp_path / RUNS)
    # Reading: no lock can be held where there is no runs folder, and none is made.
    history = read_history(path, since=0)
    assert [row.status for row in history.rows] == [200, INTERRUPTED]
    assert not (tmp_path / RUNS).exists()
    # The next start settles the run all the same, in a runs folder made anew.
    with ledger_at(path):
        pass
    last = rows(path)[-1]
    assert (last["id"], last["run_id"]) == (killed["row"], killed["run_id"])
    assert (last["status"], last["credits"], last["credits_estimated"]) == (INTERRUPTED, 0.75, 1)
    assert runs(path) == []
    assert (tmp_path / RUNS).stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("replaced", [False, True], ids=["removed", "replaced"])
def test_a_lock_file_removed_under_a_live_run_is_no_trouble_at_close(
    tmp_path: Path, replaced: bool
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        row = begun(ledger, start())
        mine = tmp_path / RUNS / f"{ledger.run_id}.lock"
        mine.unlink()
        if replaced:  # whoever put a file there, it is not the lock this run holds
            mine.write_text("someone else's")
        ledger.end(end(row))
    assert [r["status"] for r in rows(path)] == [200]
    assert runs(path) == []
    if replaced:
        assert mine.read_text() == "someone else's"
    else:
        assert list((tmp_path / RUNS).iterdir()) == []


@pytest.mark.parametrize("refused", ["settling", "registering"])
def test_a_start_whose_writes_the_file_refuses_changes_nothing_and_holds_no_lock(
    tmp_path: Path, refused: str
) -> None:
    """A crafted ledger whose trigger refuses an UPDATE of ``requests`` (settling a dead
    run) or an INSERT into ``runs`` (this run's row): the typed error, and the
    transaction it hit rolled back whole."""
    path = _new_ledger(tmp_path)
    dead = _dead_run(path, "dead-1")
    dead_lock = _lock_file(path, "dead-1")
    event = "UPDATE ON requests" if refused == "settling" else "INSERT ON runs"
    db = sqlite3.connect(path)
    db.execute(f"CREATE TRIGGER refuse BEFORE {event} BEGIN SELECT RAISE(ABORT, 'no'); END")
    db.commit()
    db.close()
    with pytest.raises(StoreError) as raised:
        opened(path)
    assert raised.value.code == "ledger_io"
    assert "SQLITE_CONSTRAINT_TRIGGER" in raised.value.message
    (row,) = rows(path)
    left = [p.name for p in (tmp_path / RUNS).iterdir()]
    if refused == "settling":
        # Not settled, not forgotten, its lock file kept for the next start.
        assert (row["id"], row["status"]) == (dead, None)
        assert runs(path) == ["dead-1"]
        assert left == [dead_lock.name]
    else:
        # The dead run was settled in a transaction of its own; this run left no trace.
        assert (row["id"], row["status"]) == (dead, INTERRUPTED)
        assert runs(path) == []
        assert left == []


# -- another start's sweep, at the instant between making a lock file and locking it --------


class _Sweep:
    """Another process's start sweeping the runs folder, with the sweep's own code: it
    takes for an orphan the lock file a start has made but not yet locked."""

    def __init__(self, folder: Path, run_id: str) -> None:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        self.folder = PrivateFolder(folder, fd, noun="ledger", code="ledger_insecure")
        self.run_id = run_id
        self.held: list[runs_module._Taken] = []
        self.removed = 0
        self.racing = True

    def take(self, *_args: object) -> None:
        taken = runs_module._take_if_dead(self.folder, self.run_id)
        assert taken is not None and taken.fd is not None, "the sweep could not take it"
        self.held.append(taken)

    def remove(self, *_args: object) -> None:
        runs_module._let_go(self.folder, self.held, remove=True)
        self.held.clear()
        self.removed += 1

    def take_and_remove(self, *_args: object) -> None:
        if self.racing:
            self.take()
            self.remove()


@pytest.fixture
def sweep(tmp_path: Path) -> Iterator[_Sweep]:
    path = _new_ledger(tmp_path)
    found = _Sweep(path.parent / RUNS, "racing-1")
    try:
        yield found
    finally:
        found.folder.close()


def _on_first_lock(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> list[object]:
    """``act`` just before the start's first ``flock``; every ``flock`` call is counted."""
    calls: list[object] = []

    def first(*args: object) -> None:
        calls.append(args)
        if len(calls) == 1:
            act()

    _races.before(monkeypatch, runs_module, "fcntl", "flock", first)
    return calls


def test_a_lock_file_a_sweep_holds_is_waited_for_then_made_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sweep: _Sweep
) -> None:
    # The sweep holds the new file when the start locks it, and removes it while the
    # start, which found its name still taken, waits.
    calls = _on_first_lock(monkeypatch, sweep.take)
    _races.before(monkeypatch, runs_module, "time", "sleep", sweep.remove)
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path, run_id="racing-1") as ledger:
        assert sweep.removed == 1 and len(calls) == 2
        assert [p.name for p in (tmp_path / RUNS).iterdir()] == ["racing-1.lock"]
        ledger.end(end(begun(ledger, start())))
    assert [(r["run_id"], r["status"]) for r in rows(path)] == [("racing-1", 200)]
    assert list((tmp_path / RUNS).iterdir()) == []


def test_a_lock_file_a_sweep_removed_before_it_was_locked_is_made_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sweep: _Sweep
) -> None:
    calls = _on_first_lock(monkeypatch, sweep.take_and_remove)
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path, run_id="racing-1") as ledger:
        # The start locked a file that no longer had a name, saw it, and made another.
        assert sweep.removed == 1 and len(calls) == 2
        lock = tmp_path / RUNS / "racing-1.lock"
        assert lock.exists()
        ledger.end(end(begun(ledger, start())))
    assert [r["status"] for r in rows(path)] == [200]
    assert not lock.exists()


def test_lock_files_removed_as_fast_as_they_are_made_end_the_start_with_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sweep: _Sweep
) -> None:
    _races.before(monkeypatch, runs_module, "fcntl", "flock", sweep.take_and_remove)
    path = tmp_path / "ledger.sqlite3"
    with pytest.raises(StoreError) as raised:
        opened(path, run_id="racing-1")
    assert raised.value.code == "ledger_io" and raised.value.retryable
    assert "removed as fast as they are made" in raised.value.message
    assert sweep.removed == 8
    assert list((tmp_path / RUNS).iterdir()) == []
    sweep.racing = False
    with ledger_at(path, run_id="racing-1") as ledger:
        ledger.end(end(begun(ledger, start())))
    assert [r["status"] for r in rows(path)] == [200]
