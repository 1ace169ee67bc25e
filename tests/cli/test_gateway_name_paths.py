"""Model-name paths of ``run`` and ``serve`` that only show across registrations: an alias
whose model the account loses (run: the warning as its ``--log`` file has it), and
``serve --model-alias`` started with no login (it listens; each registration checks the
aliases, one warning line each; the alias answers 404 naming both)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from copilot_host_cli._context import CliSeam

from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import DeviceFlow, GitHubEmulator, Inventory, Scenario, chat_model
from tests.gateway._support import Switch

from .conftest import Cli

ROOT = Path(__file__).resolve().parents[2]
CHILD = ROOT / "tests" / "cli" / "run_child.py"
SERVE_CHILD = ROOT / "tests" / "gateway" / "serve_child.py"
BOUND = 30.0
GONE = "--model-alias fast=gpt-4.1: this account has no model 'gpt-4.1' (requests for it get 404)"


def _log_in(home: Path, emulator: GitHubEmulator, **store: Any) -> None:
    with GitHubCopilotHost(
        store=CredentialStore(home, **store), transport=emulator.transport()
    ) as person:
        person.login(sleep=lambda _seconds: None)


def test_run_logs_one_warning_when_an_aliass_model_is_gone_after_a_new_login(
    cli: Cli, copilot_home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The person logs in to another account (mona's, without gpt-4.1) while the command
    runs: the next registration writes one warning line to run's --log file, and the
    alias answers 404 naming both names from then on."""
    mona = Scenario(
        login=DeviceFlow(account="mona"), inventory=Inventory(models=(chat_model("mona-model"),))
    )
    which = [0]
    with GitHubEmulator() as octocat_github, GitHubEmulator(mona) as mona_github:
        _log_in(copilot_home, octocat_github)

        def transport() -> Switch:
            return Switch(which, octocat_github.async_transport(), mona_github.async_transport())

        seam = CliSeam(
            async_host_factory=lambda *, store, clock: AsyncGitHubCopilotHost(
                store=store, transport=transport()
            ),
            upstream_transport=transport,
        )
        ready, go, log = tmp_path / "ready", tmp_path / "go", tmp_path / "run.log"

        def other_account() -> None:
            deadline = time.monotonic() + BOUND
            while not ready.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            _log_in(copilot_home, mona_github)
            which[0] = 1
            go.touch()

        person = threading.Thread(target=other_account)
        person.start()
        try:
            result = cli(
                "run",
                "--model-alias",
                "fast=gpt-4.1",
                "--log",
                str(log),
                "--",
                sys.executable,
                str(CHILD),
                "relogin",
                "fast",
                str(ready),
                str(go),
                seam=seam,
                env={"HOME": str(tmp_path)},
            )
        finally:
            person.join(BOUND)
        assert result.exit_code == 0, result.stderr
        assert result.stderr == ""  # run's terminal stays the command's
        assert len(mona_github.requests_to("models")) == 1  # the second registration
    # The command wrote to this process's descriptors (click's runner does not see them).
    answers = json.loads(capfd.readouterr()[0])["answers"]
    assert answers[0] == [200, None]
    for status, message in answers[1:]:
        assert status == 404
        assert "'fast'" in message and "'gpt-4.1'" in message
    lines = log.read_text().splitlines()
    warnings = [line for line in lines if "--model-alias" in line]
    # One line for the one registration that lost the model; timestamped like the rest.
    assert len(warnings) == 1 and warnings[0].split(" ", 1)[1] == GONE
    assert lines[-1].startswith("copilot-host gateway stopped after 3 requests")


def test_serve_with_aliases_and_no_login_listens_and_checks_them_at_each_registration(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    log = tmp_path / "serve.log"
    gone = "--model-alias fast=gpt-9: this account has no model 'gpt-9' (requests for it get 404)"
    with GitHubEmulator() as emulator:
        env = {
            **os.environ,
            "COPILOT_HOST_HOME": str(home),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        options = ["--port", "0", "--json", "--log", str(log)]
        options += ["--model-alias", "fast=gpt-9", "--model-alias", "ok=gpt-4.1"]
        child = subprocess.Popen(
            [sys.executable, str(SERVE_CHILD), str(emulator.port), *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            assert child.stdout is not None
            # No login at start: an alias cannot be checked yet, so it listens anyway.
            listening = json.loads(child.stdout.readline())
            assert listening["event"] == "listening"
            base_url = listening["base_url"]
            headers = {"Authorization": f"Bearer {listening['api_key']}"}

            def ask(model: str) -> tuple[int, dict[str, Any]]:
                body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
                answer = client.post(f"{base_url}/chat/completions", json=body, headers=headers)
                return answer.status_code, answer.json()

            with httpx2.Client(timeout=BOUND) as client:
                assert ask("ok")[0] == 503  # not logged in
                for _registration in range(2):
                    # A login (the second time: logged out and in again) is a registration.
                    CredentialStore(home, key_file=True).delete()
                    _log_in(home, emulator, key_file=True)
                    for _request in range(2):
                        status, body = ask("fast")
                        assert status == 404
                        message = body["error"]["message"]
                        assert "'fast'" in message and "'gpt-9'" in message
                        assert ask("ok")[0] == 200
            child.send_signal(signal.SIGTERM)
            _out, stderr = child.communicate(timeout=BOUND)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert child.returncode == 143, stderr
        assert len(emulator.requests_to("models")) == 2
    # One warning line per registration, on stderr and in the log file alike.
    shown = [line for line in stderr.decode().splitlines() if "--model-alias" in line]
    assert len(shown) == 2 and all(line.endswith(gone) for line in shown)
    logged = [line for line in log.read_text().splitlines() if "--model-alias" in line]
    assert [line.split(" ", 1)[1] for line in logged] == [gone, gone]
