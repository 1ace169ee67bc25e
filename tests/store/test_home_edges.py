"""The edges of the store folder: unreadable records, unusable paths, empty logouts, a
full disk. Each is a typed error or a clean success, never a raw OSError or a dead end."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from copilot_host import StoreError, StoreInsecureError
from copilot_host.store import CredentialStore
from tests.conftest import MemoryKeyring
from tests.store._support import canary_token

GARBAGE = b"not a copilot-host record"


def _plant(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# -- an unparseable record -------------------------------------------------------------


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_delete_sets_an_unparseable_record_aside_and_counts_it_removed(
    copilot_home: Path, key_file: bool
) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token(), key_file=key_file)
    _plant(store.record_path, GARBAGE)
    assert store.delete().removed is True
    assert not store.record_path.exists()
    # Kept aside (the store never silently deletes a damaged record), and nothing else
    # of that login is left behind.
    assert [p.read_bytes() for p in store.set_aside()] == [GARBAGE]
    assert not list(copilot_home.glob("*.key"))
    assert store.header() is None
    assert store.delete().removed is False


# -- a path that cannot be the store folder --------------------------------------------

Action = Callable[[CredentialStore], object]
ACTIONS: dict[str, Action] = {
    "availability": lambda s: s.availability(),
    "header": lambda s: s.header(),
    "load": lambda s: s.load(),
    "set_aside": lambda s: s.set_aside(),
    "preflight": lambda s: s.preflight(key_file=True),
    "save": lambda s: s.save("octocat", canary_token(), key_file=True),
    "delete": lambda s: s.delete(),
}


@pytest.mark.parametrize("action", list(ACTIONS))
@pytest.mark.parametrize("below", [False, True], ids=["home-is-a-file", "parent-is-a-file"])
def test_a_file_in_the_way_is_named_the_same_way_by_every_call(
    tmp_path: Path, action: str, below: bool
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    home = blocker / "home" if below else blocker
    with pytest.raises(StoreInsecureError) as caught:
        ACTIONS[action](CredentialStore(home))
    message = str(caught.value)
    assert str(blocker) in message
    assert "not a folder" in message or "not a regular folder" in message
    assert "COPILOT_HOST_HOME" in message
    assert blocker.read_text() == "not a folder"


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_symlink_loop_in_the_path_is_a_typed_store_error(tmp_path: Path, action: str) -> None:
    (tmp_path / "loop").symlink_to("loop")
    store = CredentialStore(tmp_path / "loop" / "home")
    with pytest.raises(StoreError) as caught:
        ACTIONS[action](store)
    assert caught.value.code in ("store_io", "store_insecure"), caught.value.code


def test_availability_is_still_logged_out_when_the_folder_is_missing(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "missing" / "home")
    assert store.availability() is None
    assert not (tmp_path / "missing").exists()


# -- preflight proves the folder can be made --------------------------------------------


def test_preflight_fails_when_the_folder_cannot_be_created() -> None:
    # /proc refuses new folders even to root, where chmod would not stop anyone.
    home = Path("/proc") / f"copilot-host-test-{secrets.token_hex(6)}"
    store = CredentialStore(home)
    for key_file in (True, False):
        with pytest.raises(StoreError) as caught:
            store.preflight(key_file=key_file)
        assert caught.value.code == "store_io"
        assert f"Could not create the credential store folder {home}" in str(caught.value)
        assert "COPILOT_HOST_HOME" in str(caught.value)


def test_preflight_creates_a_missing_folder_private_and_leaves_it_empty(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    home = tmp_path / "a" / "home"
    CredentialStore(home).preflight()
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert os.listdir(home) == []  # the probe file is gone
    assert memory_keyring.items == {}


# -- logging out with nothing stored -----------------------------------------------------


def test_delete_with_no_folder_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "missing" / "home"
    assert CredentialStore(home).delete().removed is False
    assert not (tmp_path / "missing").exists()


def test_delete_in_an_empty_folder_creates_no_lock_file(copilot_home: Path) -> None:
    assert CredentialStore().delete().removed is False
    assert os.listdir(copilot_home) == []


# -- a full disk -----------------------------------------------------------------------


def test_logout_on_a_full_disk_still_removes_the_login(
    copilot_home: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())

    def no_space(*_args: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    # The lock writes (and clears) its holder's pid; only that writes to the disk.
    monkeypatch.setattr(os, "pwrite", no_space)
    monkeypatch.setattr(os, "ftruncate", no_space)
    assert store.delete().removed is True
    monkeypatch.undo()
    assert store.header() is None
    assert memory_keyring.items == {}
    assert os.listdir(copilot_home) == ["credential.lock"]
