"""Codex's socket relayed over Copilot's own WebSocket (for models that list ``ws:/responses``),
against a real gateway and the emulator's real socket: chaining upstream with only the new
items, the handshake's headers, the error frames translated, the quota read, and each
degradation (a refused handshake, a socket that closes, a chain the service forgot, a
session that ends, a socket too old, a model's sockets turned off)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import copilot_host as ch
from copilot_host.gateway._app._socket_health import FAILURES_BEFORE_OFF, OFF_SECONDS
from copilot_host.testing import (
    GitHubEmulator,
    RecordedRequest,
    Replies,
    Scenario,
    Sockets,
    ToolCall,
    Usage,
)
from tests._clock import FakeClock
from tests._wsclient import SocketClient
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks
from tests.gateway.test_socket import DEVELOPER, USER, _create, _open, _seen, _types

MODEL = "gpt-5.5"  # lists /responses and ws:/responses


@pytest.fixture
def upstream(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Gateway]:
    """A gateway whose client sockets go up over the emulator's socket (the scenario of
    ``@pytest.mark.parametrize("upstream", ...)``, indirect; the default: a model that
    calls exec_command once, then answers with text)."""
    call = ToolCall("exec_command", {"cmd": "ls"})
    scenario = getattr(request, "param", None) or Scenario(replies=Replies(tool_script=(call,)))
    with GitHubEmulator(scenario) as emulator:
        clock = FakeClock()
        with running_gateway(
            emulator, tmp_path / "home", sockets=emulator.socket_connector(), clock=clock
        ) as running:
            running.clock = clock  # type: ignore[attr-defined]
            yield running
            assert_no_leaks(running)


def _socket_records(gateway: Gateway) -> list[RecordedRequest]:
    return [r for r in gateway.emulator.requests_to("responses_socket") if r.method == "WS"]


def _handshakes(gateway: Gateway) -> list[RecordedRequest]:
    return [r for r in gateway.emulator.requests_to("responses_socket") if r.method == "GET"]


def _http(gateway: Gateway) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in gateway.emulator.requests_to("responses")]


def _sent(gateway: Gateway) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in _socket_records(gateway)]


def _turns(gateway: Gateway, client: SocketClient) -> tuple[Any, Any, Any]:
    """Codex's three messages: the warm-up, the turn, the tool's result."""
    warm = _seen(gateway, client.request(_create(input=[DEVELOPER], generate=False)))
    turn = _seen(
        gateway,
        client.request(_create(previous_response_id=warm[-1]["response"]["id"], input=[USER])),
    )
    call = next(f["item"] for f in turn if f["type"] == "response.output_item.done")
    result = {"type": "function_call_output", "call_id": call["call_id"], "output": "a b"}
    last = _seen(
        gateway,
        client.request(_create(previous_response_id=turn[-1]["response"]["id"], input=[result])),
    )
    return turn, call, (result, last)


def test_a_codex_session_goes_up_chained_with_only_the_new_items(upstream: Gateway) -> None:
    gateway = upstream
    with _open(gateway) as client:
        turn, call, (result, last) = _turns(gateway, client)
    assert last[-1]["type"] == "response.completed"
    # The ids Codex chains on are the service's own, passed through.
    first, second = _sent(gateway)
    assert turn[-1]["response"]["id"].startswith("resp_emu_")
    assert "previous_response_id" not in first and first["input"] == [DEVELOPER, USER]
    assert second["previous_response_id"] == turn[-1]["response"]["id"]
    assert second["input"] == [result]
    # Who started each turn goes in the body (VS Code's initiator), no stream field.
    assert [body["initiator"] for body in (first, second)] == ["user", "agent"]
    assert not {"stream", "generate", "client_metadata"} & (set(first) | set(second))
    assert [r.status for r in _socket_records(gateway)] == [200, 200]
    # One handshake for the client's socket, nothing over HTTP; the editor headers on it.
    (handshake,) = _handshakes(gateway)
    assert handshake.status == 101 and handshake.headers.get("editor-version")
    assert handshake.headers["authorization"].startswith("Bearer ")
    assert _http(gateway) == []
    gateway.emulator.assert_no_refusals()
    lines = [line for line in gateway.access.lines if line.startswith("WS ")]
    assert len(lines) == 3 and all(" status=200 " in line for line in lines)
    assert " credits=0.0425" in lines[1] and " credits=0.0425" in lines[2]
    assert call["type"] == "function_call"


def test_every_client_socket_has_its_own_upstream_socket(upstream: Gateway) -> None:
    with _open(upstream) as one, _open(upstream) as two:
        for client in (one, two, one):
            assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
    assert len(_handshakes(upstream)) == 2


@pytest.mark.parametrize("upstream", [Scenario(sockets=Sockets(refused=(403,)))], indirect=True)
def test_a_refused_handshake_sends_that_client_socket_over_http(upstream: Gateway) -> None:
    gateway = upstream
    with _open(gateway) as client:
        for _ in range(2):
            assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
    # Once refused, the client's socket stays on HTTP: one handshake, two HTTP requests.
    assert [r.status for r in _handshakes(gateway)] == [403]
    assert len(_http(gateway)) == 2 and _socket_records(gateway) == []
    # A new client socket tries Copilot's socket again.
    with _open(gateway) as client:
        assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
    assert [r.status for r in _handshakes(gateway)] == [403, 101]
    assert len(_socket_records(gateway)) == 1


@pytest.mark.parametrize(
    "upstream",
    [Scenario(sockets=Sockets(refused=(503,) * FAILURES_BEFORE_OFF))],
    indirect=True,
)
def test_three_failures_in_a_row_turn_a_models_sockets_off_for_a_while(
    upstream: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = upstream
    caplog.set_level(logging.WARNING, "copilot_host.gateway")
    for _ in range(FAILURES_BEFORE_OFF + 1):
        with _open(gateway) as client:
            assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
    # The fourth client socket did not try: the model's sockets are off.
    assert len(_handshakes(gateway)) == FAILURES_BEFORE_OFF
    assert len(_http(gateway)) == FAILURES_BEFORE_OFF + 1
    assert any("over HTTP for the next 15 minutes" in r.getMessage() for r in caplog.records)
    gateway.clock.advance(OFF_SECONDS)  # type: ignore[attr-defined]
    with _open(gateway) as client:
        assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
    assert _handshakes(gateway)[-1].status == 101 and len(_socket_records(gateway)) == 1


@pytest.mark.parametrize("upstream", [Scenario(sockets=Sockets(closes=1))], indirect=True)
def test_a_socket_that_closes_before_answering_gets_the_request_whole_on_a_new_one(
    upstream: Gateway,
) -> None:
    gateway = upstream
    with _open(gateway) as client:
        frames = client.request(_create(input=[DEVELOPER, USER]))
    assert frames[-1]["type"] == "response.completed"
    dropped, served = _socket_records(gateway)
    assert dropped.disconnected and served.status == 200
    assert json.loads(served.body)["input"] == [DEVELOPER, USER]
    assert len(_handshakes(gateway)) == 2 and _http(gateway) == []


@pytest.mark.parametrize(
    "upstream",
    [Scenario(sockets=Sockets(forgets=1), replies=Replies(tool_calls=False))],
    indirect=True,
)
def test_a_forgotten_chain_is_sent_again_whole(upstream: Gateway) -> None:
    gateway = upstream
    with _open(gateway) as client:
        first = client.request(_create(input=[USER]))
        again = client.request(_create(previous_response_id=first[-1]["response"]["id"], input=[]))
    assert again[-1]["type"] == "response.completed"
    _, forgotten, whole = _sent(gateway)
    assert "previous_response_id" in forgotten and forgotten["input"] == []
    assert "previous_response_id" not in whole
    assert whole["input"] == [
        USER,
        *(f["item"] for f in first if f["type"] == "response.output_item.done"),
    ]
    assert len(_handshakes(gateway)) == 1


def test_an_ended_session_gets_a_new_handshake_and_the_request_whole(upstream: Gateway) -> None:
    gateway = upstream
    with _open(gateway) as client:
        first = client.request(_create(input=[DEVELOPER, USER]))
        # Every session issued so far stops working; a new exchange is allowed.
        gateway.emulator.revoke_sessions()
        gateway.clock.advance(2.0)  # type: ignore[attr-defined]
        result = {"type": "function_call_output", "call_id": "call_x", "output": "done"}
        prior = first[-1]["response"]["id"]
        last = client.request(_create(previous_response_id=prior, input=[result]))
    assert last[-1]["type"] == "response.completed"
    records = _socket_records(gateway)
    assert [r.status for r in records] == [200, 401, 200]
    assert "previous_response_id" not in json.loads(records[-1].body)
    first_bearer, second_bearer = (r.headers["authorization"] for r in _handshakes(gateway))
    assert first_bearer != second_bearer


def test_a_socket_is_opened_anew_when_the_session_moves_on_or_it_is_old(upstream: Gateway) -> None:
    gateway = upstream
    with _open(gateway) as client:
        client.request(_create(input=[USER], tools=[]))
        # Past the session's refresh time: a new session, so a new handshake.
        gateway.clock.advance(1600.0)  # type: ignore[attr-defined]
        client.request(_create(input=[USER], tools=[]))
        client.request(_create(input=[USER], tools=[]))
    assert len(_handshakes(gateway)) == 2


def test_an_image_goes_on_a_socket_opened_with_the_vision_header(upstream: Gateway) -> None:
    gateway = upstream
    image = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}],
    }
    with _open(gateway) as client:
        client.request(_create(input=[USER], tools=[]))
        assert client.request(_create(input=[image], tools=[]))[-1]["type"] == "response.completed"
    plain, vision = _handshakes(gateway)
    assert "copilot-vision-request" not in plain.headers
    assert vision.headers["copilot-vision-request"] == "true"
    gateway.emulator.assert_no_refusals()


@pytest.mark.parametrize(
    "upstream",
    [Scenario(usage=Usage(quota_used=1480.0, quota_exceeded_on=frozenset({"responses"})))],
    indirect=True,
)
def test_copilots_error_frames_become_the_frames_codex_reads(upstream: Gateway) -> None:
    with _open(upstream) as client:
        (frame,) = client.request(_create(input=[USER]))
    assert frame["type"] == "error" and frame["status"] == 402
    assert frame["error"]["code"] == "quota_exceeded"
    assert frame["error"]["message"]


@pytest.mark.parametrize("upstream", [Scenario(usage=Usage(quota_used=1400.0))], indirect=True)
def test_the_quota_snapshots_are_read_as_the_quota_headers_are(
    upstream: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with _open(upstream) as client:
        assert client.request(_create(input=[USER], tools=[]))[-1]["type"] == "response.completed"
    # Settled on the gateway's thread just after the answer's last frame went out.
    deadline = time.monotonic() + 5.0
    warned: list[str] = []
    while not warned and time.monotonic() < deadline:
        warned = [r.getMessage() for r in caplog.records if "running low" in r.getMessage()]
        time.sleep(0.01)
    assert warned and "premium_interactions" in warned[0], warned


@pytest.mark.parametrize("upstream", [Scenario(replies=Replies(stream_cut=3))], indirect=True)
def test_a_socket_closed_mid_answer_cuts_the_clients_answer_and_the_next_goes_whole(
    upstream: Gateway,
) -> None:
    gateway = upstream
    with _open(gateway) as client:
        frames = client.request(_create(input=[USER], tools=[]))
        assert frames[-1]["type"] == "error" and frames[-1]["status"] == 502
        assert _types(frames)[0] == "response.created"
    assert len(_handshakes(gateway)) == 1


def test_a_model_that_does_not_list_the_socket_goes_over_http(upstream: Gateway) -> None:
    with _open(upstream) as client:
        frames = client.request({**_create(input=[USER], tools=[]), "model": "grok-4.5"})
    assert frames[-1]["type"] == "response.completed"
    assert _handshakes(upstream) == [] and len(_http(upstream)) == 1


def test_frames_from_copilots_socket_are_masked_of_known_secrets(upstream: Gateway) -> None:
    secret = "sk-" + "w" * 40
    held = ch.Secret(secret)
    ch.register_secret(held)
    said = {"type": "message", "role": "user", "content": f"the key is {secret}"}
    with _open(upstream) as client:
        frames = client.request(_create(input=[said], tools=[]))
    text = json.dumps(frames)
    assert "echo: the key is" in text and secret not in text
    del held


# -- the default connector's environment ------------------------------------------------------

URL = "wss://api.githubcopilot.com/responses"


@pytest.mark.parametrize(
    ("environ", "proxy"),
    [
        ({}, None),
        ({"HTTPS_PROXY": "http://proxy.local:3128"}, "http://proxy.local:3128"),
        ({"https_proxy": "proxy.local:3128"}, "http://proxy.local:3128"),
        ({"ALL_PROXY": "http://all.local:8080"}, "http://all.local:8080"),
        ({"HTTP_PROXY": "http://plain.local:80"}, None),  # httpx2 uses it for http:// only
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "githubcopilot.com"}, None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".githubcopilot.com"}, None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "http://p:1"),
    ],
)
def test_the_socket_goes_through_the_proxy_httpx2_would_use(
    environ: dict[str, str], proxy: str | None
) -> None:
    from copilot_host.gateway._app._connect import proxy_for

    assert proxy_for(URL, environ) == proxy


def test_a_socks_proxy_is_not_tried_for_sockets() -> None:
    from copilot_host.gateway._app._connect import proxy_for

    with pytest.raises(OSError, match="socks5"):
        proxy_for(URL, {"ALL_PROXY": "socks5://proxy.local:1080"})


def test_the_websockets_client_is_imported_only_when_a_socket_is_opened() -> None:
    """``import copilot_host`` and a gateway app serving HTTP never import ``websockets``."""
    import subprocess
    import sys

    script = (
        "import sys, copilot_host, copilot_host.gateway\n"
        "from copilot_host.gateway import create_app\n"
        "from copilot_host.gateway._app._connect import connect\n"
        "assert 'websockets' not in sys.modules, 'imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
