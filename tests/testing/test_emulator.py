"""The loopback emulator itself: routing, scripting, records, canaries, lifecycle."""

from __future__ import annotations

import email.utils
import re
import socket
import time
import urllib.parse
import uuid

import httpx2
import pytest

from copilot_host.testing import (
    ENDPOINTS,
    DeviceFlow,
    Faults,
    GitHubEmulator,
    Inventory,
    RawAnswer,
    Scenario,
    Session,
    chat_model,
)
from tests.testing._support import copilot


def test_scenario_is_frozen_and_checks_endpoint_names() -> None:
    floors = {"m": "1.0"}
    scenario = Scenario(
        inventory=Inventory(min_editor_version=floors),
        faults=Faults(slow={"models": 1.0}, drip={"user": 0.1}),
    )
    with pytest.raises(AttributeError):
        scenario.login = DeviceFlow(pending_polls=3)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        scenario.login.pending_polls = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        scenario.faults.slow["models"] = 2.0  # type: ignore[index]
    with pytest.raises(TypeError):
        scenario.faults.drip["user"] = 2.0  # type: ignore[index]
    floors["m"] = "9.0"  # the caller's dict is copied
    assert scenario.inventory.min_editor_version == {"m": "1.0"}
    with pytest.raises(ValueError, match="unknown emulated endpoint"):
        Scenario(faults=Faults(malformed=frozenset({"nope"})))
    assert {"device_code", "models", "chat", "responses", "messages"} <= ENDPOINTS


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
    accept = {"Accept": "application/json"}
    with (
        GitHubEmulator(Scenario(login=DeviceFlow(auto_approve=False))) as emu,
        httpx2.Client(transport=emu.transport(), headers=accept) as client,
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


def test_a_device_code_answers_only_the_app_that_asked_for_it_and_once() -> None:
    accept = {"Accept": "application/json"}
    with (
        GitHubEmulator() as emu,
        httpx2.Client(transport=emu.transport(), headers=accept) as client,
    ):
        code = client.post(
            "https://github.com/login/device/code", data={"client_id": "Iv1.app"}
        ).json()["device_code"]
        url = "https://github.com/login/oauth/access_token"
        form = {
            "client_id": "Iv1.app",
            "device_code": code,
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        }
        for other in ({**form, "client_id": "Ov23.other"}, {**form, "client_id": ""}):
            assert client.post(url, data=other).json()["error"] == "incorrect_client_credentials"
        assert client.post(url, data=form).json()["access_token"] == emu.github_token
        assert client.post(url, data=form).json()["error"] == "incorrect_device_code"


def test_refused_urls_keep_no_credentials() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        with pytest.raises(httpx2.ConnectError):
            client.get("https://user:ghp_hidden@evil.example:8443/p?token=hidden#hidden")
        assert emu.refused == ("https://evil.example:8443/p",)


def test_device_endpoints_answer_a_form_unless_json_is_asked_for() -> None:
    """github.com answers the device flow form-encoded; JSON only for Accept: application/json.
    It also takes a JSON request body."""
    form_type = "application/x-www-form-urlencoded; charset=utf-8"
    with (
        GitHubEmulator(Scenario(login=DeviceFlow(pending_polls=1))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        started = client.post("https://github.com/login/device/code", data={"client_id": "x"})
        assert started.headers["content-type"] == form_type
        fields = dict(urllib.parse.parse_qsl(started.text))
        assert fields["verification_uri"] == "https://github.com/login/device"
        assert (fields["user_code"], fields["interval"]) == ("WDJB-MJHT", "5")
        poll = {
            "client_id": "x",
            "device_code": fields["device_code"],
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        }
        url = "https://github.com/login/oauth/access_token"
        pending = client.post(url, data=poll)
        assert (pending.status_code, pending.headers["content-type"]) == (200, form_type)
        assert dict(urllib.parse.parse_qsl(pending.text)) == {"error": "authorization_pending"}
        granted = client.post(url, json=poll, headers={"Accept": "application/json"})
        assert granted.headers["content-type"] == "application/json; charset=utf-8"
        assert granted.json()["access_token"] == emu.github_token
    assert emu.requests_to("access_token")[-1].form == poll


REQUEST_ID = re.compile(r"[0-9A-F]+(?::[0-9A-F]+){4}")


def test_every_answer_carries_the_request_ids_of_its_service() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answers = [
            client.post("https://github.com/login/device/code", data={"client_id": "x"}),
            client.get("https://api.github.com/user", headers={"Authorization": "token bad"}),
            client.get("https://api.github.com/nowhere"),
            client.get(f"{origin}/models", headers=headers),
            client.post(f"{origin}/chat/completions", json={"model": "x"}, headers=headers),
            client.get(f"{origin}/nowhere", headers=headers),
        ]
        records = emu.requests[1:]  # after the exchange inside copilot()
    for answer, record in zip(answers, records, strict=True):
        assert REQUEST_ID.fullmatch(answer.headers["x-github-request-id"])
        assert answer.headers["x-github-request-id"] == record.request_id
        assert record.status == answer.status_code
        on_copilot = record.host.endswith("githubcopilot.com")
        assert ("x-request-id" in answer.headers) == on_copilot
        if on_copilot:
            uuid.UUID(answer.headers["x-request-id"])
    assert (answers[-1].status_code, answers[-1].text) == (404, "404 page not found\n")
    assert answers[2].json()["message"] == "Not Found"


def test_inference_checks_bearer_model_and_protocol() -> None:
    with (
        GitHubEmulator(Scenario(inventory=Inventory(models=(chat_model("only-chat"),)))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        base, good = copilot(emu, client)
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
        GitHubEmulator(Scenario(session=Session(clock_skew=-3600, session_lifetime=600))) as emu,
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
        GitHubEmulator(Scenario(faults=Faults(answers={"user": raw}))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        answer = client.get("https://api.github.com/user")
    assert (answer.status_code, answer.content) == (418, b"teapot")
    assert answer.headers["content-type"] == "text/plain"
    assert answer.headers["x-github-request-id"] == emu.requests[0].request_id
