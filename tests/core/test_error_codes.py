"""Every error ``code`` the library and the CLI can give is named in the documented tree
(``copilot_host/_errors.py``'s docstring): a program acting on codes finds each there.

The codes are collected from the source, not from a list kept beside it: each ``code=``
literal, each exception class's ``code`` default, the code a ``CliFailure`` or ``Problem``
is made with, and the module constant any of those names."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TREE = (REPO / "copilot_host" / "_errors.py").read_text()
# The CLI's failures take their code first.
_CODE_FIRST = {"CliFailure", "Problem"}
# Functions whose result is the code of a failure they word (cli/_failure.py).
_CODE_FUNCTIONS = {"signal_word"}


def _documented() -> set[str]:
    docstring = ast.get_docstring(ast.parse(TREE))
    assert docstring is not None
    return set(re.findall(r"\b[a-z][a-z0-9_]+\b", docstring))


def _strings(node: ast.expr, constants: dict[str, str]) -> Iterator[str]:
    """The string values ``node`` can have: a literal, a module constant, either side of
    a conditional; a name bound at run time (a parameter, an attribute) yields nothing,
    its literal being collected where the call is written."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Name) and node.id in constants:
        yield constants[node.id]
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body, constants)
        yield from _strings(node.orelse, constants)


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _codes_in(tree: ast.Module) -> Iterator[tuple[str, int]]:
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            values = [kw.value for kw in node.keywords if kw.arg == "code"]
            if _callee(node) in _CODE_FIRST and node.args:
                values.append(node.args[0])
            for value in values:
                for code in _strings(value, constants):
                    yield code, node.lineno
        elif isinstance(node, ast.ClassDef) and any(
            isinstance(base, ast.Name | ast.Attribute)
            and ast.unparse(base).rsplit(".", 1)[-1].endswith(("Error", "CopilotHostError"))
            for base in node.bases
        ):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign | ast.AnnAssign)
                    and statement.value is not None
                    and any(
                        isinstance(t, ast.Name) and t.id == "code"
                        for t in (
                            statement.targets
                            if isinstance(statement, ast.Assign)
                            else [statement.target]
                        )
                    )
                ):
                    for code in _strings(statement.value, constants):
                        yield code, statement.lineno
        elif isinstance(node, ast.FunctionDef) and node.name in _CODE_FUNCTIONS:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    for code in _strings(inner.value, constants):
                        yield code, inner.lineno


def _collected() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for folder in ("copilot_host", "cli"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for code, line in _codes_in(tree):
                found.setdefault(code, []).append(f"{path.relative_to(REPO)}:{line}")
    return found


def test_the_collector_finds_each_kind_of_code() -> None:
    """What the scan must see, so an empty result cannot pass for a documented one."""
    source = ast.parse(
        "from x import CopilotHostError, CliFailure\n"
        'NAMED = "from_a_constant"\n'
        "class AError(CopilotHostError):\n"
        '    code = "class_default"\n'
        'raise CopilotHostError("m", code="keyword")\n'
        'raise CliFailure("first_argument", "m")\n'
        'raise CopilotHostError("m", code=NAMED if x else "other_side")\n'
        "def signal_word(n):\n"
        '    return "word_one" if n else "word_two"\n'
    )
    assert {code for code, _line in _codes_in(source)} == {
        "class_default",
        "keyword",
        "first_argument",
        "from_a_constant",
        "other_side",
        "word_one",
        "word_two",
    }


def test_the_collector_finds_the_codes_of_the_library_and_the_cli() -> None:
    found = _collected()
    # One of each origin: a class default, a keyword, the CLI's own, a signal's word.
    assert {"not_logged_in", "port_in_use", "doctor_failed", "terminated"} <= set(found)
    assert len(found) > 60


@pytest.mark.parametrize("code", sorted(_collected()))
def test_every_code_is_named_in_the_documented_tree(code: str) -> None:
    assert code in _documented(), (
        f"{code!r} (raised at {', '.join(_collected()[code][:3])}) is not in the error tree "
        "of copilot_host/_errors.py"
    )
