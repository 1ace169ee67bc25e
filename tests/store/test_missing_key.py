"""A key that is not where the record says is no damage: the record is kept, and the
error names the keyring the record was saved with and what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keyring
import pytest

from copilot_host import KeyringUnavailableError, StoreError
from copilot_host.store import CredentialStore
from tests.conftest import MemoryKeyring
from tests.store._support import canary_token


class OtherKeyring(MemoryKeyring):
    """Another recommended backend, as another session or PYTHON_KEYRING_BACKEND gives."""


def _assert_kept(store: CredentialStore, record: bytes) -> None:
    assert store.set_aside() == ()
    assert store.record_path.read_bytes() == record


def test_another_keyring_in_use_keeps_the_record_and_names_the_one_that_holds_the_key(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token).identity
    record = store.record_path.read_bytes()
    keyring.set_keyring(OtherKeyring())
    for _ in range(2):  # and again: nothing was set aside the first time
        with pytest.raises(KeyringUnavailableError) as caught:
            store.load()
        assert caught.value.code == "keyring_entry_missing"
        assert caught.value.retryable is False
        message = caught.value.message
        assert "saved in the OS keyring (MemoryKeyring)" in message
        assert "the keyring in use now (OtherKeyring) has no entry" in message
        assert "PYTHON_KEYRING_BACKEND" in message
        assert "log in again" in message
        _assert_kept(store, record)
    assert store.availability() == who  # status still shows the login
    keyring.set_keyring(memory_keyring)
    assert store.load() == (who, token)


def test_a_real_secret_service_record_read_under_another_keyring_is_kept(
    copilot_home: Path, secret_service: Any, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token).identity
    header = store.header()
    assert header is not None
    record = store.record_path.read_bytes()
    keyring.set_keyring(memory_keyring)  # what a session without D-Bus would find
    with pytest.raises(KeyringUnavailableError) as caught:
        store.load()
    assert caught.value.code == "keyring_entry_missing"
    # The keyring as `copilot-host status` shows it: "OS keyring (Secret Service)".
    assert f"OS keyring ({header.protection.backend})" in caught.value.message
    assert header.protection.backend == "Secret Service"
    _assert_kept(store, record)
    keyring.set_keyring(secret_service)
    assert store.load() == (who, token)
    assert store.delete().removed is True


def test_an_entry_removed_from_the_same_keyring_keeps_the_record(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    who = store.save("octocat", canary_token()).identity
    record = store.record_path.read_bytes()
    del memory_keyring.items[("copilot-host", who.login_id)]
    with pytest.raises(KeyringUnavailableError) as caught:
        store.load()
    assert caught.value.code == "keyring_entry_missing"
    assert "The OS keyring (MemoryKeyring) has no entry" in caught.value.message
    assert f'user "{who.login_id}"' in caught.value.message
    _assert_kept(store, record)
    # Logging in again replaces it, as the message says.
    store.save("octocat", canary_token())
    assert store.set_aside() == ()


def test_a_missing_key_file_keeps_the_record_and_names_the_file(copilot_home: Path) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token, key_file=True).identity
    record = store.record_path.read_bytes()
    key_path = copilot_home / f"credential-{who.login_id}.key"
    key = key_path.read_bytes()
    key_path.unlink()
    with pytest.raises(StoreError) as caught:
        store.load()
    assert caught.value.code == "key_file_missing"
    assert f"The key file {key_path} of the stored login is missing" in str(caught.value)
    _assert_kept(store, record)
    key_path.write_bytes(key)  # back from a backup
    key_path.chmod(0o600)
    assert store.load() == (who, token)
