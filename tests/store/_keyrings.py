"""Keyring backends that fail in the ways real ones do: locked, hung, exploding, not
recommended. The ``hanging`` fixture (conftest.py) installs a HangingKeyring."""

from __future__ import annotations

import threading

import keyring.backend
import keyring.errors

from tests._keyring_base import TypedBackend
from tests.conftest import MemoryKeyring


class LockedKeyring(TypedBackend):
    priority = 5

    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("Failed to unlock the collection!")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked("Failed to unlock the collection!")

    def delete_password(self, service: str, username: str) -> None:
        raise keyring.errors.KeyringLocked("Failed to unlock the collection!")


class HangingKeyring(TypedBackend):
    """Every call sleeps 30 s (until the test releases it), like a prompt nobody answers."""

    priority = 5

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.calls = 0

    def _hang(self) -> None:
        self.calls += 1
        self.release.wait(30)

    def get_password(self, service: str, username: str) -> str | None:
        self._hang()
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        self._hang()

    def delete_password(self, service: str, username: str) -> None:
        self._hang()


class ExplodingKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise RuntimeError(f"backend echoed the password {password}")


class LowPriorityKeyring(MemoryKeyring):
    priority = 0.5


def keyring_workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "copilot-host-keyring"]
