"""Responses over WebSocket (Codex's transport) against a real gateway on a real socket: the
handshake's checks, the warm-up, the conversation kept per socket, the frames, the
refusals, and the access line of every socket request.

What each socket carried upstream is read from the emulator's records: a socket request
goes upstream as the whole conversation a client would have sent over HTTP.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import copilot_host as ch
from copilot_host.testing import Faults, GitHubEmulator, RawAnswer, Replies, Scenario, ToolCall
from tests._clock import FakeClock
from tests._wsclient import Closed, Refused, SocketClient
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks

MODEL = "gpt-5.5"
DEVELOPER = {
    "type": "message",
    "role": "developer",
    "content": [{"type": "input_text", "text": "You are terse."}],
}
USER = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "list the folder"}],
}
TOOL = {
    "type": "function",
    "name": "exec_command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}
# What Codex 0.171.0 adds to each socket message (docs/WIRE.md, "Responses over WebSocket").
CODEX_EXTRAS = {"client_metadata": {"turn_id": "", "x-codex-turn-metadata": "{}"}, "stream": True}


def _create(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "tools": [TOOL], "store": False, **CODEX_EXTRAS, **fields}


def _open(gateway: Gateway, **options: Any) -> SocketClient:
    return SocketClient(gateway.port, gateway.key, **options).open()


def _seen(gateway: Gateway, frames: list[Any]) -> list[Any]:
    gateway.seen.extend(("frame", json.dumps(frame)) for frame in frames)
    return frames


def _types(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["type"] for frame in frames]


def _upstream(gateway: Gateway) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in gateway.emulator.requests if r.endpoint == "responses"]


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway whose model calls exec_command once, then answers with text."""
    call = ToolCall("exec_command", {"cmd": "ls"})
    with (
        GitHubEmulator(Scenario(replies=Replies(tool_script=(call,)))) as emulator,
        running_gateway(emulator, tmp_path / "home") as running,
    ):
        yield running
        assert_no_leaks(running)


def test_a_codex_session_warm_up_turn_and_tool_result_go_upstream_whole(scripted: Gateway) -> None:
    """Codex's three messages (measured): the warm-up, the turn chained on it with only the
    new items, the tool's result chained on the turn. The warm-up never goes upstream; each
    other goes as the whole conversation, the function call taken from the answer before."""
    gateway = scripted
    with _open(gateway) as client:
        warm = _seen(gateway, client.request(_create(input=[DEVELOPER], generate=False)))
        assert _types(warm) == ["response.created", "response.completed"]
        warm_id = warm[-1]["response"]["id"]
        assert warm[-1]["response"]["output"] == []
        assert _upstream(gateway) == []
        turn = _seen(gateway, client.request(_create(previous_response_id=warm_id, input=[USER])))
        assert turn[-1]["type"] == "response.completed"
        call = next(f["item"] for f in turn if f["type"] == "response.output_item.done")
        assert call["type"] == "function_call" and call["name"] == "exec_command"
        result = {"type": "function_call_output", "call_id": call["call_id"], "output": "a b"}
        last = client.request(
            _create(previous_response_id=turn[-1]["response"]["id"], input=[result])
        )
        _seen(gateway, last)
        assert last[-1]["type"] == "response.completed"
    first, second = _upstream(gateway)
    assert first["input"] == [DEVELOPER, USER]
    assert second["input"] == [DEVELOPER, USER, call, result]
    for body in (first, second):
        # Nothing only a socket means goes upstream; the rest as sent.
        assert not {"type", "client_metadata", "previous_response_id", "generate"} & set(body)
        assert body["stream"] is True and body["store"] is False
    # Every socket request has its access line; the warm-up cost nothing.
    lines = [line for line in gateway.access.lines if line.startswith("WS /v1/responses ")]
    assert len(lines) == 3 and all(" status=200 " in line for line in lines), lines
    assert "credits=" not in lines[0] and "credits=" in lines[1]


def test_a_socket_turn_goes_upstream_as_the_same_http_request_would(gateway: Gateway) -> None:
    """The body a socket turn sends upstream is the body the same conversation sent over
    HTTP sends (the table's changes applied alike)."""
    custom = {"type": "custom", "name": "apply_patch", "description": "patch"}
    fields = {"model": MODEL, "tools": [TOOL, custom], "store": False, "stream": True}
    with _open(gateway) as client:
        _seen(gateway, client.request({**fields, "input": [DEVELOPER, USER]}))
    status, _headers, _body = gateway.post("/responses", {**fields, "input": [DEVELOPER, USER]})
    assert status == 200
    over_socket, over_http = _upstream(gateway)
    assert over_socket == over_http
    assert [line.split(" model=")[0] for line in gateway.access.lines] == [
        "WS /v1/responses",
        "POST /responses",
    ]


