"""The real coding agents on a plan that can use only Copilot Auto (Copilot Free), through
``copilot-host run``: each keeps the model name it knows, the gateway serves it with a model
of the Auto session that speaks the agent's API, and the agent gets its answer.

Each runs in a throwaway HOME inside a network namespace of its own (``unshare -n``:
loopback only), with the emulator, the login and ``run`` in that namespace too
(tests/agents/auto_child.py). Skipped where an agent is not installed, failed so under CI.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents._harness import agent, isolated, run_in

pytestmark = [pytest.mark.agents, pytest.mark.slow]

CHILD = Path(__file__).resolve().parent / "auto_child.py"
BOUND = 120.0
# The model endpoints of the emulator, and the access line's model part.
MODEL_REQUESTS = ("chat", "responses", "messages")
LINE = re.compile(r" POST (/v1/\S+) model=(\S+) status=(\d+) ")
# The emulator's Auto pool on its realistic inventory (the chat default, then the first
# model each API serves): what each API's requests go to.
POOL_PICK = {"chat": "gpt-5-mini", "responses": "gpt-5-mini", "messages": "claude-opus-4.6"}


def _run(home: Path, *command: str) -> tuple[dict[str, Any], list[tuple[str, ...]]]:
    out, log = home / "out.json", home / "gateway.log"
    done = run_in(
        home,
        [*isolated(), sys.executable, str(CHILD), str(out), str(log), "--", *command],
        bound=BOUND,
    )
    assert out.exists(), done.stderr
    result = json.loads(out.read_text())
    lines = [m.groups() for m in LINE.finditer(log.read_text())] if log.exists() else []
    return result, lines


def _served_by_auto(result: dict[str, Any], endpoint: str) -> list[dict[str, Any]]:
    """The agent's model requests, each answered 200 by Auto's pick with its session."""
    assert result["status"] == 0, result["stderr"]
    sent = [r for r in result["requests"] if r["endpoint"] in MODEL_REQUESTS]
    assert sent, result
    assert all(r["status"] == 200 and r["session"] for r in sent), sent
    assert {r["endpoint"] for r in sent} == {endpoint}
    assert {r["model"] for r in sent} == {POOL_PICK[endpoint]}
    assert not [r for r in result["requests"] if r["refusal"]]
    return sent


def test_claude_code_on_a_free_plan_through_auto(home: Path) -> None:
    claude = agent("claude")
    result, lines = _run(home, claude, "-p", "Say hello")
    _served_by_auto(result, "messages")
    assert "echo:" in result["stdout"] and "Say hello" in result["stdout"]
    # Claude Code asked for its own name; the gateway served it through Auto.
    assert lines and all(
        path == "/v1/messages" and model.endswith("->auto->claude-opus-4.6") and status == "200"
        for path, model, status in lines
    ), lines


def test_codex_on_a_free_plan_through_auto(home: Path) -> None:
    codex = agent("codex")
    result, lines = _run(home, codex, "exec", "--skip-git-repo-check", "Say hello")
    _served_by_auto(result, "responses")
    assert "echo: Say hello" in result["stdout"]
    # run kept a name Codex ships metadata for, so Codex did not warn about its metadata.
    assert [model for _, model, _ in lines] == ["gpt-5.6-luna->auto->gpt-5-mini"]
    assert "Model metadata for" not in result["stderr"]


def test_opencode_on_a_free_plan_through_auto(home: Path) -> None:
    opencode = agent("opencode")
    result, lines = _run(home, opencode, "run", "Say hello")
    _served_by_auto(result, "chat")
    assert "echo: Say hello" in result["stdout"] or 'echo: "Say hello"' in result["stdout"]
    assert lines and all(model.endswith("->auto->gpt-5-mini") for _, model, _ in lines), lines
