"""Keyring backends that fail, are locked, hang, or are not recommended."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import keyring
import keyring.backend
import keyring.backends.fail
import keyring.backends.null
import keyring.errors
import pytest

from copilot_host import KeyringUnavailableError
from copilot_host.store import CredentialStore
from tests.conftest import MemoryKeyring
from tests.store._keyrings import (
    ExplodingKeyring,
    HangingKeyring,
    LockedKeyring,
    LowPriorityKeyring,
    keyring_workers,
)
from tests.store._support import canary_token, files_under


def _assert_nothing_saved(home: Path) -> None:
    """No record and no key: only the lock file a save takes before it asks the keyring
    may exist (taking the lock is not state)."""
    assert set(os.listdir(home)) <= {"credential.lock"}


@pytest.mark.parametrize(
    "backend",
    [keyring.backends.fail.Keyring(), keyring.backends.null.Keyring(), LowPriorityKeyring()],
    ids=["fail", "null", "not-recommended"],
)
def test_no_usable_keyring_writes_nothing_and_names_the_key_file_choice(
    copilot_home: Path, backend: keyring.backend.KeyringBackend
) -> None:
    keyring.set_keyring(backend)
    with pytest.raises(KeyringUnavailableError) as caught:
        CredentialStore().save("octocat", canary_token())
    assert caught.value.code == "keyring_unavailable"
    assert "--key-file" in str(caught.value)
    assert "nothing was saved" in str(caught.value)
    _assert_nothing_saved(copilot_home)
    # The explicit choice works without any keyring.
    store = CredentialStore()
    who = store.save("octocat", canary_token(), key_file=True).identity
    assert store.load()[0] == who
    assert store.delete().removed is True


def test_locked_keyring_is_a_clear_error_and_nothing_is_written(copilot_home: Path) -> None:
    keyring.set_keyring(LockedKeyring())
    with pytest.raises(KeyringUnavailableError) as caught:
        CredentialStore().save("octocat", canary_token())
    assert caught.value.code == "keyring_locked"
    assert "unlock" in str(caught.value)
    _assert_nothing_saved(copilot_home)


def test_locked_keyring_on_load_keeps_the_record(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    who = store.save("octocat", canary_token()).identity
    keyring.set_keyring(LockedKeyring())
    with pytest.raises(KeyringUnavailableError) as caught:
        store.load()
    assert caught.value.code == "keyring_locked"
    assert store.set_aside() == ()
    assert store.availability() == who  # status still works: no key needed
    keyring.set_keyring(memory_keyring)
    assert store.load()[0] == who


def test_hanging_keyring_fails_well_before_the_call_returns(
    copilot_home: Path, hanging: HangingKeyring
) -> None:
    started = time.monotonic()
    with pytest.raises(KeyringUnavailableError) as caught:
        CredentialStore().save("octocat", canary_token())  # the default 3 s bound
    elapsed = time.monotonic() - started
    assert elapsed < 15, elapsed  # the hung call would take 30 s
    assert caught.value.code == "keyring_timeout"
    assert "--key-file" in str(caught.value)
    _assert_nothing_saved(copilot_home)
    assert hanging.calls == 1


def test_hanging_keyring_on_load_and_delete(
    copilot_home: Path, memory_keyring: MemoryKeyring, hanging: HangingKeyring
) -> None:
    keyring.set_keyring(memory_keyring)
    store = CredentialStore(keyring_timeout=0.2)
    who = store.save("octocat", canary_token()).identity
    keyring.set_keyring(hanging)
    with pytest.raises(KeyringUnavailableError) as caught:
        store.load()
    assert caught.value.code == "keyring_timeout"
    assert store.availability() == who
    assert store.set_aside() == ()
    # Logging out still removes the record, and names the key entry it had to leave.
    with pytest.raises(KeyringUnavailableError) as caught:
        store.delete()
    assert caught.value.code == "keyring_entries_left"
    assert f'service "copilot-host", user "{who.login_id}"' in caught.value.message
    assert "did not answer" in caught.value.message
    assert store.availability() is None
    assert os.listdir(copilot_home) == ["credential.lock"]


def test_backend_errors_never_reach_the_message(copilot_home: Path) -> None:
    keyring.set_keyring(ExplodingKeyring())
    with pytest.raises(KeyringUnavailableError) as caught:
        CredentialStore().save("octocat", canary_token())
    assert "RuntimeError" in str(caught.value)
    assert "echoed" not in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None
    _assert_nothing_saved(copilot_home)


def test_working_keyring_never_puts_the_key_on_disk(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token).identity
    store.load()
    encoded = memory_keyring.items[("copilot-host", who.login_id)]
    key = base64.b64decode(encoded)
    assert len(key) == 32
    for path, data in files_under(copilot_home):
        assert key not in data, path
        assert encoded.encode() not in data, path
        assert key.hex().encode() not in data, path


def test_keyring_is_not_consulted_for_key_file_logins(
    copilot_home: Path, hanging: HangingKeyring
) -> None:
    store = CredentialStore(keyring_timeout=0.2)
    who = store.save("octocat", canary_token(), key_file=True).identity
    assert store.load()[0] == who
    assert store.delete().removed is True
    assert hanging.calls == 0


@pytest.mark.parametrize(
    "backend",
    [keyring.backends.fail.Keyring(), LowPriorityKeyring(), LockedKeyring()],
    ids=["fail", "not-recommended", "locked"],
)
def test_preflight_names_the_problem_before_anything_is_written(
    copilot_home: Path, backend: keyring.backend.KeyringBackend
) -> None:
    keyring.set_keyring(backend)
    store = CredentialStore()
    with pytest.raises(KeyringUnavailableError) as caught:
        store.preflight()
    assert "--key-file" in str(caught.value)
    store.preflight(key_file=True)  # the explicit choice needs no keyring
    assert os.listdir(copilot_home) == []


def test_preflight_passes_with_a_working_keyring(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    CredentialStore().preflight()
    assert memory_keyring.items == {}
    assert os.listdir(copilot_home) == []


def test_a_hung_keyring_strands_one_thread_not_one_per_call(
    tmp_path: Path, memory_keyring: MemoryKeyring, hanging: HangingKeyring
) -> None:
    # Two stores: the backend is one per process, so one hung call stops both.
    stores = [
        CredentialStore(tmp_path / "a", keyring_timeout=0.2),
        CredentialStore(tmp_path / "b", keyring_timeout=0.2),
    ]
    before = len(keyring_workers())
    codes = []
    started = time.monotonic()
    for i in range(50):
        with pytest.raises(KeyringUnavailableError) as caught:
            stores[i % 2].preflight()
        codes.append(caught.value.code)
    elapsed = time.monotonic() - started
    assert codes == ["keyring_timeout"] * 50
    assert hanging.calls == 1
    assert len(keyring_workers()) - before <= 1
    assert elapsed < 5, elapsed  # one 0.2 s wait, not fifty
    # Once the stuck call returns, the keyring is asked again.
    hanging.release.set()
    for worker in keyring_workers():
        worker.join(10)
    keyring.set_keyring(memory_keyring)
    stores[0].preflight()
    who = stores[1].save("octocat", canary_token()).identity
    assert stores[1].load()[0] == who
