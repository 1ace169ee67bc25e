"""The ledger file is made and opened as the store's own files are: never through a link,
never a FIFO or a device, never another user's file or a second name, always 0600."""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from copilot_host import StoreError, StoreInsecureError
from copilot_host.gateway._ledger import (
    LEDGER_NAME,
    Admitted,
    LedgerOff,
    ledger_path,
    open_ledger,
    read_history,
)

from ._support import begun, end, ledger_at, opened, rows, start


def _refused(path: Path) -> StoreInsecureError:
    with pytest.raises(StoreInsecureError) as raised:
        opened(path)
    assert raised.value.code == "ledger_insecure"
    with pytest.raises(StoreInsecureError):
        read_history(path, since=0)
    return raised.value


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_default_ledger_is_in_the_store_folder_made_0600_with_its_companions(
    copilot_home: Path,
) -> None:
    old = os.umask(0)  # the most permissive umask: the modes are set, not left to it
    try:
        path = ledger_path(option=None, no_ledger=False, environ=os.environ)
        assert path == copilot_home / LEDGER_NAME
        with ledger_at(path) as ledger:
            ledger.end(end(begun(ledger, start())))
            ledger.flush()
            found = sorted(p.name for p in copilot_home.iterdir())
            assert found == [
                LEDGER_NAME,
                f"{LEDGER_NAME}-runs",
                f"{LEDGER_NAME}-shm",
                f"{LEDGER_NAME}-wal",
            ]
            for name in (LEDGER_NAME, f"{LEDGER_NAME}-wal", f"{LEDGER_NAME}-shm"):
                assert _mode(copilot_home / name) == 0o600, name
            runs = copilot_home / f"{LEDGER_NAME}-runs"
            assert _mode(runs) == 0o700
            (lock,) = runs.iterdir()
            assert lock.name == f"{ledger.run_id}.lock"
            assert _mode(lock) == 0o600
        # Closed: the run's lock file goes with it.
        assert list((copilot_home / f"{LEDGER_NAME}-runs").iterdir()) == []
    finally:
        os.umask(old)


def test_a_home_folder_others_can_read_is_refused_as_the_store_refuses_it(
    copilot_home: Path,
) -> None:
    copilot_home.chmod(0o755)
    with pytest.raises(StoreInsecureError) as raised:
        opened(copilot_home / LEDGER_NAME)
    assert "chmod 700" in raised.value.message
    assert not (copilot_home / LEDGER_NAME).exists()


def test_a_symbolic_link_is_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.sqlite3"
    target.write_bytes(b"precious")
    target.chmod(0o600)
    path = tmp_path / "ledger.sqlite3"
    path.symlink_to(target)
    assert "symbolic link" in _refused(path).message
    assert target.read_bytes() == b"precious"
    # A dangling link is not made into a file at its target either.
    target.unlink()
    _refused(path)
    assert not target.exists()


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    os.mkfifo(path, 0o600)
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            opened(path)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "opening a FIFO as the ledger blocked"
    assert isinstance(outcome[0], StoreInsecureError)
    assert "not a regular file" in outcome[0].message
    _refused(path)


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreInsecureError):
        opened(Path("/dev/null"))  # /dev is root's and writable by no one else


def test_a_second_name_of_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path):
        pass
    os.link(path, tmp_path / "other-name")
    assert "2 names" in _refused(path).message


def test_a_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path):
        pass
    path.chmod(0o644)
    assert "chmod 600" in _refused(path).message


def test_another_users_file_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root, which can give a file to another user")
        pytest.skip("only root can give a file to another user")
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path):
        pass
    os.chown(path, 65534, 65534)
    message = _refused(path).message
    assert "owned by uid 65534" in message


def test_a_link_in_place_of_a_companion_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path):
        pass
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (tmp_path / "ledger.sqlite3-wal").symlink_to(victim)
    _refused(path)
    assert victim.read_bytes() == b"keep"


def test_a_folder_other_users_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: anyone could plant the -wal file there
    with pytest.raises(StoreInsecureError) as raised:
        opened(shared / "ledger.sqlite3")
    assert "writable by other users" in raised.value.message
    assert list(shared.iterdir()) == []


def test_a_file_in_a_folder_of_ones_own_is_fine_and_a_missing_folder_is_said(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    with ledger_at(mine / "spend.db") as ledger:
        ledger.end(end(begun(ledger, start())))
    assert len(rows(mine / "spend.db")) == 1
    with pytest.raises(StoreError) as raised:
        opened(tmp_path / "missing" / "spend.db")
    assert raised.value.code == "ledger_io"
    assert "does not exist" in raised.value.message


def test_without_wal_the_ledger_is_off_with_one_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's no-locking VFS cannot keep a WAL (as on a file system without shared
    memory): the ledger is off, said once, and nothing is recorded."""
    from copilot_host.gateway._ledger import _file

    monkeypatch.setattr(_file, "_URI_OPTIONS", "mode=rw&vfs=unix-none")
    found = open_ledger(tmp_path / "ledger.sqlite3")
    assert isinstance(found, LedgerOff)
    assert found.reason is not None and "WAL" in found.reason
    assert found.begin_wait(start()) == Admitted(None)


def test_without_sqlite3_in_python_the_ledger_is_off_with_one_reason(tmp_path: Path) -> None:
    import subprocess

    code = (
        "import sys; sys.modules['sqlite3'] = None\n"
        "from pathlib import Path\n"
        "from copilot_host.gateway._ledger import open_ledger\n"
        f"found = open_ledger(Path({str(tmp_path / 'ledger.sqlite3')!r}))\n"
        "print(type(found).__name__, found.reason)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("LedgerOff this Python was built without sqlite3")
    assert not (tmp_path / "ledger.sqlite3").exists()
