"""A tiny keyring backend on files, so child processes of a test share one keyring.

For the multi-process tests only: each entry is a file written atomically (temp file and
rename), so concurrent readers see an entry whole or not at all, like a real keyring.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

import keyring.errors

from tests._keyring_base import TypedBackend


class FileKeyring(TypedBackend):
    def __init__(self, folder: str | os.PathLike[str]) -> None:
        super().__init__()
        self.folder = Path(folder)

    def _path(self, service: str, username: str) -> Path:
        return self.folder / hashlib.sha256(f"{service}\0{username}".encode()).hexdigest()

    def get_password(self, service: str, username: str) -> str | None:
        try:
            return self._path(service, username).read_text()
        except FileNotFoundError:
            return None

    def set_password(self, service: str, username: str, password: str) -> None:
        temp = self.folder / f".tmp-{secrets.token_hex(8)}"
        temp.write_text(password)
        os.replace(temp, self._path(service, username))

    def delete_password(self, service: str, username: str) -> None:
        try:
            self._path(service, username).unlink()
        except FileNotFoundError:
            raise keyring.errors.PasswordDeleteError("not found") from None
