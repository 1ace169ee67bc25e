"""One key-protection interface, two implementations, chosen when the store is built;
every record is read with the protection its header names."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest

from copilot_host import KeyringUnavailableError
from copilot_host.store import CredentialStore
from copilot_host.store._keyfile import KeyFileKeys
from copilot_host.store._keyring import KeyringKeys
from copilot_host.store._protection import KeyProtection
from tests.conftest import MemoryKeyring
from tests.store._keyrings import HangingKeyring
from tests.store._support import canary_token

METHODS = ("probe", "put", "get", "remove", "location", "sweep")


@pytest.mark.parametrize("name", METHODS)
def test_both_protections_have_the_interfaces_signatures(name: str) -> None:
    expected = inspect.signature(getattr(KeyProtection, name))
    for implementation in (KeyringKeys, KeyFileKeys):
        assert inspect.signature(getattr(implementation, name)) == expected, implementation


def test_both_protections_name_their_kind() -> None:
    assert KeyringKeys(1.0).kind == "keyring"
    assert KeyFileKeys(Path("/nonexistent")).kind == "key-file"


def test_a_store_built_for_key_files_writes_key_files_without_asking_the_keyring(
    copilot_home: Path, hanging: HangingKeyring
) -> None:
    store = CredentialStore(key_file=True, keyring_timeout=0.2)
    store.preflight()
    who = store.save("octocat", canary_token()).identity
    assert (copilot_home / f"credential-{who.login_id}.key").exists()
    stored = store.header()
    assert stored is not None and stored.protection.kind == "key-file"
    assert store.load()[0] == stored.identity
    assert store.delete().removed is True
    assert hanging.calls == 0


@pytest.mark.parametrize("writer_key_file", [False, True], ids=["keyring", "key-file"])
def test_each_record_is_read_and_removed_with_the_protection_its_header_names(
    copilot_home: Path, memory_keyring: MemoryKeyring, writer_key_file: bool
) -> None:
    token = canary_token()
    CredentialStore(key_file=writer_key_file).save("octocat", token)
    reader = CredentialStore(key_file=not writer_key_file)
    header = reader.header()
    assert header is not None
    assert header.protection.kind == ("key-file" if writer_key_file else "keyring")
    assert reader.load() == (header.identity, token)
    assert reader.delete().removed is True
    assert memory_keyring.items == {}
    assert os.listdir(copilot_home) == ["credential.lock"]


def test_a_key_file_record_needs_no_keyring_whichever_store_reads_it(
    copilot_home: Path, memory_keyring: MemoryKeyring, hanging: HangingKeyring
) -> None:
    keyring.set_keyring(memory_keyring)
    token = canary_token()
    CredentialStore(key_file=True).save("octocat", token)
    keyring.set_keyring(hanging)
    store = CredentialStore(keyring_timeout=0.2)  # built for the keyring
    header = store.header()
    assert header is not None
    assert store.load() == (header.identity, token)
    assert hanging.calls == 0


def test_the_per_call_key_file_argument_overrides_the_stores_choice(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    keyring_store = CredentialStore()
    keyring_store.save("octocat", canary_token(), key_file=True)
    header = keyring_store.header()
    assert header is not None and header.protection.kind == "key-file"
    assert memory_keyring.items == {}
    file_store = CredentialStore(key_file=True)
    file_store.save("octocat", canary_token(), key_file=False)
    header = file_store.header()
    assert header is not None and header.protection.kind == "keyring"
    assert list(memory_keyring.items) == [("copilot-host", header.login_id)]
    assert not list(copilot_home.glob("*.key"))


def test_preflight_asks_the_keyring_only_for_a_store_that_writes_there(
    copilot_home: Path,
) -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())
    CredentialStore(key_file=True).preflight()
    with pytest.raises(KeyringUnavailableError):
        CredentialStore().preflight()
    with pytest.raises(KeyringUnavailableError):
        CredentialStore(key_file=True).preflight(key_file=False)
    CredentialStore().preflight(key_file=True)
