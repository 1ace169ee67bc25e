"""The service's session/weekly rate-limit refusal reaches gateway clients as 429 in their
API's shape with Retry-After from the window's reset, and one readable line with the reset
time; any other 429 is relayed as it is (tests/gateway/test_relay.py)."""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path

import pytest

from copilot_host.testing import Faults, GitHubEmulator, RateWindow, RawAnswer, Scenario, Usage
from tests.gateway._support import running_gateway

pytestmark = pytest.mark.usefixtures("upstream_path")

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {
    "model": "claude-opus-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


def _refusal(code: str, *headers: tuple[str, str]) -> RawAnswer:
    body = {"error": {"message": "Sorry, you've exceeded your weekly rate limit.", "code": code}}
    return RawAnswer(
        429,
        json.dumps(body).encode(),
        headers=(("Content-Type", "application/json"), *headers),
    )


def _window(reset: float) -> str:
    rst = datetime.fromtimestamp(reset, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return urllib.parse.urlencode({"ent": "0", "rem": "0.0", "rst": rst})


def test_a_weekly_refusal_is_429_in_openai_shape_with_retry_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reset = time.time() + 3600
    refusal = _refusal("user_weekly_rate_limited", ("x-usage-ratelimit-weekly", _window(reset)))
    caplog.set_level(logging.WARNING, logger="copilot_host.gateway")
    with (
        GitHubEmulator(Scenario(faults=Faults(answers={"chat": refusal}))) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, headers, body = gateway.post("/v1/chat/completions", CHAT)
    assert status == 429
    # Whole seconds to the reset, counted from when the gateway answered.
    assert 3500 <= int(headers["retry-after"]) <= 3601
    assert body["error"]["type"] == "rate_limit_error"
    assert body["error"]["code"] == "user_weekly_rate_limited"
    when = datetime.fromtimestamp(reset, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    assert when in body["error"]["message"]
    lines = [r.getMessage() for r in caplog.records if "rate limit" in r.getMessage()]
    assert lines == [
        f"upstream refused: the account's weekly rate limit is reached; it resets at {when}"
    ]


def test_a_session_refusal_on_messages_is_in_anthropic_shape(tmp_path: Path) -> None:
    refusal = _refusal("user_session_rate_limited", ("Retry-After", "120"))
    with (
        GitHubEmulator(Scenario(faults=Faults(answers={"messages": refusal}))) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, headers, body = gateway.post("/v1/messages", MESSAGES)
    assert status == 429
    assert 119 <= int(headers["retry-after"]) <= 120
    assert body["type"] == "error"
    assert body["error"]["type"] == "rate_limit_error"
    assert "session rate limit" in body["error"]["message"]
    assert headers["content-length"] == str(len(json.dumps(body, ensure_ascii=False).encode()))


def test_the_emulators_spent_weekly_window_reaches_the_client_as_429(tmp_path: Path) -> None:
    usage = Usage(weekly_window=RateWindow(remaining=0.0, resets_in=7200))
    with (
        GitHubEmulator(Scenario(usage=usage)) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, headers, body = gateway.post("/v1/messages", MESSAGES)
        (record,) = emulator.requests_to("messages")
    assert (record.status, status) == (429, 429)
    assert 7000 <= int(headers["retry-after"]) <= 7200
    assert (body["type"], body["error"]["type"]) == ("error", "rate_limit_error")
    assert "weekly rate limit" in body["error"]["message"]
    # The window's own header still reaches the client.
    assert "x-usage-ratelimit-weekly" in headers
