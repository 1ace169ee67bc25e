"""Permission and path attacks: the store refuses, says how to fix it, and changes nothing."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from copilot_host import StoreError, StoreInsecureError
from copilot_host.store import CredentialStore
from tests.conftest import MemoryKeyring
from tests.store._support import canary_token

FOREIGN_UID = 54321

Action = Callable[[CredentialStore], object]
ACTIONS: dict[str, Action] = {
    "load": lambda s: s.load(),
    "header": lambda s: s.header(),
    "availability": lambda s: s.availability(),
    "save": lambda s: s.save("octocat", canary_token()),
    "delete": lambda s: s.delete(),
    # These two never read the record: they refuse a bad folder, not a bad record.
    "set_aside": lambda s: s.set_aside(),
    "preflight": lambda s: s.preflight(),
}
RECORD_ACTIONS = ("load", "header", "availability", "save", "delete")


def _snapshot(root: Path) -> dict[str, tuple[int, int, bytes | str]]:
    found: dict[str, tuple[int, int, bytes | str]] = {}
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            st = path.lstat()
            content: bytes | str = (
                os.readlink(path)
                if path.is_symlink()
                else path.read_bytes()
                if path.is_file()
                else b""
            )
            found[str(path.relative_to(root))] = (st.st_mode, st.st_uid, content)
    return found


def _assert_refused(
    store: CredentialStore,
    root: Path,
    memory_keyring: MemoryKeyring,
    hint: str,
    actions: tuple[str, ...] = RECORD_ACTIONS,
) -> None:
    before = _snapshot(root)
    keys_before = dict(memory_keyring.items)
    for name in actions:
        action = ACTIONS[name]
        with pytest.raises(StoreInsecureError) as caught:
            action(store)
        assert hint in str(caught.value), (name, str(caught.value))
        assert caught.value.code == "store_insecure"
    assert _snapshot(root) == before, "a refused store was changed"
    assert memory_keyring.items == keys_before, "a key was stored for a refused store"


@pytest.fixture
def saved(tmp_path: Path) -> CredentialStore:
    home = tmp_path / "home"
    store = CredentialStore(home)
    store.save("octocat", canary_token(), key_file=True)
    return store


def test_group_readable_record_is_refused(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    saved.record_path.chmod(0o644)
    _assert_refused(saved, tmp_path, memory_keyring, "chmod 600")


def test_world_accessible_folder_is_refused_and_not_narrowed_or_widened(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    saved.home.chmod(0o755)
    _assert_refused(saved, tmp_path, memory_keyring, "chmod 700", tuple(ACTIONS))
    assert stat.S_IMODE(saved.home.stat().st_mode) == 0o755


def test_preexisting_open_folder_is_refused_before_anything_is_written(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    store = CredentialStore(home)
    # availability() included: with no record it looks at the folder, and an open folder
    # is an error to fix, never "logged out".
    _assert_refused(store, tmp_path, memory_keyring, "mode 0755", tuple(ACTIONS))
    assert os.listdir(home) == []


def test_symlinked_record_is_refused(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    elsewhere = tmp_path / "elsewhere"
    saved.record_path.rename(elsewhere)
    saved.record_path.symlink_to(elsewhere)
    _assert_refused(saved, tmp_path, memory_keyring, "symbolic link")


def test_symlinked_record_pointing_at_nothing_is_refused(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    saved.record_path.unlink()
    saved.record_path.symlink_to(tmp_path / "planted")
    _assert_refused(saved, tmp_path, memory_keyring, "symbolic link")
    assert not (tmp_path / "planted").exists()


def test_symlinked_folder_is_refused(tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    real = tmp_path / "real"
    CredentialStore(real).save("octocat", canary_token(), key_file=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    _assert_refused(
        CredentialStore(link), tmp_path, memory_keyring, "symbolic link", tuple(ACTIONS)
    )


def test_symlinked_key_file_is_refused(saved: CredentialStore, tmp_path: Path) -> None:
    header = saved.header()
    assert header is not None
    key_path = Path(header.protection.backend)
    moved = tmp_path / "key-elsewhere"
    key_path.rename(moved)
    key_path.symlink_to(moved)
    with pytest.raises(StoreInsecureError, match="symbolic link"):
        saved.load()
    assert saved.record_path.exists()


def test_symlinked_lock_file_is_refused(saved: CredentialStore, tmp_path: Path) -> None:
    lock = saved.home / "credential.lock"
    lock.unlink()
    lock.symlink_to(tmp_path / "planted-lock")
    with pytest.raises(StoreInsecureError, match="symbolic link"):
        saved.save("octocat", canary_token())
    assert not (tmp_path / "planted-lock").exists()


def test_a_file_where_the_folder_should_be_is_a_typed_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    with pytest.raises(StoreError):
        CredentialStore(home).save("octocat", canary_token())
    assert home.read_text() == "not a folder"


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


@needs_root
def test_foreign_owned_folder_is_refused(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    os.chown(saved.home, FOREIGN_UID, FOREIGN_UID)
    _assert_refused(saved, tmp_path, memory_keyring, f"owned by uid {FOREIGN_UID}", tuple(ACTIONS))


@needs_root
def test_foreign_owned_record_is_refused(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    os.chown(saved.record_path, FOREIGN_UID, FOREIGN_UID)
    _assert_refused(saved, tmp_path, memory_keyring, f"owned by uid {FOREIGN_UID}")


def test_new_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        store = CredentialStore(tmp_path / "home")
        store.save("octocat", canary_token(), key_file=True)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(store.home.stat().st_mode) == 0o700
    for name in os.listdir(store.home):
        assert stat.S_IMODE((store.home / name).stat().st_mode) == 0o600, name


def test_a_hard_linked_record_is_refused(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    """Another name for the record (anywhere the user can write) is refused: what is read
    there is not only the store's, and what is written or emptied shows under both."""
    os.link(saved.record_path, tmp_path / "second-name")
    _assert_refused(saved, tmp_path, memory_keyring, "hard links")


def test_a_hard_linked_key_file_or_lock_file_is_refused(
    saved: CredentialStore, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    home = saved.record_path.parent
    key_file = next(home.glob("credential-*.key"))
    os.link(key_file, tmp_path / "second-key-name")
    with pytest.raises(StoreInsecureError, match="hard links"):
        saved.load()
    (tmp_path / "second-key-name").unlink()
    assert saved.load() is not None
    lock = next(p for p in home.iterdir() if p.name.endswith(".lock"))
    os.link(lock, tmp_path / "second-lock-name")
    with pytest.raises(StoreInsecureError, match="hard links"):
        saved.save("octocat", canary_token())


def test_a_record_removed_after_it_was_opened_is_no_second_name(saved: CredentialStore) -> None:
    """A record another process's logout (or a save's rename) unlinks while this one has
    it open has no name at all: that is a race to read as the removal, never as a planted
    second name (16 processes logging in and out at once met it)."""
    from copilot_host.store._paths import check_owned_private

    fd = os.open(saved.record_path, os.O_RDONLY)
    try:
        os.unlink(saved.record_path)
        removed = os.fstat(fd)
        assert removed.st_nlink == 0
        check_owned_private(removed, saved.record_path, "file")  # no StoreInsecureError
    finally:
        os.close(fd)
