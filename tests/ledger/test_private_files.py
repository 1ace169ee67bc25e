"""The ledger's folder and files when they are not what they should be: a runs folder that
is a link, a file or open to others; a ledger named where there is no folder; reading
where nothing was ever recorded; and the file swapped by someone else in the instant
between its check and its use (each swap done for real, at that instant)."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from copilot_host import StoreError, StoreInsecureError
from copilot_host.gateway._ledger import LEDGER_NAME, ledger_path, read_history
from copilot_host.store import _private, private_folder
from tests.cli.conftest import Cli

from . import _races
from ._support import begun, end, ledger_at, opened, rows, start
from .test_file_safety import _refused

RUNS = f"{LEDGER_NAME}-runs"


def _recorded(path: Path) -> Path:
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start())))
    return path


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_runs_folder_that_is_a_link_or_a_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = _recorded(tmp_path / LEDGER_NAME)
    runs = tmp_path / RUNS
    runs.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if kind == "link":
        runs.symlink_to(elsewhere)
    else:
        runs.write_text("")
    assert "is not a folder" in _refused(path).message
    assert list(elsewhere.iterdir()) == []  # no lock file made through the link
    assert len(rows(path)) == 1


def test_a_runs_folder_others_can_enter_is_refused(tmp_path: Path) -> None:
    path = _recorded(tmp_path / LEDGER_NAME)
    (tmp_path / RUNS).chmod(0o755)
    assert "is not a private folder of yours" in _refused(path).message


@pytest.mark.parametrize("named", [False, True], ids=["home", "named"])
def test_reading_where_nothing_was_recorded_finds_nothing_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: bool
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("COPILOT_HOST_HOME", str(home))
    option = str(tmp_path / "spend" / "work.sqlite3") if named else None
    path = ledger_path(option=option, no_ledger=False, environ=os.environ)
    assert path is not None
    history = read_history(path, since=0)
    assert (history.found, history.requests, history.rows) == (False, 0, ())
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_ledger_named_under_a_file_or_with_a_nul_is_a_typed_error(
    tmp_path: Path, cli: Cli
) -> None:
    plain = tmp_path / "notes.txt"
    plain.write_text("keep")
    with pytest.raises(StoreInsecureError) as raised:
        opened(plain / LEDGER_NAME)
    assert "is not a folder; name a file in a folder" in raised.value.message
    with pytest.raises(StoreInsecureError):
        read_history(plain / LEDGER_NAME, since=0)
    # As a person sees it: one line, no traceback.
    result = cli("usage", "--history", "--ledger", str(plain / LEDGER_NAME))
    assert result.exit_code == 1
    assert result.stderr == f"error: {raised.value.message}\n"
    assert plain.read_text() == "keep"
    with pytest.raises(StoreError) as nul:
        opened(tmp_path / "a\0b" / LEDGER_NAME)
    assert "a character no file name can hold" in nul.value.message
    assert nul.value.code == "ledger_insecure"


def test_closing_a_folder_twice_never_closes_a_descriptor_it_no_longer_owns(
    tmp_path: Path,
) -> None:
    other = tmp_path / "other"
    other.write_text("mine")
    with private_folder(
        tmp_path, home=False, create=False, noun="ledger", code="ledger_insecure"
    ) as folder:
        assert folder is not None
        number = folder.fd
        folder.close()
        # Whatever opens next may get the same number: here, exactly that.
        opened_fd = os.open(other, os.O_RDONLY)
        if opened_fd != number:
            os.dup2(opened_fd, number)
            os.close(opened_fd)
    try:
        assert os.read(number, 4) == b"mine"
    finally:
        os.close(number)


# -- swapped between the check and the open (lstat, then open by the folder's descriptor) -----


def _when_opening(
    monkeypatch: pytest.MonkeyPatch, *, creating: bool, act: Callable[[], None]
) -> None:
    """Run ``act`` just before the ledger file is opened by the folder's descriptor: to be
    made (``creating``) or to be checked once it was found."""

    def maybe(name: object, flags: object, *_rest: object) -> None:
        if name == LEDGER_NAME and isinstance(flags, int) and bool(flags & os.O_CREAT) == creating:
            act()

    _races.before(monkeypatch, _private, "os", "open", maybe)


@pytest.mark.parametrize("swap", ["link", "other-file", "removed", "socket"])
def test_a_ledger_swapped_between_its_check_and_its_open_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: str
) -> None:
    path = _recorded(tmp_path / LEDGER_NAME)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    victim.chmod(0o600)
    aside = tmp_path / "aside"

    def swap_it() -> None:
        path.rename(aside)
        if swap == "link":
            path.symlink_to(victim)
        elif swap == "other-file":
            os.link(victim, path)
            victim.unlink()  # one name again, private, ours: only its identity differs
        elif swap == "socket":
            listener.bind(str(path))

    _when_opening(monkeypatch, creating=False, act=swap_it)
    with socket.socket(socket.AF_UNIX) as listener, pytest.raises(StoreInsecureError) as raised:
        opened(path)
    why = "is a symbolic link" if swap == "link" else "was replaced while it was checked"
    assert why in raised.value.message
    assert raised.value.code == "ledger_insecure"
    assert (path if swap == "other-file" else victim).read_text() == "keep"
    assert len(rows(aside)) == 1  # the real ledger, untouched


@pytest.mark.parametrize("made", ["file", "link"])
def test_a_ledger_made_by_another_start_in_the_same_instant_is_checked_as_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: str
) -> None:
    path = tmp_path / LEDGER_NAME
    victim = tmp_path / "victim"

    def other_start() -> None:
        if made == "file":
            path.touch(mode=0o600)
        else:
            path.symlink_to(victim)

    _when_opening(monkeypatch, creating=True, act=other_start)
    if made == "link":
        with pytest.raises(StoreInsecureError) as raised:
            opened(path)
        assert "symbolic link" in raised.value.message
        assert not victim.exists()  # nothing made at the link's target
        return
    inode = None
    with ledger_at(path) as ledger:
        inode = path.stat().st_ino
        ledger.end(end(begun(ledger, start())))
    assert path.stat().st_ino == inode
    assert [r["status"] for r in rows(path)] == [200]


# -- swapped between the check and SQLite's open by name ---------------------------------------


def _around_sqlite_open(
    monkeypatch: pytest.MonkeyPatch,
    path: Path,
    *,
    before: Callable[[], object] = lambda: None,
    after: Callable[[], object] = lambda: None,
) -> None:
    real = sqlite3.connect
    quoted = str(path)

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        ours = isinstance(database, str) and database.startswith("file:") and quoted in database
        if ours:
            before()
        db: sqlite3.Connection = real(database, *args, **kwargs)
        if ours:
            after()
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)


def test_a_ledger_removed_before_sqlite_opens_it_is_not_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _recorded(tmp_path / LEDGER_NAME)
    aside = tmp_path / "aside"
    _around_sqlite_open(monkeypatch, path, before=lambda: path.rename(aside))
    with pytest.raises(StoreError) as raised:
        opened(path)
    assert raised.value.code == "ledger_io" and raised.value.retryable
    assert "SQLITE_CANTOPEN" in raised.value.message
    assert not path.exists()  # SQLite opens with mode=rw: it never makes a file of its own


@pytest.mark.parametrize("when", ["replaced-before", "removed-after"])
def test_a_ledger_swapped_while_sqlite_opens_it_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    path = _recorded(tmp_path / LEDGER_NAME)
    planted = tmp_path / "planted"
    planted.write_bytes(b"not a ledger")
    planted.chmod(0o600)
    aside = tmp_path / "aside"

    def replace() -> None:
        path.rename(aside)
        planted.rename(path)

    if when == "replaced-before":
        _around_sqlite_open(monkeypatch, path, before=replace)
    else:
        _around_sqlite_open(monkeypatch, path, after=lambda: path.rename(aside))
    with pytest.raises(StoreInsecureError) as raised:
        opened(path)
    assert "was replaced while it was opened; try again" in raised.value.message
    if when == "replaced-before":
        assert path.read_bytes() == b"not a ledger"
    assert len(rows(aside)) == 1
