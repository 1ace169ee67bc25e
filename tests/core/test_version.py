"""The version says what it is: the newest CHANGELOG heading, dated once released, and the
supported line in SECURITY.md."""

from __future__ import annotations

import re
from pathlib import Path

import copilot_host as ch

ROOT = Path(__file__).resolve().parents[2]
HEADING = re.compile(r"^## (\d+\.\d+\.\d+) \((unreleased|\d{4}-\d{2}-\d{2})\)$", re.MULTILINE)


def _headings() -> list[tuple[str, str]]:
    return HEADING.findall((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))


def test_the_version_is_the_newest_changelog_heading() -> None:
    headings = _headings()
    assert headings, "CHANGELOG.md has no version headings"
    assert headings[0][0] == ch.__version__


def test_every_version_but_the_newest_is_dated_and_versions_go_down() -> None:
    headings = _headings()
    assert all(when != "unreleased" for _, when in headings[1:])
    numbers = [tuple(int(part) for part in version.split(".")) for version, _ in headings]
    assert numbers == sorted(numbers, reverse=True)
    assert len(set(numbers)) == len(numbers)


def test_security_md_supports_the_current_minor_version() -> None:
    major, minor, _ = ch.__version__.split(".")
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    assert f"| {major}.{minor}.x (latest) | yes |" in text


def test_the_user_agent_carries_the_version() -> None:
    from copilot_host.github import EditorIdentity

    assert f"copilot-host/{ch.__version__}" in EditorIdentity().user_agent
