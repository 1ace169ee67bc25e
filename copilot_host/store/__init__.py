"""The durable credential store: encrypted, atomic, owner-only, crash-safe.

``CredentialStore`` keeps one GitHub login per store folder, sealed with AES-256-GCM under
a data key held in the OS keyring (or, by explicit choice, in a 0600 key file);
``default_home()`` is the folder used when none is given; ``private_folder`` makes and
checks the other private files kept beside the store (the ledger) as the store checks its
own. Importing this package imports neither cryptography nor keyring; they load when first
needed. Nor the private files' module: only the ledger uses it, and every command that reads
the store would build its classes at start-up (about 1.4% of ``copilot-host status``'s
instructions).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._gateway_key import GatewayKey, GatewayKeyFile
from ._header import Protection, ProtectionKind, RecordHeader
from ._paths import default_home
from ._store import CredentialStore, Deleted, Saved

if TYPE_CHECKING:
    from ._private import PrivateFile, PrivateFolder, private_folder

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

_LATER = frozenset({"PrivateFile", "PrivateFolder", "private_folder"})


def __getattr__(name: str) -> Any:
    if name not in _LATER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}._private"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
