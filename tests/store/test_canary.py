"""A canary GitHub token never shows in a file, a DEBUG log line, or an exception."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from pathlib import Path

import keyring
import pytest

from copilot_host import CopilotHostError, Secret
from copilot_host.store import CredentialStore
from tests.conftest import MemoryKeyring
from tests.store._keyrings import ExplodingKeyring, LockedKeyring
from tests.store._support import canary_token, files_under


def _exception_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)


def test_canary_never_leaks(
    copilot_home: Path, memory_keyring: MemoryKeyring, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, every level
    canary = canary_token()
    value = canary.reveal()
    errors: list[BaseException] = []

    def attempt(action: Callable[[], object]) -> None:
        try:
            action()
        except CopilotHostError as exc:
            errors.append(exc)

    store = CredentialStore()
    for key_file in (False, True):
        who = store.save("octocat", canary, key_file=key_file).identity
        assert store.load() == (who, canary)
        assert store.availability() == who
        attempt(store.header)
        # Damage: the key, then the record; both are reported and set aside.
        header = store.header()
        assert header is not None
        if key_file:
            Path(header.protection.backend).write_bytes(b"\0" * 32)
        else:
            memory_keyring.items[("copilot-host", who.login_id)] = "A" * 44
        attempt(store.load)
        store.save("octocat", canary, key_file=key_file)
        data = bytearray(store.record_path.read_bytes())
        data[-1] ^= 1
        store.record_path.write_bytes(bytes(data))
        attempt(store.load)
    store.save("octocat", canary)
    for backend in (LockedKeyring(), ExplodingKeyring()):
        keyring.set_keyring(backend)
        attempt(store.load)
        attempt(lambda: store.save("octocat", canary))
    keyring.set_keyring(memory_keyring)
    attempt(lambda: store.save("octocat", Secret(value + " ")))  # refused shape
    attempt(lambda: store.save("bad\nname", canary))
    store.delete()

    assert len(errors) >= 8
    # Two damaged keys and two damaged records; the record whose key the exploding
    # backend (another keyring, in effect) does not have is kept, not set aside.
    assert len(store.set_aside()) == 4
    for exc in errors:
        assert value not in _exception_text(exc)
    for record in caplog.records:
        assert value not in record.getMessage()
        assert value not in repr(record.args)
    assert caplog.records, "the store logs its steps at DEBUG"
    for path, content in files_under(copilot_home):
        assert value.encode() not in content, path
    for stored in memory_keyring.items.values():
        assert value not in stored
