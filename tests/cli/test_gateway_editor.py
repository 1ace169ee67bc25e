"""``COPILOT_HOST_EDITOR`` on the two commands that start a gateway: ``run`` (through the
CLI's test seam, and with ``--emulator``) and ``serve`` (in a child process) present the
identity it names on every request upstream, the exchange, the model list and inference
alike; a malformed value is a usage error before anything starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from copilot_host_cli._context import CliSeam

import copilot_host.testing
from copilot_host.github import DEFAULT_EDITOR, AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, RecordedRequest

from .conftest import Cli

ROOT = Path(__file__).resolve().parents[2]
COMMAND = ROOT / "tests" / "security" / "run_command.py"  # a chat and a Messages request
SERVE_CHILD = ROOT / "tests" / "gateway" / "serve_child.py"
NEWER = "vscode/1.150.2 copilot-chat/0.78.1"
UPSTREAM = {"copilot_token", "models", "chat", "messages"}


def _presented_newer(requests: tuple[RecordedRequest, ...]) -> None:
    seen = [r for r in requests if r.endpoint in UPSTREAM]
    # The gateway registered (exchange, model list) and relayed both model requests.
    assert {r.endpoint for r in seen} == UPSTREAM
    for request in seen:
        assert request.headers["editor-version"] == "vscode/1.150.2", request.endpoint
        assert request.headers["editor-plugin-version"] == "copilot-chat/0.78.1"
        assert request.headers["user-agent"].startswith("GitHubCopilotChat/0.78.1 ")
    # The API version is copilot-host's own, whatever the identity.
    (models, *_rest) = [r for r in seen if r.endpoint == "models"]
    assert models.headers["x-github-api-version"] == DEFAULT_EDITOR.api_version


def _run_command(
    cli: Cli, tmp_path: Path, *options: str, seam: CliSeam | None = None
) -> dict[str, Any]:
    report = tmp_path / "report.json"
    home = tmp_path / "agent-home"
    home.mkdir(exist_ok=True)
    result = cli(
        "run",
        *options,
        "--",
        sys.executable,
        str(COMMAND),
        str(report),
        seam=seam,
        env={"HOME": str(home), "COPILOT_HOST_EDITOR": NEWER},
    )
    assert result.exit_code == 0, result.stderr
    seen: dict[str, Any] = json.loads(report.read_text())
    assert seen["statuses"] == [200, 200]
    return seen


@pytest.mark.usefixtures("copilot_home")
def test_run_presents_the_identity_upstream(cli: Cli, emulate: Any, tmp_path: Path) -> None:
    env = emulate()
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    emulator = env.emulator
    made: list[Any] = []

    def host(*, store: Any, clock: Any, **extra: Any) -> AsyncGitHubCopilotHost:
        made.append(extra.get("editor"))
        return AsyncGitHubCopilotHost(store=store, transport=emulator.async_transport(), **extra)

    seam = CliSeam(async_host_factory=host, upstream_transport=emulator.async_transport)
    before = len(emulator.requests)
    _run_command(cli, tmp_path, seam=seam)
    assert len(made) == 1 and made[0] is not None
    _presented_newer(emulator.requests[before:])


def test_run_with_the_emulator_presents_it_to_the_emulator(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--emulator builds its own emulator: a recording subclass keeps it for the test."""
    built: list[GitHubEmulator] = []

    class Kept(GitHubEmulator):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(copilot_host.testing, "GitHubEmulator", Kept)
    _run_command(cli, tmp_path, "--emulator")
    (emulator,) = built
    _presented_newer(emulator.requests)
    # The emulated login presented it too.
    (code,) = emulator.requests_to("device_code")
    assert code.headers["editor-version"] == "vscode/1.150.2"


def test_serve_presents_the_identity_upstream(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with GitHubEmulator() as emulator:
        with GitHubCopilotHost(
            store=CredentialStore(home, key_file=True), transport=emulator.transport()
        ) as person:
            person.login(sleep=lambda _seconds: None)
        before = len(emulator.requests)
        env = {
            **os.environ,
            "COPILOT_HOST_HOME": str(home),
            "COPILOT_HOST_EDITOR": NEWER,
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        child = subprocess.Popen(
            [sys.executable, str(SERVE_CHILD), str(emulator.port), "--port", "0", "--json"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            assert child.stdout is not None
            listening = json.loads(child.stdout.readline())
            base_url, key = listening["base_url"], listening["api_key"]
            headers = {"Authorization": f"Bearer {key}"}
            with httpx2.Client(timeout=30) as client:
                chat = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
                answer = client.post(f"{base_url}/chat/completions", json=chat, headers=headers)
                assert answer.status_code == 200, answer.text
                message = {**chat, "model": "sonnet", "max_tokens": 8}
                answer = client.post(f"{base_url}/messages", json=message, headers=headers)
                assert answer.status_code == 200, answer.text
            child.send_signal(signal.SIGTERM)
            _out, stderr = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert child.returncode == 143, stderr
        _presented_newer(emulator.requests[before:])


@pytest.mark.parametrize("value", ["vscode/1.150.2", "vscode/latest copilot-chat/0.78.1"])
def test_a_malformed_identity_stops_run_before_the_command_starts(
    cli: Cli, tmp_path: Path, value: str
) -> None:
    ran = tmp_path / "ran"
    touch = f"import pathlib; pathlib.Path({str(ran)!r}).touch()"
    result = cli(
        "run",
        "--emulator",
        "--",
        sys.executable,
        "-c",
        touch,
        env={"COPILOT_HOST_EDITOR": value},
    )
    assert result.exit_code == 2
    assert "COPILOT_HOST_EDITOR" in result.stderr
    assert result.stdout == ""
    assert not ran.exists()  # the command never ran


def test_a_malformed_identity_stops_serve_before_it_listens(cli: Cli, tmp_path: Path) -> None:
    result = cli(
        "serve",
        "--emulator",
        "--port",
        "0",
        "--json",
        env={"COPILOT_HOST_EDITOR": "copilot-chat/0.78.1 vscode/1.150.2"},
    )
    assert result.exit_code == 2
    assert "COPILOT_HOST_EDITOR" in result.stderr
    assert result.stdout == ""  # it never listened
