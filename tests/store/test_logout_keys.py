"""No data key outlives its record: a record set aside loses its key, a logout removes
every key the store knows of (those of records set aside included), and names any entry
it could not remove."""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path
from typing import Any

import keyring
import keyring.backend
import pytest

from copilot_host import KeyringUnavailableError, StoreCorruptError
from copilot_host.store import CredentialStore
from copilot_host.store._record import open_sealed, parse
from tests.conftest import MemoryKeyring
from tests.store._keyrings import LockedKeyring
from tests.store._support import canary_token

SERVICE = "copilot-host"


class _Keyrings:
    """The keyring a test runs against: the suite's in-memory one, or a real Secret
    Service (a private gnome-keyring)."""

    def __init__(self, backend: keyring.backend.KeyringBackend) -> None:
        self.backend = backend

    def has(self, login_id: str) -> bool:
        return self.backend.get_password(SERVICE, login_id) is not None


@pytest.fixture(params=["memory", "secret-service"])
def keys(request: pytest.FixtureRequest, memory_keyring: MemoryKeyring) -> _Keyrings:
    if request.param == "memory":
        return _Keyrings(memory_keyring)
    backend: Any = request.getfixturevalue("secret_service")
    return _Keyrings(backend)


def _break_tag(store: CredentialStore) -> bytes:
    data = bytearray(store.record_path.read_bytes())
    data[-1] ^= 1  # the last byte of the GCM tag: flipped back, it decrypts again
    store.record_path.write_bytes(bytes(data))
    return bytes(data)


def _aside_by_an_earlier_version(store: CredentialStore) -> Path:
    """What 0.1 left: the record renamed aside, its key still in place."""
    aside = store.home / "credential.damaged-20250101T000000Z"
    os.rename(store.record_path, aside)
    return aside


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_a_record_set_aside_loses_its_key_at_once(
    copilot_home: Path, keys: _Keyrings, key_file: bool
) -> None:
    store = CredentialStore()
    token = canary_token()
    old = store.save("octocat", token, key_file=key_file).identity
    damaged = _break_tag(store)
    with pytest.raises(StoreCorruptError, match="integrity check"):
        store.load()
    (aside,) = store.set_aside()
    assert aside.read_bytes() == damaged  # the record is kept, as every damaged one...
    assert not keys.has(old.login_id)  # ...but nothing left can decrypt it
    assert not (copilot_home / f"credential-{old.login_id}.key").exists()