def test_an_unknown_previous_response_is_refused_as_codex_expects(gateway: Gateway) -> None:
    """An id the socket never answered (another socket's among them) is the error frame
    on which Codex resends the whole conversation (measured), with its status."""
    with _open(gateway) as one, _open(gateway) as two:
        answered = _seen(gateway, one.request(_create(input=[USER])))
        ident = answered[-1]["response"]["id"]
        for client, previous in ((one, "resp_never"), (two, ident)):
            (frame,) = _seen(
                gateway, client.request(_create(previous_response_id=previous, input=[]))
            )
            assert frame["type"] == "error" and frame["status"] == 400, frame
            assert frame["error"]["code"] == "previous_response_not_found"
        # The socket goes on: a whole request is served.
        assert one.request(_create(input=[USER]))[-1]["type"] == "response.completed"
    assert len(_upstream(gateway)) == 2
    assert sum(" status=400 " in line for line in gateway.access.lines) == 2


def test_messages_that_are_not_requests_get_error_frames(gateway: Gateway) -> None:
    with _open(gateway) as client:
        client.send_json({"type": "response.processed", "response_id": "resp_1"})
        client.send_text("{not json")
        (not_json,) = _seen(gateway, client.answer())
        client.send_json({"type": "response.append", "input": []})
        (unknown,) = _seen(gateway, client.answer())
        assert (not_json["status"], not_json["error"]["code"]) == (400, "invalid_json")
        assert (unknown["status"], unknown["error"]["code"]) == (400, "unsupported_message_type")
        # response.processed had no answer: the next frame is the next request's.
        assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
        client.send_bytes(b'{"type": "response.create"}')
        (binary,) = _seen(gateway, client.answer())
        assert (binary["status"], binary["error"]["code"]) == (400, "binary_frame")
        with pytest.raises(Closed) as closed:
            client.receive()
        assert closed.value.code == 1003


@pytest.mark.parametrize("emulator", [Scenario(replies=Replies(stream_pause=0.2))], indirect=True)
def test_one_request_at_a_time(gateway: Gateway) -> None:
    with _open(gateway) as client:
        client.send_json({"type": "response.create", **_create(input=[USER])})
        client.send_json({"type": "response.create", **_create(input=[USER])})
        frames = _seen(gateway, client.answer())
        refused = [f for f in frames if f["type"] == "error"]
        assert [f["error"]["code"] for f in refused] == ["request_in_progress"]
        # The first request's answer still comes whole after the refusal.
        rest = frames if frames[-1]["type"] == "response.completed" else client.answer()
        assert rest[-1]["type"] == "response.completed"
    assert len(_upstream(gateway)) == 1


def test_the_handshake_is_refused_as_http_with_the_same_checks(gateway: Gateway) -> None:
    """No key, a wrong key, an Origin, a foreign Host: each an HTTP answer in OpenAI's
    shape (never a 101), each with its access line."""
    cases = [
        (None, (), 401, "invalid_api_key"),
        ("cph_" + "x" * 40, (), 401, "invalid_api_key"),
        (gateway.key, (("Origin", "https://evil.example"),), 403, "origin_not_allowed"),
    ]
    for key, headers, status, code in cases:
        with pytest.raises(Refused) as refused:
            SocketClient(gateway.port, key, headers=headers).open()
        assert refused.value.status == status
        assert refused.value.document()["error"]["code"] == code
    client = SocketClient(gateway.port, gateway.key)
    client._request = type(client._request)(  # a Host that is not the gateway's
        host="evil.example:80", target="/v1/responses", extra_headers=client._request.extra_headers
    )
    with pytest.raises(Refused) as refused:
        client.open()
    assert refused.value.status == 421
    assert [line.split(" ")[0:4:3] for line in gateway.access.lines] == [
        ["WS", "status=401"],
        ["WS", "status=401"],
        ["WS", "status=403"],
        ["WS", "status=421"],
    ]


def test_the_socket_is_taken_on_the_responses_paths_alone(gateway: Gateway) -> None:
    """/responses as /v1/responses; an upgrade anywhere else is answered as the HTTP
    request it is, as before sockets were served."""
    with SocketClient(gateway.port, gateway.key, path="/responses").open() as client:
        assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
    with pytest.raises(Refused) as refused:
        SocketClient(gateway.port, gateway.key, path="/v1/chat/completions").open()
    assert refused.value.status == 405
    with pytest.raises(Refused) as refused:
        SocketClient(gateway.port, gateway.key, path="/v1/models").open()
    assert refused.value.status == 200 and json.loads(refused.value.body)["object"] == "list"
    status, _headers, _body = gateway.post("/responses", _create(input=[USER], stream=False))
    assert status == 200


