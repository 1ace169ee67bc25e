"""The real coding agents, as npm installs them (.ci/run pins them), through
``copilot-host run --emulator``, each with a throwaway HOME and pointed only at loopback.

Each test asserts the agent's exit status, the emulator's echo on stdout, and from the
``--log`` file which model served the name the agent asked for. Every model request in the
log answered 200: the emulator refuses an ``anthropic-beta`` outside the list the service
serves (and a string ``system``) with 400, so a 200 shows none reached it.

Where an agent is not installed these tests skip, except in CI (``CI`` set), where a missing
agent fails them: the suite must prove the agents work, not that they were absent. They are
marked ``agents``: ``pytest -m "not agents"`` leaves them out.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from copilot_host.gateway._agents._codex import CODEX_MIGRATIONS, CODEX_VERSION
from tests.agents._harness import (
    REQUEST,
    SCRIPT,
    Pane,
    agent,
    env,
    isolated,
    onboard_claude,
    run_in,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow]

BOUND = 120.0


def _run(
    home: Path, *command: str
) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, ...]]]:
    log = home / "gateway.log"
    done = run_in(
        home, [str(SCRIPT), "run", "--emulator", "--log", str(log), "--", *command], bound=BOUND
    )
    requests = [match.groups() for match in REQUEST.finditer(log.read_text())]
    return done, requests


def _full_screen(home: Path, program: str, *, height: int = 50) -> tuple[Pane, Path]:
    """``run --emulator`` of ``program`` in tmux, inside a network namespace with only
    loopback; the pane and the gateway's log file."""
    tmux = agent("tmux")
    log = home / "gateway.log"
    inside = " ".join(shlex.quote(part) for part in isolated())
    inner = f"{inside} {SCRIPT} run --emulator --log {log} -- {program}; sleep 60"
    return Pane(tmux, home, inner, height=height, bound=BOUND), log


def _run_isolated(
    home: Path, *command: str
) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, ...]]]:
    """As :func:`_run`, in a network namespace with only loopback (Qwen Code would wait on
    the network otherwise)."""
    log = home / "gateway.log"
    run = [str(SCRIPT), "run", "--emulator", "--log", str(log), "--", *command]
    done = run_in(home, [*isolated(), *run], bound=BOUND)
    requests = [match.groups() for match in REQUEST.finditer(log.read_text())]
    return done, requests


def _served(requests: list[tuple[str, ...]], path: str) -> set[str]:
    """The models that served the requests on ``path``, each of which answered 200."""
    on_path = [r for r in requests if r[0] == path]
    assert on_path, requests
    assert all(r[3] == "200" for r in on_path), requests
    return {r[2] or r[1] for r in on_path}


# -- Claude Code ---------------------------------------------------------------------------


def test_claude_headless_with_no_model_option(home: Path) -> None:
    claude = agent("claude")
    done, requests = _run(home, claude, "-p", "Say hello")
    assert done.returncode == 0, done.stderr
    assert "echo:" in done.stdout and "Say hello" in done.stdout
    # Claude Code asks for its own default opus name; the newest opus served it.
    assert _served(requests, "/v1/messages") == {"claude-opus-5"}
    asked = {r[1] for r in requests if r[0] == "/v1/messages"}
    assert all(name.startswith("claude-opus-") for name in asked), asked


def test_claude_headless_with_model_sonnet(home: Path) -> None:
    claude = agent("claude")
    done, requests = _run(home, claude, "-p", "Say hello", "--model", "sonnet")
    assert done.returncode == 0, done.stderr
    assert "echo:" in done.stdout and "Say hello" in done.stdout
    assert _served(requests, "/v1/messages") == {"claude-sonnet-5"}


def test_claude_headless_with_a_dated_claude_id(home: Path) -> None:
    claude = agent("claude")
    done, requests = _run(home, claude, "-p", "Say hi", "--model", "claude-haiku-4-5-20251001")
    assert done.returncode == 0, done.stderr
    assert "echo:" in done.stdout and "Say hi" in done.stdout
    assert _served(requests, "/v1/messages") == {"claude-haiku-4.5"}
    assert ("/v1/messages", "claude-haiku-4-5-20251001", "claude-haiku-4.5", "200") in requests


