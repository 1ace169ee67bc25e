"""Every change to a real record is caught: a typed error, never a wrong identity."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from copilot_host import (
    NotLoggedInError,
    StoreCorruptError,
    StoreError,
    StoreVersionError,
)
from copilot_host.store import CredentialStore, Protection, RecordHeader
from copilot_host.store._record import open_sealed, parse, seal
from tests.conftest import MemoryKeyring
from tests.store._support import canary_token

MAGIC_LENGTH = len(b"copilot-host-credential\n")
_KEY = bytes(range(32))
_TOKEN = canary_token()
_HEADER = RecordHeader(1, "ab" * 16, "octocat", 1.5, Protection("keyring", "Secret Service"))


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


class _Keys:
    """The record's key as saved, to put back after a record set aside took it along."""

    def __init__(self, home: Path, memory_keyring: MemoryKeyring) -> None:
        self.home, self.memory = home, memory_keyring
        self.entries = dict(memory_keyring.items)
        self.files = {p.name: p.read_bytes() for p in home.glob("*.key")}

    def restore(self) -> None:
        self.memory.items.update(self.entries)
        for name, data in self.files.items():
            _write(self.home / name, data)


def _clear_aside(home: Path, keys: _Keys | None = None) -> None:
    for name in os.listdir(home):
        if name.startswith("credential.damaged-"):
            (home / name).unlink()
    if keys is not None:
        keys.restore()


# A changed login id names a key that does not exist: read as a missing key (the record
# is kept, as for a key in another keyring), never as another login.
MISSING_KEY = ("keyring_entry_missing", "key_file_missing")


def _load_outcome(store: CredentialStore, original: tuple[object, object]) -> str:
    """'same' when the record still reads as the original, else the error's type name
    (or, for a key not found, its code)."""
    try:
        loaded = store.load()
    except (StoreCorruptError, StoreVersionError) as exc:
        return type(exc).__name__
    except StoreError as exc:
        if exc.code not in MISSING_KEY:
            raise  # any other error fails the test
        return "MissingKey"
    assert loaded == original, "a changed record produced a different identity"
    return "same"


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_flipping_any_byte_fails_with_a_typed_error(
    copilot_home: Path, memory_keyring: MemoryKeyring, key_file: bool
) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token, key_file=key_file).identity
    keys = _Keys(copilot_home, memory_keyring)
    record = store.record_path
    original = record.read_bytes()
    login_id_at = original.index(who.login_id.encode())
    outcomes = set()
    for position in range(len(original)):
        for mask in (0x01, 0x80, 0xFF):
            tampered = bytearray(original)
            tampered[position] ^= mask
            _write(record, bytes(tampered))
            outcome = _load_outcome(store, (who, token))
            assert outcome != "same", f"byte {position} ^ {mask:#x} went unnoticed"
            outcomes.add(outcome)
            if outcome == "StoreCorruptError":
                # Moved aside and kept, never deleted; nothing left in place.
                assert not record.exists()
                assert [p.read_bytes() for p in store.set_aside()] == [bytes(tampered)]
            else:
                # A newer format, or a key not found: untouched.
                assert record.read_bytes() == bytes(tampered)
                assert store.set_aside() == ()
            if outcome == "MissingKey":
                assert login_id_at <= position < login_id_at + 32
            _clear_aside(copilot_home, keys)
    # The version byte can turn into a "newer" version, the login id into one without a
    # key; everything else is damage. (A key-file header names its key file after the
    # login id, so there a changed login id no longer matches it: damage too.)
    missing = set() if key_file else {"MissingKey"}
    assert outcomes == {"StoreCorruptError", "StoreVersionError", *missing}
    _write(record, original)
    assert store.load() == (who, token)


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_every_truncation_and_extension_fails(
    copilot_home: Path, memory_keyring: MemoryKeyring, key_file: bool
) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token, key_file=key_file).identity
    keys = _Keys(copilot_home, memory_keyring)
    record = store.record_path
    original = record.read_bytes()
    variants = [original[:n] for n in range(len(original))]
    variants += [original + b"\0", original + original, original[1:]]
    for data in variants:
        _write(record, data)
        assert _load_outcome(store, (who, token)) == "StoreCorruptError"
        _clear_aside(copilot_home, keys)