def test_a_set_aside_whose_key_is_gone_never_fails_a_later_logout(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    """Its key was removed when it was set aside, and its name says so: a logout on a day
    the keyring is locked (or another one, or none) has nothing to ask it, and logging out
    stays safe to repeat."""
    store = CredentialStore()
    store.save("octocat", canary_token())
    _break_tag(store)
    with pytest.raises(StoreCorruptError):
        store.load()
    (aside,) = store.set_aside()
    assert aside.name.endswith(".key-removed")
    keyring.set_keyring(LockedKeyring())
    assert store.delete().removed is False  # nothing to remove, and no error
    assert store.delete().removed is False
    assert store.set_aside() == (aside,)


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_logout_removes_the_keys_of_records_an_earlier_version_set_aside(
    copilot_home: Path, keys: _Keyrings, key_file: bool
) -> None:
    store = CredentialStore()
    token = canary_token()
    old = store.save("octocat", token, key_file=key_file).identity
    aside = _aside_by_an_earlier_version(store)
    key_path = copilot_home / f"credential-{old.login_id}.key"
    assert keys.has(old.login_id) or key_path.exists()
    new = store.save("octocat", canary_token()).identity  # a new login...
    assert store.delete().removed is True  # ...then a logout
    assert not keys.has(old.login_id)
    assert not keys.has(new.login_id)
    assert not key_path.exists()
    assert aside.exists()  # kept, but it can never be decrypted again
    assert sorted(os.listdir(copilot_home)) == [
        "credential.damaged-20250101T000000Z",
        "credential.lock",
    ]


def test_the_set_aside_record_and_its_old_key_really_decrypt_without_the_fix(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    """Why it matters: the pair a logout used to leave behind still yields the token."""
    store = CredentialStore()
    token = canary_token()
    old = store.save("octocat", token).identity
    aside = _aside_by_an_earlier_version(store)
    key = base64.b64decode(memory_keyring.items[(SERVICE, old.login_id)])
    assert open_sealed(parse(aside.read_bytes()), key) == token
    store.delete()
    assert (SERVICE, old.login_id) not in memory_keyring.items


def test_logout_names_every_entry_it_could_not_remove(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    old = store.save("octocat", canary_token()).identity
    _aside_by_an_earlier_version(store)
    current = store.save("hubot", canary_token()).identity
    keyring.set_keyring(LockedKeyring())
    with pytest.raises(KeyringUnavailableError) as caught:
        store.delete()
    message = caught.value.message
    assert caught.value.code == "keyring_entries_left"
    assert caught.value.retryable is False
    for who in (old, current):
        assert f'service "copilot-host", user "{who.login_id}"' in message
        assert f"keyring del copilot-host {who.login_id}" in message
    assert "in MemoryKeyring (the keyring is locked)" in message
    assert "the credential record is removed" in message
    # Everything else is done: the record is gone, the record set aside is kept.
    assert store.header() is None
    assert len(store.set_aside()) == 1
    # The entries really are still there: the message told the truth.
    assert set(memory_keyring.items) == {(SERVICE, old.login_id), (SERVICE, current.login_id)}
    keyring.set_keyring(memory_keyring)
    assert store.delete().removed is True  # the record set aside still names its key
    assert set(memory_keyring.items) == {(SERVICE, current.login_id)}


def test_a_record_set_aside_in_a_copied_folder_is_harmless_after_logout(
    copilot_home: Path, tmp_path: Path, keys: _Keyrings
) -> None:
    """A backup of the folder taken while a damaged record sat in it: after logout the
    keyring no longer holds anything that opens it."""
    store = CredentialStore()
    store.save("octocat", canary_token())
    _break_tag(store)
    with pytest.raises(StoreCorruptError):
        store.load()
    backup = tmp_path / "backup"
    shutil.copytree(copilot_home, backup)
    store.save("octocat", canary_token())
    store.delete()
    for path in backup.iterdir():
        if path.name.startswith("credential.damaged-"):
            login_id = parse(path.read_bytes()).header.login_id
            assert not keys.has(login_id)


class OtherKeyring(MemoryKeyring):
    """Another recommended backend, as another session or PYTHON_KEYRING_BACKEND gives."""


def test_logout_names_a_key_left_in_the_keyring_the_record_was_saved_in(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    who = store.save("octocat", canary_token()).identity
    keyring.set_keyring(OtherKeyring())
    with pytest.raises(KeyringUnavailableError) as caught:
        store.delete()
    assert caught.value.code == "keyring_entries_left"
    assert (
        f'service "copilot-host", user "{who.login_id}" in MemoryKeyring '
        "(the keyring in use now is OtherKeyring)"
    ) in caught.value.message
    assert store.header() is None
    assert (SERVICE, who.login_id) in memory_keyring.items  # the message told the truth


def test_logout_with_only_records_set_aside_says_what_it_removed(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    who = store.save("octocat", canary_token()).identity
    _aside_by_an_earlier_version(store)
    keyring.set_keyring(LockedKeyring())
    with pytest.raises(KeyringUnavailableError) as caught:
        store.delete()
    assert "Logged out locally (nothing else is left)" in caught.value.message
    assert f'user "{who.login_id}"' in caught.value.message


def test_a_new_login_under_another_keyring_names_the_old_key_it_cannot_reach(
    copilot_home: Path, memory_keyring: MemoryKeyring, caplog: pytest.LogCaptureFixture
) -> None:
    store = CredentialStore()
    old = store.save("octocat", canary_token()).identity
    keyring.set_keyring(OtherKeyring())
    store.save("octocat", canary_token())  # a new login must not fail for the old key...
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    # ...but the key it could not reach is named, with the keyring that holds it.
    assert any(
        f'user "{old.login_id}" in MemoryKeyring' in w and "in use now is OtherKeyring" in w
        for w in warnings
    )


def test_a_key_file_that_cannot_be_removed_does_not_hide_the_damage(
    copilot_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CredentialStore()
    who = store.save("octocat", canary_token(), key_file=True).identity
    _break_tag(store)
    real_unlink = os.unlink

    def refuse_key_files(path: object, *args: object, **kwargs: object) -> None:
        if str(path).endswith(".key"):
            raise PermissionError(13, "Permission denied")
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", refuse_key_files)
    with pytest.raises(StoreCorruptError, match="integrity check"):
        store.load()
    monkeypatch.undo()
    assert len(store.set_aside()) == 1
    store.delete()  # the sweep takes the key file along
    assert not (copilot_home / f"credential-{who.login_id}.key").exists()
