"""The durable credential store: encrypted, atomic, owner-only, crash-safe.

``CredentialStore`` keeps one GitHub login per store folder, sealed with AES-256-GCM under
a data key held in the OS keyring (or, by explicit choice, in a 0600 key file);
``default_home()`` is the folder used when none is given; ``private_folder`` makes and
checks the other private files kept beside the store (the ledger) as the store checks its
own. Importing this package imports neither cryptography nor keyring; they load when first
needed.
"""

from __future__ import annotations

from ._gateway_key import GatewayKey, GatewayKeyFile
from ._header import Protection, ProtectionKind, RecordHeader
from ._paths import default_home
from ._private import PrivateFile, PrivateFolder, private_folder
from ._store import CredentialStore, Deleted, Saved

__all__ = [
    "CredentialStore",
    "Deleted",
    "GatewayKey",
    "GatewayKeyFile",
    "PrivateFile",
    "PrivateFolder",
    "Protection",
    "ProtectionKind",
    "RecordHeader",
    "Saved",
    "default_home",
    "private_folder",
]
