"""The table is the only place a wire change is declared, and the descriptors the only place
a protocol is told apart: checked on the gateway's syntax trees, the table itself, its
hand-written twin in docs/WIRE.md, and the gateway's module sizes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import copilot_host as ch
from copilot_host.gateway._changes import REWRITES, TABLE
from copilot_host.gateway._protocols import APIS
from copilot_host.testing import CHECKS

ROOT = Path(__file__).resolve().parents[2]
GATEWAY = ROOT / "copilot_host" / "gateway"
# The descriptors (and the documents they build), where protocols are told apart.
DESCRIPTORS = {"_protocols.py", "_documents.py"}
ERROR_SHAPES = {"OPENAI_ERRORS", "ANTHROPIC_ERRORS"}
MEMBERS = set(ch.ApiProtocol.__members__)
MAX_LINES = 400
WIRE = ROOT / "docs" / "WIRE.md"
SECTIONS = ("### What the gateway changes, and why", "### Shapes no tested agent sends yet")


def modules() -> list[Path]:
    return sorted(GATEWAY.rglob("*.py"))


def _names_api_protocol(node: ast.expr) -> bool:
    """``ApiProtocol``, ``ch.ApiProtocol``, ``copilot_host.ApiProtocol``, …"""
    if isinstance(node, ast.Name):
        return node.id == "ApiProtocol"
    return isinstance(node, ast.Attribute) and node.attr == "ApiProtocol"


def protocol_branches(source: str) -> list[str]:
    """Where ``source`` names an ApiProtocol member or an error shape (line: what)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute):
            if node.attr in MEMBERS and _names_api_protocol(node.value):
                found.append(f"{line}: ApiProtocol.{node.attr}")
            elif node.attr in ERROR_SHAPES:
                found.append(f"{line}: {node.attr}")
        elif isinstance(node, ast.Name) and node.id in ERROR_SHAPES:
            found.append(f"{line}: {node.id}")
        elif isinstance(node, ast.ImportFrom):
            found += [f"{line}: imports {a.name}" for a in node.names if a.name in ERROR_SHAPES]
    return sorted(found, key=lambda where: int(where.split(":")[0]))


def test_the_scan_finds_what_it_looks_for() -> None:
    source = (
        "import copilot_host as ch\n"
        "from copilot_host import ApiProtocol\n"
        "from .._protocols import OPENAI_ERRORS\n"
        "if api.protocol is ch.ApiProtocol.OPENAI_CHAT: pass\n"
        "x = ApiProtocol.ANTHROPIC_MESSAGES\n"
        "y = _protocols.ANTHROPIC_ERRORS.body(400, 'c', 'm')\n"
        "z = api.protocol.path\n"
    )
    assert protocol_branches(source) == [
        "3: imports OPENAI_ERRORS",
        "4: ApiProtocol.OPENAI_CHAT",
        "5: ApiProtocol.ANTHROPIC_MESSAGES",
        "6: ANTHROPIC_ERRORS",
    ]


@pytest.mark.parametrize(
    "module",
    [m for m in modules() if m.name not in DESCRIPTORS],
    ids=lambda m: str(m.relative_to(GATEWAY)),
)
def test_no_protocol_branch_outside_the_descriptors(module: Path) -> None:
    assert protocol_branches(module.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("module", modules(), ids=lambda m: str(m.relative_to(GATEWAY)))
def test_no_gateway_module_is_over_400_lines(module: Path) -> None:
    assert len(module.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_names_are_unique_and_each_names_an_emulator_check_or_why_none() -> None:
    names = [change.name for change in TABLE]
    assert len(names) == len(set(names))
    for change in TABLE:
        assert change.check in CHECKS or (
            change.check.startswith("none: ") and len(change.check) > len("none: ")
        ), change
        assert change.apis and change.apis <= {api.name for api in APIS}, change
        assert change.sides, f"{change} overrides no hook"
        assert change.summary and change.evidence, change


def test_rewrites_are_exactly_the_switchable_entries() -> None:
    switchable = {change.name: change.summary for change in TABLE if change.switchable}
    assert dict(REWRITES) == switchable


def wire_rows() -> dict[str, str]:
    """docs/WIRE.md's tables of changes ("What the gateway changes, and why", and "Shapes
    no tested agent sends yet"): each name in a row's first cell, with that cell. A row
    of a documented pass (``pass: ...``) names no change."""
    text = WIRE.read_text(encoding="utf-8")
    rows: dict[str, str] = {}
    for section in SECTIONS:
        lines = text[text.index(section) :].splitlines()
        start = next(at for at, line in enumerate(lines) if line.startswith("| "))
        for line in lines[start + 2 :]:
            if not line.startswith("|"):
                break
            # The names come before any words in brackets after them.
            first = line.split("|")[1]
            if first.strip().startswith("pass:"):
                continue
            for name in re.findall(r"`([^`]+)`", first.split("(")[0]):
                assert name not in rows, f"{name} has two rows"
                rows[name] = first
    return rows


def test_wire_md_lists_exactly_the_table_and_marks_the_always_on_ones() -> None:
    rows = wire_rows()
    assert set(rows) == {change.name for change in TABLE}
    for change in TABLE:
        marked = "always on" in rows[change.name]
        assert marked is not change.switchable, change.name
