"""opencode, aider and the Copilot CLI through ``copilot-host run`` with no configuration of
their own: each gets what its profile adds (cli/_profiles.py) and nothing by hand.

Each runs in a throwaway HOME inside a network namespace of its own (``unshare -n``:
loopback only), with the emulator, the login and ``run`` in that namespace too
(tests/agents/recorded_child.py), so the test reads from the emulator's records which
model served each request and the output cap the agent asked for, which comes from the
limits the profile gave it. Skipped where an agent is not installed, failed so under CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents._harness import agent, isolated, run_in

pytestmark = [pytest.mark.agents, pytest.mark.slow]

CHILD = Path(__file__).resolve().parent / "recorded_child.py"
BOUND = 120.0
# Where .ci/run installs aider (a large PyPI tree: a venv of its own).
AIDER = Path(os.environ.get("COPILOT_HOST_AIDER", "/opt/aider/bin/aider"))


def _recorded(home: Path, *command: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    out = home / "records.json"
    done = run_in(
        home, [*isolated(), sys.executable, str(CHILD), str(out), "--", *command], bound=BOUND
    )
    assert out.exists(), done.stderr
    return done, json.loads(out.read_text())


def _served(done: Any, records: Any) -> list[dict[str, Any]]:
    """The requests the gateway served the agent, once the agent and run both exited 0."""
    requests = records["requests"]
    assert requests, records
    assert all(r["status"] == 200 for r in requests), requests
    return list(requests)


# -- opencode --------------------------------------------------------------------------------


def test_opencode_run_with_no_opencode_json(home: Path) -> None:
    opencode = agent("opencode")
    done, records = _recorded(home, opencode, "run", "Say hello")
    requests = _served(done, records)
    assert 'echo: "Say hello"' in done.stdout or "echo: Say hello" in done.stdout
    # The profile's default chat model (the inventory's chat default), on Chat Completions,
    # asked for no more output than the model's limit (opencode caps it at 32000 of
    # gpt-5-mini's 64000).
    assert {(r["endpoint"], r["model"]) for r in requests} == {("chat", "gpt-5-mini")}
    # (gpt-5-mini refuses Chat's max_tokens: it goes as max_completion_tokens, the
    # gateway's sampling change.)
    assert all(0 < r["max_completion_tokens"] <= 64_000 for r in requests), requests
    assert not any("max_tokens" in r for r in requests), requests


def test_opencode_run_with_the_users_own_opencode_json(home: Path) -> None:
    """The user's file names the model and a setting of their own; the profile merges its
    provider into it: gpt-4.1 with the account's output limit (16384), which opencode's
    own default (32000) would exceed."""
    opencode = agent("opencode")
    (home / "work" / "opencode.json").write_text(
        json.dumps(
            {
                "$schema": "https://opencode.ai/config.json",
                "model": "copilot-host/gpt-4.1",
                "provider": {"copilot-host": {"options": {"timeout": 60000}}},
            }
        )
    )
    done, records = _recorded(home, opencode, "run", "Say hello")
    requests = _served(done, records)
    assert "echo:" in done.stdout and "Say hello" in done.stdout
    assert {(r["endpoint"], r["model"]) for r in requests} == {("chat", "gpt-4.1")}
    assert {r["max_tokens"] for r in requests} == {16_384}


# -- aider -----------------------------------------------------------------------------------


def test_aider_message_with_no_model(home: Path) -> None:
    if not AIDER.exists():
        if os.environ.get("CI"):
            pytest.fail(f"aider is not installed at {AIDER}: .ci/run installs it")
        pytest.skip(f"aider is not installed at {AIDER} (CI installs it)")
    done, records = _recorded(
        home,
        str(AIDER),
        "--message",
        "Say hello",
        "--yes-always",
        "--no-git",
        "--no-check-update",
        "--no-show-release-notes",
        "--no-analytics",
    )
    requests = _served(done, records)
    assert "echo:" in done.stdout and "Say hello" in done.stdout
    # The default chat model answered the message; nothing asked for a model the account
    # lacks (aider's own weak model, openai/gpt-4.1-mini, would get 404).
    assert ("chat", "gpt-5-mini") in {(r["endpoint"], r["model"]) for r in requests}
    assert {r["model"] for r in requests} <= {"gpt-5-mini", "gpt-4o-mini-2024-07-18"}
    # Both models are ones aider knows the window of: no warning at start.
    assert "Unknown context window" not in done.stdout + done.stderr


# -- Copilot CLI -----------------------------------------------------------------------------


def test_copilot_cli_prompt_with_no_variables_set_by_hand(home: Path) -> None:
    copilot = agent("copilot")
    done, records = _recorded(home, copilot, "-p", "Say hello")
    requests = _served(done, records)
    assert "echo:" in done.stdout and "Say hello" in done.stdout
    # Its own bring-your-own-key mode on the gateway's /v1: the default chat model, on
    # Responses (which it speaks), asking for no more than its output limit.
    assert {(r["endpoint"], r["model"]) for r in requests} == {("responses", "gpt-5-mini")}
    assert {r["max_output_tokens"] for r in requests} == {64_000}, requests
