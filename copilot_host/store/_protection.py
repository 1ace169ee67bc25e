"""How a record's data key is kept: one interface, two implementations.

``KeyringKeys`` (the OS keyring, the default) and ``KeyFileKeys`` (a 0600 file beside the
record, by explicit choice) both satisfy :class:`KeyProtection`. A store writes with the
one it was built for and reads each record with the one its header names, so a key-file
record stays readable by a store built for the keyring, and the other way round.

Every method takes the login id; ``get``, ``remove`` and ``location`` also take what the
record's header recorded (``Protection.backend``): the keyring a key was saved in, or the
key file's name. The key file's location is never taken from it: it is derived from the
login id, so a forged header cannot point the store at another file.
"""

from __future__ import annotations

from typing import Protocol

from .._errors import StoreError
from ._header import ProtectionKind

__all__ = ["KeyLeft", "KeyNotFound", "KeyProtection"]


class KeyNotFound(Exception):
    """The key is not where the record says. Unlike a key that fails to open the record,
    this is no sign of damage: the record is kept, and ``error`` (what the caller sees)
    says where the key was expected and what to do."""

    def __init__(self, error: StoreError) -> None:
        super().__init__(error.code)
        self.error = error


class KeyLeft(Exception):
    """A key that could not be removed, or may live on where it cannot be reached:
    ``entry`` names it for a person, ``why`` says why it stayed, ``command`` removes it."""

    def __init__(self, entry: str, why: str, command: str) -> None:
        super().__init__(entry)
        self.entry = entry
        self.why = why
        self.command = command


class KeyProtection(Protocol):
    """Where the data keys of one store folder's records are kept."""

    @property
    def kind(self) -> ProtectionKind:
        """What record headers say of keys kept here ("keyring" or "key-file")."""
        ...

    def probe(self) -> None:
        """Raise now the error a ``put`` would meet (no usable keyring...); store nothing.
        The store folder itself is proved by the store."""
        ...

    def put(self, login_id: str, key: bytes) -> str:
        """Keep ``key`` for a new login; returns what its record header records. Called
        under the store lock, before the record is written."""
        ...

    def get(self, login_id: str, recorded: str) -> bytes | None:
        """The key; None when what is kept there is no key (damage, which sets the record
        aside). Raises KeyNotFound when there is none."""
        ...

    def remove(self, login_id: str, recorded: str) -> bool:
        """Remove the key; False when there was none. Raises KeyLeft when it may remain."""
        ...

    def location(self, login_id: str, recorded: str) -> str:
        """Where the key is, as ``CredentialStore.header()`` shows it."""
        ...

    def sweep(self, keep: str | None) -> bool:
        """Under the store lock: remove the keys of every login but ``keep`` that can be
        listed (key files of crashed writers; a keyring cannot be listed). True when any
        was removed."""
        ...