def test_claude_interactive_in_a_terminal(home: Path) -> None:
    """One prompt in Claude Code's full-screen interface, in tmux, then Ctrl-C twice."""
    claude = agent("claude")
    tmux = agent("tmux")
    onboard_claude(home)
    log = home / "gateway.log"
    status = home / "status"
    inner = f"{SCRIPT} run --emulator --log {log} -- {claude}; echo $? > {status}; sleep 60"
    # The emulator echoes the whole user turn, which since the gateway folds Claude Code's
    # "# Environment" system message into it runs to a hundred lines or more: a pane tall
    # enough keeps the echo's start on the screen capture-pane reads.
    pane = Pane(tmux, home, inner, height=300, bound=BOUND)
    try:
        pane.wait_for("❯")
        pane.enter("Say hello from tmux")
        pane.wait_for("echo:")
        for _ in range(2):
            pane.keys("C-c")
            time.sleep(0.5)
        deadline = time.monotonic() + BOUND
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status.exists(), pane.screen()
    finally:
        pane.kill()
    # Ctrl-C reached Claude Code (which exits on the second), not run: exit 0.
    assert status.read_text().strip() == "0"
    requests = [match.groups() for match in REQUEST.finditer(log.read_text())]
    assert "claude-opus-5" in _served(requests, "/v1/messages")


def test_claudes_model_picker_shows_the_accounts_claude_models(home: Path) -> None:
    """``/model`` in the full-screen interface lists the account's Claude models (its
    gateway model discovery, which run's profile turns on, reads ``GET /v1/models`` in
    Anthropic's shape) and the Haiku entry is the cheapest of them (the background model
    the profile names)."""
    claude = agent("claude")
    onboard_claude(home)
    pane, log = _full_screen(home, claude, height=60)
    try:
        pane.wait_for("❯")
        pane.enter("/model")
        pane.wait_for("From gateway")
        shown = pane.screen()
    finally:
        pane.kill()
    assert re.search(r"claude-haiku-4\.5\s+Custom Haiku model", shown), shown
    for name in ("Claude Opus 5 ", "Claude Sonnet 4.6"):
        assert re.search(re.escape(name) + r"\s+From gateway", shown), shown
    # Only Claude models: Claude Code keeps no other id, and the gateway shows an
    # Anthropic client only the models it can call on /v1/messages.
    assert "GPT" not in shown and "Gemini" not in shown
    assert " GET /v1/models model=- status=200 " in log.read_text()


def test_an_emulator_script_drives_claude_through_read_edit_and_a_shell(home: Path) -> None:
    """README's ``--emulator-script`` example, as written there: Claude Code reads, edits
    and prints a file of the working folder for real, offline."""
    claude = agent("claude")
    notes = home / "work" / "notes.txt"
    notes.write_text("colour: red\n")
    (home / "work" / "tools.json").write_text(
        json.dumps(
            [
                {"name": "Read", "arguments": {"file_path": "notes.txt"}},
                {
                    "name": "Edit",
                    "arguments": {
                        "file_path": "notes.txt",
                        "old_string": "red",
                        "new_string": "blue",
                    },
                },
                {"name": "Bash", "arguments": {"command": "cat notes.txt > shown.txt"}},
            ]
        )
    )
    log = home / "gateway.log"
    run = [str(SCRIPT), "run", "--emulator", "--emulator-script", "tools.json"]
    command = [*run, "--log", str(log), "--", claude, "-p", "Make it blue"]
    done = run_in(home, [*isolated(), *command, "--allowedTools", "Read,Edit,Bash"], bound=BOUND)
    assert done.returncode == 0, done.stderr
    assert notes.read_text() == "colour: blue\n"
    assert (home / "work" / "shown.txt").read_text() == "colour: blue\n"
    requests = [match.groups() for match in REQUEST.finditer(log.read_text())]
    # The three calls and the text after them, each answered 200.
    assert len([r for r in requests if r[0] == "/v1/messages"]) == 4
    assert _served(requests, "/v1/messages") == {"claude-opus-5"}


# -- Codex CLI -----------------------------------------------------------------------------


def test_codex_exec_with_no_model(home: Path) -> None:
    codex = agent("codex")
    done, requests = _run(home, codex, "exec", "--skip-git-repo-check", "Say hello")
    assert done.returncode == 0, done.stderr
    assert "echo: Say hello" in done.stdout
    # run chose the newest Responses model Codex ships metadata for, and Codex did not
    # warn that it falls back to metadata of its own.
    assert _served(requests, "/v1/responses") == {"gpt-5.6-luna"}
    assert "Model metadata for" not in done.stderr


def test_codex_exec_with_a_model(home: Path) -> None:
    codex = agent("codex")
    done, requests = _run(
        home, codex, "exec", "--skip-git-repo-check", "-m", "gpt-5.5", "Say hello"
    )
    assert done.returncode == 0, done.stderr
    assert "echo: Say hello" in done.stdout
    assert _served(requests, "/v1/responses") == {"gpt-5.5"}


