"""The loopback emulator itself: routing, scripting, records, canaries, lifecycle."""

from __future__ import annotations

import email.utils
import socket
import time

import httpx2
import pytest

from copilot_host.testing import ENDPOINTS, GitHubEmulator, RawAnswer, Scenario, chat_model


def test_scenario_is_frozen_and_checks_endpoint_names() -> None:
    scenario = Scenario(slow={"models": 1.0})
    with pytest.raises(AttributeError):
        scenario.pending_polls = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        scenario.slow["models"] = 2.0  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown emulated endpoint"):
        Scenario(malformed=frozenset({"nope"}))
    assert {"device_code", "models", "chat", "responses"} <= ENDPOINTS


def test_each_run_issues_fresh_canary_tokens() -> None:
    with GitHubEmulator() as first, GitHubEmulator() as second:
        assert first.github_token != second.github_token
        assert first.github_token.startswith("gho_")
        assert first.port != second.port


def test_the_server_listens_on_loopback_only_and_stops() -> None:
    emu = GitHubEmulator().start()
    port = emu.port
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    emu.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_requests_are_recorded_with_host_form_and_headers() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        client.post(
            "https://github.com/login/device/code",
            data={"client_id": "Iv1.test", "scope": "read:user"},
            headers={"Accept": "application/json"},
        )
        client.get("https://api.github.com/nowhere")
        first, second = emu.requests
    assert (first.method, first.host, first.path, first.endpoint) == (
        "POST",
        "github.com",
        "/login/device/code",
        "device_code",
    )
    assert dict(first.form or {}) == {"client_id": "Iv1.test", "scope": "read:user"}
    assert first.headers["accept"] == "application/json"
    assert (second.endpoint, second.path) == ("", "/nowhere")
    assert "form" not in repr(first) and "headers" not in repr(first)


def test_deny_after_pending() -> None:
    with (
        GitHubEmulator(Scenario(auto_approve=False)) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        code = client.post("https://github.com/login/device/code", data={"client_id": "x"}).json()[
            "device_code"
        ]
        form = {
            "client_id": "x",
            "device_code": code,
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        }
        url = "https://github.com/login/oauth/access_token"
        assert client.post(url, data=form).json()["error"] == "authorization_pending"
        emu.deny()
        assert client.post(url, data=form).json()["error"] == "access_denied"
        bad = {**form, "device_code": "guessed"}
        assert client.post(url, data=bad).json()["error"] == "incorrect_device_code"


def test_inference_checks_bearer_model_and_protocol() -> None:
    with (
        GitHubEmulator(Scenario(models=(chat_model("only-chat"),))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        exchange = client.get(
            "https://api.github.com/copilot_internal/v2/token",
            headers={"Authorization": f"token {emu.github_token}"},
        ).json()
        base = exchange["endpoints"]["api"]
        good = {
            "Authorization": f"Bearer {exchange['token']}",
            "Copilot-Integration-Id": "vscode-chat",
        }
        body = {"model": "only-chat", "messages": [{"role": "user", "content": "hi"}]}
        assert client.post(f"{base}/chat/completions", json=body, headers=good).status_code == 200
        assert (
            client.post(f"{base}/responses", json={"model": "only-chat"}, headers=good).status_code
            == 400
        )
        assert (
            client.post(
                f"{base}/chat/completions", json={"model": "other"}, headers=good
            ).status_code
            == 400
        )
        wrong = {**good, "Authorization": "Bearer tid=forged"}
        assert client.post(f"{base}/chat/completions", json=body, headers=wrong).status_code == 401
        emu.revoke_sessions()
        assert client.post(f"{base}/chat/completions", json=body, headers=good).status_code == 401


def test_clock_skew_moves_the_date_header_and_expiry() -> None:
    with (
        GitHubEmulator(Scenario(clock_skew=-3600, session_lifetime=600)) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        answer = client.get(
            "https://api.github.com/copilot_internal/v2/token",
            headers={"Authorization": f"token {emu.github_token}"},
        )
    server_now = email.utils.parsedate_to_datetime(answer.headers["Date"]).timestamp()
    assert server_now == pytest.approx(time.time() - 3600, abs=30)
    assert answer.json()["expires_at"] == pytest.approx(server_now + 600, abs=2)


def test_raw_answers_replace_an_endpoint() -> None:
    raw = RawAnswer(418, b"teapot", (("Content-Type", "text/plain"),))
    with (
        GitHubEmulator(Scenario(answers={"user": raw})) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        answer = client.get("https://api.github.com/user")
    assert (answer.status_code, answer.content) == (418, b"teapot")
