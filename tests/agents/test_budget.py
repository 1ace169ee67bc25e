"""A spent ``--max-credits`` budget with the real agents (as npm installs them; .ci/run pins
them): each stops at once and shows the budget's message.

Each test runs ``copilot-host run --emulator --max-credits 0.01`` inside ``unshare -n``
(loopback only) on a stand-in named as the agent (so ``run`` applies the agent's profile):
it spends the budget with one request of its own (the emulator reports 0.0425 credits an
answer), then becomes the real agent. The agent's first model request is refused; "at
once" is what the issue asks: no refused request repeated (one, or opencode's title and
turn once each), the agent ends within 10 s of the first refusal, and the message naming
``--max-credits`` is on its output. A 429, which the gateway answered before, fails each
of these agents: they retried it silently past the bound.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.agents._harness import SCRIPT, agent, env, isolated

pytestmark = [pytest.mark.agents, pytest.mark.slow]

# Time to start the agent, spend the budget and reach the first refusal, on a loaded CI.
BOUND = 90.0
# From the first refusal to the agent's exit: the "stops at once".
AT_ONCE = 10.0
# A refused model request, over HTTP or over a socket (Codex's).
REFUSED = re.compile(r" (?:POST|WS) (/v1/\S+) model=\S+ status=(4\d\d) .*")

# Spends the budget through the gateway run started (its address and key are in the
# environment), then runs the real agent in its place.
SPENDER = """\
import json, os, sys, urllib.request
request = urllib.request.Request(
    os.environ["COPILOT_HOST_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": "spend"}]}).encode(),
    headers={"Authorization": "Bearer " + os.environ["COPILOT_HOST_API_KEY"],
             "Content-Type": "application/json"},
)
urllib.request.urlopen(request, timeout=30).read()
os.execv(REAL, [REAL, *sys.argv[1:]])
"""


def _stand_in(home: Path, name: str, real: str | None = None) -> Path:
    real = real or agent(name)
    folder = home / "bin"
    folder.mkdir(exist_ok=True)
    stand_in = folder / name
    stand_in.write_text(f"#!{sys.executable}\nREAL = {real!r}\n{SPENDER}")
    stand_in.chmod(0o755)
    return stand_in


def _spent(
    home: Path, name: str, *args: str, refusals: tuple[int, ...] = (1,), real: str | None = None
) -> str:
    """Run the agent ``name`` on a spent budget; its output (stdout and stderr) once it
    ended, after checking that it stopped at once."""
    log = home / "gateway.log"
    command = [
        *isolated(),
        str(SCRIPT),
        "run",
        "--emulator",
        "--max-credits",
        "0.01",
        "--log",
        str(log),
        "--",
        str(_stand_in(home, name, real)),
        *args,
    ]
    child = subprocess.Popen(
        command,
        env=env(home),
        cwd=home / "work",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    started = time.monotonic()
    first_refusal: float | None = None
    try:
        while child.poll() is None and time.monotonic() - started < BOUND:
            if first_refusal is None and log.exists() and REFUSED.search(log.read_text()):
                first_refusal = time.monotonic()
            if first_refusal is not None and time.monotonic() - first_refusal > AT_ONCE:
                break
            time.sleep(0.05)
        ended = time.monotonic()
        running = child.poll() is None
    finally:
        if child.poll() is None:
            os.killpg(child.pid, 9)
        out, err = child.communicate(timeout=30)
    text = log.read_text() if log.exists() else ""
    assert not running, f"{name} still ran {ended - (first_refusal or started):.1f} s on:\n{text}"
    assert first_refusal is not None, f"no refusal:\n{text}\n{err}"
    refused = REFUSED.findall(text)
    assert len(refused) in refusals, text
    # The budget's own line in the log, and the status the agent's module declares.
    assert "budget reached" in text
    assert ended - first_refusal <= AT_ONCE
    shown = out + err
    assert "--max-credits" in shown, shown
    return text


def test_claude_code_stops_at_once_on_a_spent_budget(home: Path) -> None:
    log = _spent(home, "claude", "-p", "Say hello")
    assert " status=402 " in log


def test_codex_stops_at_once_on_a_spent_budget(home: Path) -> None:
    log = _spent(home, "codex", "exec", "--skip-git-repo-check", "Say hello")
    # Codex retries a 402 five times; it stops on a 400.
    assert " status=400 " in log


def test_opencode_stops_at_once_on_a_spent_budget(home: Path) -> None:
    # Its turn, and the title request it makes alongside, each refused once and neither
    # retried; when the turn's refusal ends the run first, the title is never sent (seen
    # once in CI), so one refusal or two.
    log = _spent(home, "opencode", "run", "Say hello", refusals=(1, 2))
    assert " status=402 " in log


def test_the_copilot_cli_stops_at_once_on_a_spent_budget(home: Path) -> None:
    log = _spent(home, "copilot", "-p", "Say hello", "--allow-all-tools")
    assert " status=402 " in log


def test_qwen_code_stops_at_once_on_a_spent_budget(home: Path) -> None:
    log = _spent(home, "qwen", "-p", "Say hello")
    assert " status=402 " in log


def test_aider_stops_at_once_on_a_spent_budget(home: Path) -> None:
    aider = Path(os.environ.get("COPILOT_HOST_AIDER", "/opt/aider/bin/aider"))
    if not aider.exists():
        if os.environ.get("CI"):
            pytest.fail(f"aider is not installed at {aider}: .ci/run installs it")
        pytest.skip(f"aider is not installed at {aider} (CI installs it)")
    flags = ("--yes-always", "--no-git", "--no-check-update", "--no-show-release-notes")
    log = _spent(home, "aider", "--message", "Say hello", *flags, "--no-analytics", real=str(aider))
    # aider retries a 402 for a minute; it stops on a 400.
    assert " status=400 " in log