def test_codex_migrations_are_the_installed_codexs(home: Path) -> None:
    """The profile's migration table is what the installed Codex offers: `codex debug
    models --bundled`, each model's ``upgrade.model``."""
    codex = agent("codex")
    version = subprocess.run(
        [codex, "--version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()[-1]
    assert version == CODEX_VERSION
    listed = subprocess.run(
        [codex, "debug", "models", "--bundled"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env(home),
    )
    upgrades = {
        model["slug"]: model["upgrade"]["model"]
        for model in json.loads(listed.stdout)["models"]
        if model.get("upgrade")
    }
    assert upgrades == dict(CODEX_MIGRATIONS[version])


def test_codex_interactive_in_a_terminal_answers_its_first_prompt(home: Path) -> None:
    """Codex's full-screen interface through ``run --emulator`` with no flag of the
    person's: it opens on its prompt (no screen offering a model the account lacks) and
    the first prompt is answered by the model the profile chose."""
    codex = agent("codex")
    pane, log = _full_screen(home, codex)
    try:
        pane.wait_for("Ask Codex to do anything")
        assert "Meet GPT" not in pane.screen()
        pane.enter("Say hello from tmux")
        pane.wait_for("echo: Say hello from tmux")
    finally:
        pane.kill()
    requests = [match.groups() for match in REQUEST.finditer(log.read_text())]
    assert _served(requests, "/v1/responses") == {"gpt-5.6-luna"}


# -- Qwen Code -----------------------------------------------------------------------------

# The emulator echoes the whole user turn, which Qwen Code ends with the prompt after its
# own reminders: the echo's last line.
QWEN_ECHO = "</system-reminder>{}"


def test_qwen_headless_with_no_flag(home: Path) -> None:
    """With no flag and no settings: run's profile gives it the model (and with it Qwen
    Code's OpenAI auth type) and its output limit."""
    qwen = agent("qwen")
    done, requests = _run_isolated(home, qwen, "-p", "Say hello")
    assert done.returncode == 0, done.stderr
    assert QWEN_ECHO.format("Say hello") in done.stdout
    assert _served(requests, "/v1/chat/completions") == {"gpt-5-mini"}


def test_qwen_interactive_in_a_terminal_with_no_flag(home: Path) -> None:
    qwen = agent("qwen")
    pane, log = _full_screen(home, qwen)
    try:
        # No auth dialog: the model is shown and the prompt is ready.
        pane.wait_for(r"API Key \| gpt-5-mini")
        pane.wait_for("Type your message")
        pane.enter("Say hello from tmux")
        pane.wait_for(re.escape(QWEN_ECHO.format("Say hello from tmux")))
    finally:
        pane.kill()
    requests = [match.groups() for match in REQUEST.finditer(log.read_text())]
    assert _served(requests, "/v1/chat/completions") == {"gpt-5-mini"}


# -- what reached the service --------------------------------------------------------------


def test_no_beta_outside_the_served_list_reaches_the_service(home: Path) -> None:
    """Claude Code through ``run`` on a login of an emulator in this process that lets
    every beta through (check ``anthropic_beta`` off): what the gateway forwarded is on
    the emulator's record, and it is only the served betas."""
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing import GitHubEmulator, Replies, Scenario
    from copilot_host.testing._betas import SERVED_BETAS

    claude = agent("claude")
    scenario = Scenario(replies=Replies(tool_calls=False), lenient=frozenset({"anthropic_beta"}))
    store_home = home / "copilot-host"
    with GitHubEmulator(scenario) as emulator:
        with GitHubCopilotHost(
            store=CredentialStore(store_home, key_file=True), transport=emulator.transport()
        ) as person:
            person.login(sleep=lambda _seconds: None)
        done = run_in(
            home,
            [
                sys.executable,
                str(Path(__file__).resolve().parent / "run_child.py"),
                str(emulator.port),
                "--",
                claude,
                "-p",
                "Say hello",
                "--model",
                "sonnet",
            ],
            bound=BOUND,
        )
        sent = emulator.requests_to("messages")
    assert done.returncode == 0, done.stderr
    assert "echo:" in done.stdout and "Say hello" in done.stdout
    assert sent
    for record in sent:
        betas = {b.strip() for b in record.headers.get("anthropic-beta", "").split(",") if b}
        assert betas <= SERVED_BETAS, betas - SERVED_BETAS
        assert json.loads(record.body)["model"] == "claude-sonnet-5"
