"""What every agent test in this folder shares: finding the agent, the throwaway
environment it runs in, the loopback-only network namespace, and Claude Code's
full-screen interface in tmux. The ``home`` fixture is in this folder's conftest.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

__all__ = ["REQUEST", "SCRIPT", "Pane", "agent", "env", "isolated", "onboard_claude", "run_in"]

SCRIPT = Path(sys.executable).parent / "copilot-host"
# A model request in the access log (over HTTP, or a message on Codex's socket): what was
# asked, what served, the status.
REQUEST = re.compile(r" (?:POST|WS) (/v1/\S+) model=(\S+?)(?:->(\S+))? status=(\d+) ")


def agent(name: str) -> str:
    """The installed agent ``name``: skipped where it is not, failed so under ``CI``."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed: .ci/run installs it from npm")
        pytest.skip(f"{name} is not installed (npm: see .ci/run); CI runs this test")
    return found


def env(home: Path) -> dict[str, str]:
    """The environment of an agent under test, with ``home`` as its throwaway HOME."""
    found = {
        name: value
        for name, value in os.environ.items()
        # Nothing of the person's own agent setup reaches the agent under test.
        if not name.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "COPILOT_HOST_"))
    }
    found.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        TMPDIR=str(home / "tmp"),
        COPILOT_HOST_HOME=str(home / "copilot-host"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        NO_COLOR="1",
    )
    return found


def run_in(home: Path, command: list[str], *, bound: float) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end in ``home``'s working folder, with no input, its output
    captured, and killed past ``bound`` seconds."""
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=env(home),
        cwd=home / "work",
        stdin=subprocess.DEVNULL,
        timeout=bound,
        check=False,
    )


def isolated() -> list[str]:
    """The prefix that gives a command a network namespace with only loopback."""
    unshare = shutil.which("unshare")
    probe = (
        subprocess.run([unshare, "-n", "true"], capture_output=True, check=False, timeout=30)
        if unshare
        else None
    )
    if unshare is None or probe is None or probe.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("unshare -n is not available: the agents run with loopback only in CI")
        pytest.skip("unshare -n is not available here (CI runs these tests)")
    return [unshare, "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"']


def onboard_claude(home: Path) -> None:
    """Claude Code's settings as after its first-run questions (theme, trusting the
    working folder), so its full-screen interface opens on the prompt."""
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "projects": {
                    str(home / "work"): {
                        "hasTrustDialogAccepted": True,
                        "hasCompletedProjectOnboarding": True,
                    }
                },
            }
        )
    )


class Pane:
    """One tmux session on a socket of its own in ``home``, running ``command``."""

    def __init__(self, tmux: str, home: Path, command: str, *, height: int, bound: float) -> None:
        self._tmux = tmux
        self._socket = str(home / "tmux.sock")
        self._bound = bound
        size = ("-x", "160", "-y", str(height))
        subprocess.run(
            self._command("new-session", "-d", *size, "-c", str(home / "work"), command),
            env=env(home),
            check=True,
            timeout=30,
        )

    def _command(self, *args: str) -> list[str]:
        return [self._tmux, "-S", self._socket, *args]

    def screen(self) -> str:
        shown = subprocess.run(
            self._command("capture-pane", "-p"),
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return shown.stdout

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first match of ``pattern`` on the screen, within the bound."""
        deadline = time.monotonic() + self._bound
        while time.monotonic() < deadline:
            found = re.search(pattern, self.screen())
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} never appeared:\n{self.screen()}")

    def enter(self, text: str) -> None:
        """Types ``text`` and then Enter, as a person would."""
        subprocess.run(self._command("send-keys", "-l", text), check=True)
        time.sleep(0.3)
        subprocess.run(self._command("send-keys", "Enter"), check=True)

    def keys(self, *keys: str) -> None:
        subprocess.run(self._command("send-keys", *keys), check=True)

    def kill(self) -> None:
        subprocess.run(self._command("kill-server"), check=False, timeout=30)
