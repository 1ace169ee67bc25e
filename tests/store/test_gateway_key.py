"""The gateway's key file as a store operation: atomic, 0600, one gateway per port."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

import pytest

from copilot_host import StoreError, StoreInsecureError, StoreLockedError
from copilot_host.store import CredentialStore, GatewayKey

KEY = "cph_" + "k" * 43


def _store(home: Path) -> CredentialStore:
    return CredentialStore(home)


def test_the_key_file_is_private_while_served_and_gone_after(copilot_home: Path) -> None:
    with _store(copilot_home).gateway_key(8765, KEY) as key_file:
        assert isinstance(key_file, GatewayKey)
        assert key_file.path == copilot_home / "gateway-8765.key"
        assert key_file.path.read_text() == KEY + "\n"
        assert stat.S_IMODE(key_file.path.stat().st_mode) == 0o600
        assert key_file.quoted == str(key_file.path)  # nothing special to a shell here
    assert not key_file.path.exists()
    assert not list(copilot_home.glob("gateway-*"))  # the lock file goes too


def test_a_second_gateway_on_the_same_port_is_refused_and_changes_nothing(
    copilot_home: Path,
) -> None:
    store = _store(copilot_home)
    with store.gateway_key(8765, KEY) as key_file:
        with pytest.raises(StoreLockedError) as caught, store.gateway_key(8765, "cph_other"):
            pass
        assert caught.value.code == "gateway_running"
        assert key_file.path.read_text() == KEY + "\n"
        # Another port is another gateway.
        with store.gateway_key(8766, "cph_other") as other:
            assert other.path.read_text() == "cph_other\n"
    assert not key_file.path.exists()


def test_the_lock_is_not_the_key_file(copilot_home: Path) -> None:
    """A lock held on the key file guards nothing: the atomic write renames a new file
    over it. The port's lock is a file of its own."""
    held = copilot_home / "gateway-8765.key"
    held.write_text("cph_stale\n")
    with held.open("rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        with _store(copilot_home).gateway_key(8765, KEY):
            assert held.read_text() == KEY + "\n"
    lock = copilot_home / "gateway-8765.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a running gateway holds
        with pytest.raises(StoreLockedError), _store(copilot_home).gateway_key(8765, KEY):
            pass
    finally:
        os.close(fd)


def test_a_key_file_left_by_a_gateway_that_died_is_replaced(copilot_home: Path) -> None:
    stale = copilot_home / "gateway-8765.key"
    stale.write_text("cph_from-a-gateway-that-died\n")
    stale.chmod(0o644)
    with _store(copilot_home).gateway_key(8765, "cph_new"):
        assert stale.read_text() == "cph_new\n"
        assert stat.S_IMODE(stale.stat().st_mode) == 0o600
    assert not stale.exists()


def test_a_key_file_someone_replaced_meanwhile_is_left_alone(copilot_home: Path) -> None:
    with _store(copilot_home).gateway_key(8765, "cph_ours") as key_file:
        key_file.path.unlink()
        key_file.path.write_text("someone else's\n")
    assert key_file.path.read_text() == "someone else's\n"


def test_a_symlink_at_the_name_is_replaced_never_followed(
    copilot_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched\n")
    (copilot_home / "gateway-8765.key").symlink_to(target)
    with _store(copilot_home).gateway_key(8765, KEY) as key_file:
        assert not key_file.path.is_symlink()
        assert key_file.path.read_text() == KEY + "\n"
    assert target.read_text() == "untouched\n"


def test_a_store_folder_others_can_reach_gets_no_key_file(copilot_home: Path) -> None:
    copilot_home.chmod(0o755)
    with pytest.raises(StoreInsecureError) as caught, _store(copilot_home).gateway_key(8765, KEY):
        pass
    assert f"chmod 700 {copilot_home}" in caught.value.message
    assert not (copilot_home / "gateway-8765.key").exists()


def test_a_key_file_that_cannot_be_written_is_a_typed_failure_naming_it(
    copilot_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(StoreError) as caught, _store(copilot_home).gateway_key(8765, KEY):
        pass
    assert caught.value.code == "key_file_io"
    assert caught.value.message == (
        f"could not write the key file {copilot_home / 'gateway-8765.key'}: "
        f"{os.strerror(errno.ENOSPC)}"
    )
    monkeypatch.undo()
    assert not list(copilot_home.glob("gateway-*"))  # no copy of the key stays


@pytest.mark.parametrize("port", [0, 65536, -1])
def test_a_port_out_of_range_is_refused(copilot_home: Path, port: int) -> None:
    with pytest.raises(ValueError, match="port"):
        _store(copilot_home).gateway_key(port, KEY)


def test_a_copy_of_the_key_opened_meanwhile_reads_nothing_after(copilot_home: Path) -> None:
    with _store(copilot_home).gateway_key(8765, KEY) as key_file:
        held = key_file.path.open("rb")
    try:
        assert held.read() == b""
    finally:
        held.close()