@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
        min_size=1,
        max_size=6,
    ),
    cut=st.none() | st.integers(min_value=0),
)
def test_random_rewrites_never_yield_another_token(
    edits: list[tuple[int, int]], cut: int | None
) -> None:
    """The format layer alone (no files), so the CI profile's 2,000 examples stay cheap:
    any rewrite either parses to a typed error, fails to authenticate, or is the original."""
    original = seal(_HEADER, _KEY, _TOKEN)
    tampered = bytearray(original)
    for position, value in edits:
        tampered[position % len(tampered)] = value
    if cut is not None:
        del tampered[cut % len(tampered) :]
    try:
        token = open_sealed(parse(bytes(tampered)), _KEY)
    except (StoreCorruptError, StoreVersionError):
        token = None
    if bytes(tampered) == original:
        assert token == _TOKEN
    else:
        assert token is None


def test_tampered_key_file_fails_and_the_record_is_kept_aside(copilot_home: Path) -> None:
    store = CredentialStore()
    who = store.save("octocat", canary_token(), key_file=True).identity
    key_path = copilot_home / f"credential-{who.login_id}.key"
    key = bytearray(key_path.read_bytes())
    key[0] ^= 1
    _write(key_path, bytes(key))
    with pytest.raises(StoreCorruptError) as caught:
        store.load()
    message = str(caught.value)
    assert "integrity check" in message
    assert "log in again" in message
    assert str(store.set_aside()[0]) in message
    with pytest.raises(NotLoggedInError):
        store.load()


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_missing_key_is_reported_and_the_record_kept(
    copilot_home: Path, memory_keyring: MemoryKeyring, key_file: bool
) -> None:
    """A key that is not there is no sign of damage (another keyring may hold it, a backup
    may bring the file back): the record stays where it is."""
    store = CredentialStore()
    who = store.save("octocat", canary_token(), key_file=key_file).identity
    record = store.record_path.read_bytes()
    if key_file:
        (copilot_home / f"credential-{who.login_id}.key").unlink()
    else:
        memory_keyring.items.clear()
    with pytest.raises(StoreError) as caught:
        store.load()
    assert caught.value.code == ("key_file_missing" if key_file else "keyring_entry_missing")
    assert "the record is kept" in caught.value.message
    assert "log in again" in caught.value.message
    assert store.set_aside() == ()
    assert store.record_path.read_bytes() == record
    assert store.availability() == who


def test_header_read_is_unauthenticated_but_load_is_not(copilot_home: Path) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    data = store.record_path.read_bytes()
    forged = data.replace(b'"account":"octocat"', b'"account":"mallory"')
    assert forged != data
    _write(store.record_path, forged)
    header = store.header()
    assert header is not None
    assert header.account == "mallory"  # shown as recorded...
    with pytest.raises(StoreCorruptError):
        store.load()  # ...but never accepted


def test_malformed_header_is_a_typed_error_for_status_too(copilot_home: Path) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    _write(store.record_path, b"not a record at all")
    with pytest.raises(StoreCorruptError, match="log in again"):
        store.header()
    with pytest.raises(StoreCorruptError):
        store.availability()
    # A new login sets the damaged record aside rather than overwriting it silently.
    store.save("octocat", canary_token())
    assert [p.read_bytes() for p in store.set_aside()] == [b"not a record at all"]


def test_newer_format_is_refused_and_never_rewritten(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    data = bytearray(store.record_path.read_bytes())
    data[MAGIC_LENGTH] = 3  # the version byte (format 2 records a client id)
    newer = bytes(data) + b"whatever format 3 adds"
    _write(store.record_path, newer)
    keys_before = dict(memory_keyring.items)
    for action in (store.load, store.header, store.delete, store.availability):
        with pytest.raises(StoreVersionError, match="newer copilot-host"):
            action()
    with pytest.raises(StoreVersionError):
        store.save("hubot", canary_token())
    assert store.record_path.read_bytes() == newer
    assert memory_keyring.items == keys_before
    assert store.set_aside() == ()


def test_oversized_record_is_refused(copilot_home: Path) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    data = store.record_path.read_bytes()
    _write(store.record_path, data + b"\0" * (70 * 1024))
    with pytest.raises(StoreCorruptError, match="larger"):
        store.load()


def test_header_length_field_cannot_point_past_the_record(copilot_home: Path) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    data = bytearray(store.record_path.read_bytes())
    struct.pack_into(">H", data, MAGIC_LENGTH + 1, 0xFFFF)
    _write(store.record_path, bytes(data))
    with pytest.raises(StoreCorruptError, match="truncated"):
        store.load()
