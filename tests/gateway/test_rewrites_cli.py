"""``COPILOT_HOST_REWRITES`` as ``serve`` reads it: the installed command in a child process
(``serve --emulator``), its access line naming each rewrite, and a bad value refused."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import httpx2

from tests.gateway.test_serve import BOUND, _Lines
from tests.gateway.test_serve_emulator import SCRIPT, _env, _finish

BILLING = {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"}
BODY = {
    "model": "claude-opus-5-5",
    "max_tokens": 128000,
    "system": [BILLING, {"type": "text", "text": "You are Claude."}],
    "messages": [{"role": "user", "content": "Say hello"}],
}


def _serve(tmp_path: Path, rewrites: str | None) -> tuple[list[int], str]:
    env = _env(tmp_path)
    if rewrites is not None:
        env["COPILOT_HOST_REWRITES"] = rewrites
    child = subprocess.Popen(
        [str(SCRIPT), "serve", "--emulator", "--port", "0", "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    out, err = _Lines(child.stdout), _Lines(child.stderr)
    try:
        line = json.loads(out.wait_for("listening"))
        root = line["base_url"].removesuffix("/v1")
        headers = {"Authorization": f"Bearer {line['api_key']}", "anthropic-version": "2023-06-01"}
        with httpx2.Client(base_url=root, headers=headers, timeout=BOUND) as client:
            statuses = [
                client.post("/v1/messages", json=BODY).status_code,
                client.post("/v1/messages/count_tokens", json=BODY).status_code,
            ]
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(BOUND)
    _, stderr = _finish(child, out, err)
    return statuses, stderr


def test_serve_names_each_rewrite_in_the_access_line(tmp_path: Path) -> None:
    statuses, stderr = _serve(tmp_path, None)
    assert statuses == [200, 200]
    assert " rewrote=billing-header,max_tokens\n" in stderr
    assert "cc_version" not in stderr  # never a body value


def test_copilot_host_rewrites_turns_rewrites_off(tmp_path: Path) -> None:
    statuses, stderr = _serve(tmp_path, "-billing-header,-count-tokens")
    # The emulator refuses the billing block the gateway now forwards; count_tokens is 404.
    assert statuses == [400, 404]
    line = stderr.split("POST /v1/messages ")[1].splitlines()[0]
    assert line.endswith(" rewrote=max_tokens")  # the one left on that applied


def test_a_bad_copilot_host_rewrites_is_a_usage_error(tmp_path: Path) -> None:
    env = {**_env(tmp_path), "COPILOT_HOST_REWRITES": "billing-header"}
    done = subprocess.run(
        [str(SCRIPT), "serve", "--emulator", "--port", "0", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=BOUND,
        check=False,
    )
    assert done.returncode == 2
    assert "listening" not in done.stdout
    assert "COPILOT_HOST_REWRITES lists rewrites to turn off as -name,-name" in done.stderr
