"""The durable credential store: encrypted, atomic, owner-only, crash-safe.

``CredentialStore`` keeps one GitHub login per store folder, sealed with AES-256-GCM under
a data key held in the OS keyring (or, by explicit choice, in a 0600 key file). Importing
this package imports neither cryptography nor keyring; they load when first needed.
"""

from __future__ import annotations

from ._header import Protection, ProtectionKind, RecordHeader
from ._store import CredentialStore

__all__ = ["CredentialStore", "Protection", "ProtectionKind", "RecordHeader"]
