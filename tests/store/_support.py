"""Helpers shared by the store tests."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from copilot_host import Secret


def canary_token() -> Secret:
    """A token-shaped value made at run time, so a leak can be searched for exactly."""
    return Secret("gho_" + secrets.token_hex(18))


def files_under(root: Path) -> list[tuple[Path, bytes]]:
    """Every regular file below ``root`` with its bytes (symlinks are not followed)."""
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                found.append((path, path.read_bytes()))
    return found


class FixedClock:
    """A clock that stands still, for byte-for-byte comparable records."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now
