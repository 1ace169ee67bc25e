"""keyring's backend base class with a typed constructor, for the suite's own backends."""

from __future__ import annotations

import keyring.backend


class TypedBackend(keyring.backend.KeyringBackend):
    """A recommended backend (priority 10) whose constructor mypy --strict can call."""

    priority: float = 10

    def __init__(self) -> None:
        # Named, not super(): keyring leaves its __init__ unannotated, and mypy's
        # untyped_calls_exclude (pyproject.toml) only recognises the call by its name.
        keyring.backend.KeyringBackend.__init__(self)
