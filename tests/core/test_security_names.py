"""SECURITY.md's promise table names the tests that prove each promise: every one exists.

A test renamed or moved without its row following would leave a promise with no proof
behind it; this reads every ``tests/....py::test_name`` (and every bare ``::test_name``,
which belongs to the last file named before it on the same line) and finds its ``def``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_REFERENCE = re.compile(r"(tests/[\w/]+\.py)|::(test_\w+)")


def _references(document: str) -> list[tuple[int, str | None, str]]:
    """(line number, file, test name) of each test the document names."""
    found: list[tuple[int, str | None, str]] = []
    for number, line in enumerate(document.splitlines(), 1):
        last: str | None = None
        for match in _REFERENCE.finditer(line):
            if match.group(1):
                last = match.group(1)
            else:
                found.append((number, last, match.group(2)))
    return found


def _missing(document: str) -> list[str]:
    problems = []
    for number, path, name in _references(document):
        source = ROOT / path if path else None
        if source is None or not source.is_file():
            problems.append(f"line {number}: ::{name} names no file that exists ({path})")
            continue
        if not re.search(rf"^\s*(?:async )?def {name}\b", source.read_text("utf-8"), re.M):
            problems.append(f"line {number}: {path}::{name} is not defined there")
    return problems


def test_every_test_security_md_names_exists() -> None:
    document = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    assert len(_references(document)) > 100  # the table is read, not skipped
    assert _missing(document) == []


def test_a_renamed_test_is_reported() -> None:
    document = (
        "| promise | `tests/core/test_security_names.py::test_a_renamed_test_is_reported`, "
        "`::test_no_such_test` |\n| other | `::test_orphan` |"
    )
    assert _missing(document) == [
        "line 1: tests/core/test_security_names.py::test_no_such_test is not defined there",
        "line 2: ::test_orphan names no file that exists (None)",
    ]
