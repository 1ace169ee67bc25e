"""The CLI tests' runner and leak guard, for ``usage --history`` and ``logout`` here."""

from __future__ import annotations

from tests.cli.conftest import cli, leak_guard, proc

__all__ = ["cli", "leak_guard", "proc"]
