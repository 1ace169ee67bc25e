"""``copilot-host serve --emulator``: the installed command, in a child process, with no test
seam at all: the emulated login lives in a throwaway folder, the user's home folder and
keyring are never touched, every line says "emulator", and answers are text only."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx2

from tests.gateway.test_serve import BOUND, _Lines
from tests.security._support import TOKEN_SHAPES

SCRIPT = Path(sys.executable).parent / "copilot-host"
TOOLS = [{"name": "Bash", "input_schema": {"type": "object", "properties": {}}}]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    # A home folder that must never be made, and a keyring that fails if anything asks.
    env["COPILOT_HOST_HOME"] = str(tmp_path / "never")
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    # The throwaway folder goes here, where the test can see it made and removed.
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    return env


def _finish(child: subprocess.Popen[bytes], out: _Lines, err: _Lines) -> tuple[str, str]:
    """Both pipes read to their end, then closed."""
    texts = out.text(), err.text()
    for pipe in (child.stdout, child.stderr):
        if pipe is not None:
            pipe.close()
    return texts


def _start(tmp_path: Path, *options: str) -> tuple[subprocess.Popen[bytes], _Lines, _Lines]:
    child = subprocess.Popen(
        [str(SCRIPT), "serve", "--emulator", "--port", "0", *options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    assert child.stdout is not None and child.stderr is not None
    return child, _Lines(child.stdout), _Lines(child.stderr)


def test_json_line_says_emulator_answers_are_text_and_nothing_of_the_user_is_touched(
    tmp_path: Path,
) -> None:
    log = tmp_path / "gateway.log"
    child, out, err = _start(tmp_path, "--json", "--log", str(log))
    try:
        line = json.loads(out.wait_for("listening"))
        assert set(line) == {"v", "event", "base_url", "api_key", "emulator"}
        assert line["emulator"] is True
        # The throwaway folder exists while it serves.
        (throwaway,) = (tmp_path / "tmp").iterdir()
        assert throwaway.name.startswith("copilot-host-emulator-")
        root = line["base_url"].removesuffix("/v1")
        headers = {"Authorization": f"Bearer {line['api_key']}"}
        with httpx2.Client(base_url=root, headers=headers, timeout=BOUND) as client:
            answer = client.post(
                "/v1/messages",
                json={
                    "model": "sonnet",
                    "max_tokens": 64,
                    "tools": TOOLS,
                    "messages": [{"role": "user", "content": "Say hello"}],
                },
            )
            models = client.get("/v1/models").json()
        assert answer.status_code == 200
        assert answer.headers["x-copilot-host-model"] == "claude-sonnet-5"
        # Tools were offered, yet the answer is text: an agent would run a tool call.
        assert answer.json()["content"] == [{"type": "text", "text": "echo: Say hello"}]
        assert "claude-opus-5" in {model["id"] for model in models["data"]}
    finally:
        child.send_signal(signal.SIGTERM)
        code = child.wait(BOUND)
    stdout, stderr = _finish(child, out, err)
    assert code == 143
    assert stdout.count("\n") == 1  # the listening line and nothing after it
    assert "copilot-host gateway (emulator) stopped after 2 requests; 1 model requests" in stderr
    assert " POST /v1/messages model=sonnet->claude-sonnet-5 status=200 " in stderr
    logged = log.read_text()
    assert " POST /v1/messages model=sonnet->claude-sonnet-5 status=200 " in logged
    assert re.search(
        r"copilot-host gateway \(emulator\) stopped after 2 requests; 1 model requests, "
        r"credits [\d.]+ \(by model, requests/credits: claude-sonnet-5 1/[\d.]+\)\n\Z",
        logged,
    )
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert line["api_key"] not in logged + stderr
    assert not TOKEN_SHAPES.search(logged + stderr + stdout)
    assert not (tmp_path / "never").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_banner_says_emulator_and_the_log_is_appended(tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    log.write_text("earlier line\n")
    log.chmod(0o644)
    child, out, err = _start(tmp_path, "--log", str(log))
    try:
        err.wait_for("One line per request follows")
        banner = err.text_so_far()
    finally:
        child.send_signal(signal.SIGINT)
        code = child.wait(BOUND)
        _finish(child, out, err)
    assert code == 130
    first = banner.splitlines()[0]
    assert re.fullmatch(
        r"copilot-host gateway \(emulator\) listening on http://127\.0\.0\.1:\d+/v1", first
    )
    assert "emulator: the models are the built-in emulator's" in banner
    assert "ANTHROPIC_AUTH_TOKEN=" in banner and "ANTHROPIC_API_KEY" not in banner
    assert "not logged in" not in banner
    assert log.read_text() == (
        "earlier line\ncopilot-host gateway (emulator) stopped after 0 requests; "
        "0 model requests, credits none reported\n"
    )
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert not (tmp_path / "never").exists()


def test_an_alias_to_a_model_the_emulator_lacks_is_a_usage_error_before_listening(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [
            str(SCRIPT),
            "serve",
            "--emulator",
            "--port",
            "0",
            "--json",
            "--model-alias",
            "fast=gpt-9",
            "--default-model",
            "gpt-10",
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=BOUND,
        check=False,
    )
    assert done.returncode == 2
    assert "listening" not in done.stdout
    assert "--model-alias fast=gpt-9: this account has no model 'gpt-9'" in done.stderr
    assert "--default-model gpt-10" in done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_misspelt_alias_is_a_usage_error(tmp_path: Path) -> None:
    for bad in ("fast", "=gpt-4.1", "fast="):
        done = subprocess.run(
            [str(SCRIPT), "serve", "--emulator", "--model-alias", bad],
            capture_output=True,
            text=True,
            env=_env(tmp_path)
            if bad == "fast"
            else {**os.environ, "TMPDIR": str(tmp_path / "tmp")},
            timeout=BOUND,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "is not NAME=MODEL" in done.stderr
