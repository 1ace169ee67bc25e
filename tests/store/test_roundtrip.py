"""Round trips through the real filesystem with the suite's in-memory keyring."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from copilot_host import LoginIdentity, NotLoggedInError, Secret, StoreError
from copilot_host.store import CredentialStore, Protection, RecordHeader
from tests.conftest import MemoryKeyring
from tests.store._support import FixedClock, canary_token


def test_empty_store_reads_as_logged_out(copilot_home: Path) -> None:
    store = CredentialStore()
    assert store.home == copilot_home
    assert store.record_path == copilot_home / "credential"
    assert store.availability() is None
    assert store.header() is None
    assert store.set_aside() == ()
    with pytest.raises(NotLoggedInError):
        store.load()
    assert store.delete().removed is False


def test_save_then_load_with_keyring(copilot_home: Path, memory_keyring: MemoryKeyring) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token).identity
    assert who.account == "octocat"
    assert len(who.login_id) == 32
    assert store.availability() == who
    header = store.header()
    assert isinstance(header, RecordHeader)
    assert header.identity == who
    assert header.version == 1
    assert header.protection == Protection("keyring", "MemoryKeyring")
    loaded_who, loaded_token = store.load()
    assert loaded_who == who
    assert loaded_token == token
    # Exactly one keyring entry, named by the login id, and no key file on disk.
    assert list(memory_keyring.items) == [("copilot-host", who.login_id)]
    assert sorted(os.listdir(copilot_home)) == ["credential", "credential.lock"]
    # A second store object (another process, in effect) reads the same login.
    assert CredentialStore(copilot_home).load()[0] == who


def test_files_are_private(copilot_home: Path) -> None:
    CredentialStore().save("octocat", canary_token(), key_file=True)
    for name in os.listdir(copilot_home):
        assert stat.S_IMODE(os.lstat(copilot_home / name).st_mode) == 0o600, name


def test_each_login_gets_a_fresh_id_and_drops_the_old_key(
    memory_keyring: MemoryKeyring,
) -> None:
    store = CredentialStore()
    first = store.save("octocat", canary_token()).identity
    second = store.save("octocat", canary_token()).identity
    assert first.login_id != second.login_id
    assert list(memory_keyring.items) == [("copilot-host", second.login_id)]


def test_key_file_mode_round_trip(copilot_home: Path, memory_keyring: MemoryKeyring) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("hubot", token, key_file=True).identity
    key_path = copilot_home / f"credential-{who.login_id}.key"
    header = store.header()
    assert header is not None
    assert header.protection == Protection("key-file", str(key_path))
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert store.load() == (who, token)
    assert memory_keyring.items == {}


def test_delete_removes_record_and_key_but_keeps_the_lock(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    assert store.delete().removed is True
    assert memory_keyring.items == {}
    assert os.listdir(copilot_home) == ["credential.lock"]
    assert store.availability() is None
    assert store.delete().removed is False
    store.save("octocat", canary_token(), key_file=True)
    assert store.delete().removed is True
    assert os.listdir(copilot_home) == ["credential.lock"]


def test_missing_home_is_created_private(tmp_path: Path) -> None:
    home = tmp_path / "a" / "b" / "home"
    store = CredentialStore(home)
    assert store.availability() is None
    assert not home.exists()  # reading never creates anything
    store.save("octocat", canary_token())
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_home_comes_from_the_environment_when_the_store_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COPILOT_HOST_HOME", str(tmp_path / "one"))
    store = CredentialStore()
    monkeypatch.setenv("COPILOT_HOST_HOME", str(tmp_path / "two"))
    assert store.home == tmp_path / "one"
    assert CredentialStore().home == tmp_path / "two"
    monkeypatch.delenv("COPILOT_HOST_HOME")
    assert CredentialStore().home.name == "copilot-host"


def test_lock_is_reentrant_within_a_thread(copilot_home: Path) -> None:
    store = CredentialStore()
    with store.lock():
        who = store.save("octocat", canary_token()).identity
        assert store.load()[0] == who
        assert store.delete().removed is True


@pytest.mark.parametrize("account", ["", "x" * 257, "evil\x1b[2Jname", "two\nlines", 42])
def test_bad_account_is_refused_before_anything_is_written(
    copilot_home: Path, account: object
) -> None:
    with pytest.raises(StoreError) as caught:
        CredentialStore().save(account, canary_token())  # type: ignore[arg-type]
    assert caught.value.code == "invalid_account"
    assert os.listdir(copilot_home) == []


@pytest.mark.parametrize("value", ["", "has space", "x" * 4097, "caf\u00e9"])
def test_bad_token_is_refused_without_echoing_it(copilot_home: Path, value: str) -> None:
    with pytest.raises(StoreError) as caught:
        CredentialStore().save("octocat", Secret(value))
    assert caught.value.code == "invalid_credential"
    if value:
        assert value not in str(caught.value)
    assert os.listdir(copilot_home) == []


def test_plain_string_token_is_refused(copilot_home: Path) -> None:
    with pytest.raises(StoreError):
        CredentialStore().save("octocat", "gho_plain")  # type: ignore[arg-type]


def test_identity_type() -> None:
    header = RecordHeader(1, "0" * 32, "octocat", 0.0, Protection("keyring", "Secret Service"))
    assert header.identity == LoginIdentity("0" * 32, "octocat")


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_save_returns_the_header_it_stored(copilot_home: Path, key_file: bool) -> None:
    """So a caller needs no second read to learn who logged in and how the key is kept."""
    store = CredentialStore(clock=FixedClock(1_700_000_123.0))
    saved = store.save("octocat", canary_token(), key_file=key_file)
    header = saved.header
    assert isinstance(header, RecordHeader)
    assert header == store.header()
    assert header.identity == saved.identity == store.availability()
    assert (saved.replaced, saved.set_aside) == (None, None)
    assert header.account == "octocat"
    assert header.created_at == 1_700_000_123.0
    assert header.protection.kind == ("key-file" if key_file else "keyring")
    if key_file:  # shown at the path the key is read from, as header() shows it
        assert header.protection.backend == str(copilot_home / f"credential-{header.login_id}.key")


@pytest.mark.parametrize("key_file", [False, True])
@pytest.mark.parametrize("failure", [OSError(5, "Input/output error"), KeyboardInterrupt()])
def test_a_failure_after_the_rename_keeps_the_new_record_usable(
    copilot_home: Path, monkeypatch: pytest.MonkeyPatch, key_file: bool, failure: BaseException
) -> None:
    """The folder's fsync comes after the new record took the old one's place: failing
    there (or a signal landing there) must not take the new record's key away with it."""

    store = CredentialStore(copilot_home, key_file=key_file)
    token = canary_token()
    real_fsync = os.fsync
    replaced: list[bool] = []
    real_replace = os.replace

    def replace(*args: object, **kwargs: object) -> None:
        real_replace(*args, **kwargs)  # type: ignore[arg-type]
        if args[1] == "credential":  # the record itself, not its key file before it
            replaced.append(True)

    def fsync(fd: int) -> None:
        if replaced:
            raise failure
        real_fsync(fd)

    monkeypatch.setattr(os, "replace", replace)  # the os module _atomic calls
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises((StoreError, KeyboardInterrupt)):
        store.save("octocat", token)
    monkeypatch.undo()
    identity, loaded = store.load()
    assert identity.account == "octocat"
    assert loaded == token
