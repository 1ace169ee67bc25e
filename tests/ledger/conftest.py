"""The CLI tests' runner and leak guard, for ``usage --history``, ``usage --report`` and
``logout`` here, and the emulator for the report's live quota lookup."""

from __future__ import annotations

from tests.cli.conftest import cli, emulate, leak_guard, proc

__all__ = ["cli", "emulate", "leak_guard", "proc"]
