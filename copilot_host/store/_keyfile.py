"""Data keys in 0600 files beside the record: the :class:`KeyProtection` chosen explicitly
when no OS keyring can be used.

One file per login id, ``credential-<login id>.key``: a new login writes its key under a
new name before the record is replaced, so a crash between the two writes never pairs a
record with the wrong key. The header records only that name; the file is always looked
for in the store folder under the login id's name, whatever the header says.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._errors import StoreError
from .._safety._text import show_path
from ._atomic import read_private, remove, write_private
from ._header import KEY_FILE, ProtectionKind
from ._paths import KEY_FILE_PATTERN, key_file_name, open_home
from ._protection import KeyNotFound
from ._record import KEY_BYTES

__all__ = ["KeyFileKeys"]


class KeyFileKeys:
    """Data keys in 0600 files in the store folder ``home`` (checked on every open)."""

    def __init__(self, home: Path) -> None:
        self._home = home

    @property
    def kind(self) -> ProtectionKind:
        return KEY_FILE

    def probe(self) -> None:
        """Nothing to ask: the key file needs only the folder, which preflight proves."""

    def put(self, login_id: str, key: bytes) -> str:
        name = key_file_name(login_id)
        with open_home(self._home, create=True) as dir_fd:
            assert dir_fd is not None  # create=True
            write_private(dir_fd, name, key)
        return name

    def get(self, login_id: str, recorded: str) -> bytes | None:
        path = self._home / key_file_name(login_id)
        with open_home(self._home, create=False) as dir_fd:
            found = (
                None if dir_fd is None else read_private(dir_fd, path.name, self._home, KEY_BYTES)
            )
        if found is None:
            raise KeyNotFound(
                StoreError(
                    f"The key file {show_path(path)} of the stored login is missing; the "
                    "record is kept, but it cannot be used without that key: put the file "
                    "back (from a backup), or log in again to replace the login",
                    code="key_file_missing",
                )
            )
        return found[0] if len(found[0]) == KEY_BYTES else None

    def remove(self, login_id: str, recorded: str) -> bool:
        with open_home(self._home, create=False) as dir_fd:
            return dir_fd is not None and remove(dir_fd, key_file_name(login_id))

    def location(self, login_id: str, recorded: str) -> str:
        # Where get() really looks, whatever the header recorded (records written before
        # 0.2.0 hold an absolute path, which a moved folder would make wrong).
        return os.fspath(self._home / key_file_name(login_id))

    def sweep(self, keep: str | None) -> bool:
        removed = False
        with open_home(self._home, create=False) as dir_fd:
            if dir_fd is None:
                return False
            for name in os.listdir(dir_fd):
                match = KEY_FILE_PATTERN.match(name)
                if match and match.group(1) != keep:
                    removed = remove(dir_fd, name) or removed
        return removed