def test_a_socket_serves_sixty_minutes_then_codex_is_told_to_reconnect(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    clock = FakeClock()
    with (
        running_gateway(emulator, tmp_path / "home", clock=clock) as gateway,
        _open(gateway) as client,
    ):
        assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
        # Past the age either when the request arrives (refused) or as the one before it
        # ends (told at once, unasked): Codex reads the same frame either way.
        clock.advance(3600.0)
        (frame,) = client.request(_create(input=[USER]))
        assert frame["status"] == 429, frame
        assert frame["error"]["code"] == "websocket_connection_limit_reached"
        with pytest.raises(Closed) as closed:
            client.receive()
        assert closed.value.code == 1000


def test_frames_are_masked_of_known_secrets(emulator: GitHubEmulator, tmp_path: Path) -> None:
    secret = "sk-" + "q" * 40
    held = ch.Secret(secret)
    ch.register_secret(held)
    events: list[dict[str, Any]] = [
        {
            "type": "response.created",
            "response": {"id": "resp_x", "status": "in_progress", "output": []},
        },
        {"type": "response.output_text.delta", "delta": f"the key is {secret}"},
        {
            "type": "response.completed",
            "response": {"id": "resp_x", "status": "completed", "output": []},
        },
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    answer = RawAnswer(200, body, (("Content-Type", "text/event-stream"),))
    scenario = Scenario(faults=Faults(answers={"responses": answer}))
    with GitHubEmulator(scenario) as masked, running_gateway(masked, tmp_path / "home") as gateway:
        with _open(gateway) as client:
            frames = client.request(_create(input=[USER]))
        text = json.dumps(frames)
        assert secret not in text and "the key is" in text
    del held


@pytest.mark.parametrize("emulator", [Scenario(replies=Replies(stream_cut=2))], indirect=True)
def test_an_answer_cut_upstream_ends_with_an_error_frame(gateway: Gateway) -> None:
    """A stream that breaks off never leaves Codex waiting (it waits 300 s for an end)."""
    with _open(gateway) as client:
        frames = _seen(gateway, client.request(_create(input=[USER])))
        assert frames[-1]["type"] == "error" and frames[-1]["status"] == 502
        # The socket serves on.
        client.send_json({"type": "response.create", **_create(input=[USER])})


def test_an_upstream_refusal_is_an_error_frame_with_its_status(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    answer = RawAnswer(
        400, json.dumps({"error": {"message": "bad input", "code": "invalid_value"}}).encode()
    )
    scenario = Scenario(faults=Faults(answers={"responses": answer}))
    with (
        GitHubEmulator(scenario) as refusing,
        running_gateway(refusing, tmp_path / "home") as gateway,
        _open(gateway) as client,
    ):
        (frame,) = client.request(_create(input=[USER]))
    assert frame == {
        "type": "error",
        "status": 400,
        "error": {"message": "bad input", "code": "invalid_value"},
    }


def test_a_spent_budget_is_an_error_frame(emulator: GitHubEmulator, tmp_path: Path) -> None:
    with running_gateway(emulator, tmp_path / "home", max_credits=0.01) as gateway:
        with _open(gateway) as client:
            assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
            (frame,) = client.request(_create(input=[USER]))
        assert frame["type"] == "error" and frame["error"]["code"] == "budget_exhausted"
        assert frame["status"] >= 400


def test_no_log_line_holds_a_header_value(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """The key and the handshake's other header values appear in no log record, the
    server's included, at any level."""
    marker = "hdr-" + "z" * 30
    caplog.set_level(logging.DEBUG)
    with _open(gateway, headers=(("x-codex-turn-metadata", marker), ("x-weird", marker))) as client:
        client.request(_create(input=[USER], generate=False))
        client.request(_create(input=[USER]))
    with pytest.raises(Refused):
        SocketClient(gateway.port, gateway.key, headers=(("Origin", marker),)).open()
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert gateway.key not in text and marker not in text


def test_compressed_messages_are_read_and_a_compressed_bomb_is_closed(gateway: Gateway) -> None:
    """permessage-deflate, as Codex offers it: accepted, its messages inflated; a message
    that would inflate past the body cap is closed with 1009 before it is held."""
    with _open(gateway, deflate=True) as client:
        assert client.accepted is not None
        assert client.accepted.extensions, "permessage-deflate was not accepted"
        assert client.request(_create(input=[USER]))[-1]["type"] == "response.completed"
        bomb = json.dumps({"type": "response.create", "input": "a" * (40 * 1024 * 1024)})
        began = time.monotonic()
        client.send_text(bomb)
        with pytest.raises(Closed) as closed:
            while True:
                client.receive()
        assert closed.value.code == 1009
        assert client.sent < 1024 * 1024 and time.monotonic() - began < 10
