"""A client outside Python: curl, as people paste it from the README, against a real
gateway. It runs wherever curl is on PATH (.ci/run installs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.gateway._support import Gateway

CURL = shutil.which("curl")
# CI installs curl, so there a missing curl fails instead of skipping quietly.
pytestmark = pytest.mark.skipif(
    CURL is None and not os.environ.get("CI"), reason="curl is not installed"
)


def _curl(*args: str) -> tuple[int, str]:
    """Runs curl; returns the HTTP status and the body."""
    assert CURL is not None
    done = subprocess.run(
        [
            CURL,
            "--silent",
            "--show-error",
            "--noproxy",
            "*",
            "--max-time",
            "30",
            "--write-out",
            "\n%{http_code}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    body, _, status = done.stdout.rpartition("\n")
    return int(status), body


def test_curl_lists_models_chats_streams_and_is_refused_without_the_key(
    gateway: Gateway,
) -> None:
    key = f"Authorization: Bearer {gateway.key}"
    status, body = _curl(f"{gateway.base_url}/models", "-H", key)
    assert status == 200
    assert "gpt-4.1" in {m["id"] for m in json.loads(body)["data"]}

    chat = json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": "curl"}]})
    status, body = _curl(
        f"{gateway.base_url}/chat/completions",
        "-H",
        key,
        "-H",
        "Content-Type: application/json",
        "-d",
        chat,
    )
    assert status == 200
    assert json.loads(body)["choices"][0]["message"]["content"] == "echo: curl"

    stream = json.dumps(
        {"model": "gpt-4.1", "stream": True, "messages": [{"role": "user", "content": "sse"}]}
    )
    status, body = _curl(
        "--no-buffer",
        f"{gateway.base_url}/chat/completions",
        "-H",
        key,
        "-H",
        "Content-Type: application/json",
        "-d",
        stream,
    )
    assert status == 200
    events = [line[len("data: ") :] for line in body.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    text = "".join(
        choice["delta"].get("content") or ""
        for event in events[:-1]
        for choice in json.loads(event)["choices"]
    )
    assert text == "echo: sse"

    # Anthropic's way: x-api-key and the version header, on the same base URL's /v1/messages.
    message = json.dumps(
        {"model": "claude-opus-5", "max_tokens": 16, "messages": [{"role": "user", "content": "m"}]}
    )
    status, body = _curl(
        f"{gateway.base_url}/messages",
        "-H",
        f"x-api-key: {gateway.key}",
        "-H",
        "anthropic-version: 2023-06-01",
        "-H",
        "content-type: application/json",
        "-d",
        message,
    )
    assert status == 200
    assert json.loads(body)["content"][0]["text"] == "echo: m"

    status, body = _curl(f"{gateway.base_url}/models")
    assert status == 401
    assert json.loads(body)["error"]["code"] == "invalid_api_key"
    # curl always sends its own Host; with another name it is refused as a rebinding page's.
    status, body = _curl(f"{gateway.base_url}/models", "-H", key, "-H", "Host: evil.example")
    assert status == 421
    gateway.seen.append(("curl", body))
