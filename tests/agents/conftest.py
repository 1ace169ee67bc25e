"""The throwaway HOME every agent test in this folder runs its agent in."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A throwaway HOME with its TMPDIR and an empty working folder, ``work``."""
    folder = tmp_path / "home"
    (folder / "tmp").mkdir(parents=True)
    (folder / "work").mkdir()
    return folder
