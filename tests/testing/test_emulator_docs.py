"""docs/EMULATOR.md's worked example of adding an endpoint shows the code as it is: each
block is in the file its paragraph names, in order, a ``...`` line standing for lines left
out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "EMULATOR.md").read_text(encoding="utf-8")
_SECTION = re.compile(r"^## Adding an endpoint\n(.*?)(?=^## |\Z)", re.S | re.M)
_BLOCK = re.compile(r"^```python\n(.*?)^```\n", re.S | re.M)
_PATH = re.compile(r"`((?:copilot_host|tests)/[\w/]+\.py)`")
_LEFT_OUT = re.compile(r"^ *\.\.\.,?(?: +#.*)?\n", re.M)


def _blocks() -> list[tuple[str, str]]:
    """(the file the text before a block names last, the block) in the section."""
    (section,) = _SECTION.findall(DOC)
    found, start = [], 0
    for match in _BLOCK.finditer(section):
        before = _PATH.findall(section[start : match.start()])
        assert before, f"no file named before the block {match.group(1)[:60]!r}"
        found.append((before[-1], match.group(1)))
        start = match.end()
    return found


def test_the_worked_example_shows_a_row_a_handler_a_setting_and_a_test() -> None:
    files = [path for path, _ in _blocks()]
    assert files == [
        "copilot_host/testing/_routes.py",
        "copilot_host/testing/_accounts.py",
        "copilot_host/testing/_groups.py",
        "tests/testing/test_emulator_plans.py",
    ]


@pytest.mark.parametrize(("path", "block"), _blocks(), ids=[path for path, _ in _blocks()])
def test_each_block_is_in_the_file_it_names(path: str, block: str) -> None:
    source = (ROOT / path).read_text(encoding="utf-8")
    at = 0
    for part in _LEFT_OUT.split(block):
        found = source.find(part, at)
        assert found >= 0, f"not in {path} (after offset {at}):\n{part}"
        at = found + len(part)
