"""The non-secret part of a credential record: who, when, and where its key lives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._hosts import LoginIdentity

__all__ = ["KEY_FILE", "KEYRING", "Protection", "ProtectionKind", "RecordHeader"]

ProtectionKind = Literal["keyring", "key-file"]
KEYRING: ProtectionKind = "keyring"
KEY_FILE: ProtectionKind = "key-file"


@dataclass(frozen=True, slots=True)
class Protection:
    """Where the record's data key lives.

    ``kind`` is ``"keyring"`` (``backend`` names the OS keyring, e.g. "Secret Service",
    "macOS Keychain") or ``"key-file"`` (``backend`` is the key file's path: the record
    holds only the file's name, ``credential-<login id>.key``, and the store shows it in
    its folder; a record written before 0.2.0 holds an absolute path, shown as recorded).
    The key is always looked for beside the record under the login id's name, never at a
    path taken from the header.
    """

    kind: ProtectionKind
    backend: str


@dataclass(frozen=True, slots=True)
class RecordHeader:
    """Readable without the key, so ``status`` needs neither keyring nor network.

    Read on its own it is unauthenticated (shown as recorded); every load that decrypts
    verifies it together with the ciphertext, because it is the AES-GCM associated data.
    ``created_at`` is seconds since the epoch (for display). ``client_id`` is the OAuth
    app the token was minted for, None for the default (VS Code's): a record with one is
    written as format 2, so a copilot-host that reads only format 1 keeps it untouched.
    """

    version: int
    login_id: str
    account: str
    created_at: float
    protection: Protection
    client_id: str | None = None

    @property
    def identity(self) -> LoginIdentity:
        return LoginIdentity(login_id=self.login_id, account=self.account)
