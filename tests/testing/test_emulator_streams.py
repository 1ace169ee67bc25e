"""Answers of the three model protocols: whole and streamed, text and tool calls; drips and
disconnects, as a gateway's tests need them."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from copilot_host.testing import Faults, GitHubEmulator, Inventory, Replies, Scenario, chat_model
from tests.testing._support import PATH, TOOL, body, copilot, payloads, sse

ALL = ("/chat/completions", "/responses", "/v1/messages")
PROTOCOLS = ("chat", "responses", "messages")


def _scenario(**groups: Any) -> Scenario:
    return Scenario(inventory=Inventory(models=(chat_model("m", endpoints=ALL),)), **groups)


def _text(protocol: str, value: Any) -> str:
    if protocol == "chat":
        return str(value["choices"][0]["message"]["content"])
    if protocol == "responses":
        return str(value["output"][0]["content"][0]["text"])
    return str(value["content"][0]["text"])


def _deltas(protocol: str, events: list[Any]) -> list[str]:
    if protocol == "chat":
        return [
            e["choices"][0]["delta"]["content"]
            for e in events
            if e["choices"] and e["choices"][0]["delta"].get("content")
        ]
    if protocol == "responses":
        return [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    return [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]


EXPECTED_EVENTS = {
    "responses": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 5,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ],
    "messages": [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 5,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ],
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_stream_is_sse_in_the_protocols_shape_and_matches_the_whole_answer(
    protocol: str,
) -> None:
    with (
        GitHubEmulator(_scenario(replies=Replies(stream_events=5))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        url = f"{origin}{PATH[protocol]}"
        whole = client.post(url, json=body(protocol, "m", "hello"), headers=headers)
        with client.stream(
            "POST", url, json=body(protocol, "m", "hello", stream=True), headers=headers
        ) as streamed:
            events = sse(streamed.iter_lines())
            kind, encoding = streamed.headers["content-type"], streamed.headers["transfer-encoding"]
    assert (kind, encoding) == ("text/event-stream", "chunked")
    values = payloads(events)
    deltas = _deltas(protocol, values)
    assert len(deltas) == 5
    assert "".join(deltas) == _text(protocol, whole.json()) == "echo: hello"
    if protocol == "chat":
        assert events[-1] == (None, "[DONE]")
        assert values[0]["choices"] == []  # the prompt-filter chunk Copilot sends first
        assert values[-1]["choices"][0]["finish_reason"] == "stop"
    else:
        assert [name for name, _ in events] == EXPECTED_EVENTS[protocol]
        assert [v["type"] for v in values] == EXPECTED_EVENTS[protocol]


def test_many_deltas_pad_the_echo() -> None:
    with (
        GitHubEmulator(_scenario(replies=Replies(stream_events=1000))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        request = body("messages", "m", "hi", stream=True)
        with client.stream(
            "POST", f"{origin}/v1/messages", json=request, headers=headers
        ) as answer:
            deltas = _deltas("messages", payloads(sse(answer.iter_lines())))
    assert len(deltas) == 1000
    assert "".join(deltas) == "echo: hi" + "." * 992


def _tool_turn(protocol: str) -> dict[str, Any]:
    """A request whose last input item is the result of the tool the model called."""
    if protocol == "chat":
        messages = [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ]
        return {"model": "m", "messages": messages, "tools": [TOOL["chat"]]}
    if protocol == "responses":
        items = [
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ]
        return {"model": "m", "input": items, "tools": [TOOL["responses"]]}
    messages = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
        },
    ]
    return {"model": "m", "max_tokens": 64, "messages": messages, "tools": [TOOL["messages"]]}


def _called(protocol: str, value: Any) -> tuple[str, Any]:
    if protocol == "chat":
        choice = value["choices"][0]
        call = choice["message"]["tool_calls"][0]["function"]
        return choice["finish_reason"], (call["name"], json.loads(call["arguments"]))
    if protocol == "responses":
        item = value["output"][0]
        return item["type"], (item["name"], json.loads(item["arguments"]))
    block = value["content"][0]
    return value["stop_reason"], (block["name"], block["input"])


def _streamed_call(protocol: str, events: list[Any]) -> tuple[str, str]:
    """(the tool's name, the concatenated argument deltas) of a streamed tool call."""
    if protocol == "chat":
        calls = [
            c
            for e in events
            if e["choices"]
            for c in e["choices"][0]["delta"].get("tool_calls", [])
        ]
        name = next(c["function"]["name"] for c in calls if "name" in c["function"])
        return name, "".join(c["function"]["arguments"] for c in calls)
    if protocol == "responses":
        added = next(e["item"] for e in events if e["type"] == "response.output_item.added")
        deltas = [
            e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
        ]
        return added["name"], "".join(deltas)
    start = next(e["content_block"] for e in events if e["type"] == "content_block_start")
    deltas = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"]
    return start["name"], "".join(deltas)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_offered_tools_are_called_on_the_persons_turn_and_answered_after_the_result(
    protocol: str,
) -> None:
    second = dict(TOOL[protocol])
    second = (
        {**second, "function": {"name": "other"}}
        if protocol == "chat"
        else {**second, "name": "other"}
    )
    with GitHubEmulator(_scenario()) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        url = f"{origin}{PATH[protocol]}"
        ask = body(protocol, "m", "weather?", tools=[TOOL[protocol], second])
        call = client.post(url, json=ask, headers=headers).json()
        with client.stream("POST", url, json={**ask, "stream": True}, headers=headers) as answer:
            streamed = payloads(sse(answer.iter_lines()))
        after = client.post(url, json=_tool_turn(protocol), headers=headers).json()
    reason = {"chat": "tool_calls", "responses": "function_call", "messages": "tool_use"}[protocol]
    assert _called(protocol, call) == (reason, ("get_weather", {}))
    assert _streamed_call(protocol, streamed) == ("get_weather", "{}")
    assert _text(protocol, after) == "echo: weather?"


def test_a_stream_is_flushed_event_by_event_and_a_hang_up_is_recorded() -> None:
    """The first event arrives while the server still pauses before the next one (a
    buffered answer would hit the read timeout); closing the stream is seen at once."""
    scenario = _scenario(replies=Replies(stream_pause=30.0))
    with GitHubEmulator(scenario) as emu:
        with httpx2.Client(transport=emu.transport(), timeout=httpx2.Timeout(10.0)) as client:
            origin, headers = copilot(emu, client)
            request = body("chat", "m", stream=True)
            with client.stream(
                "POST", f"{origin}/chat/completions", json=request, headers=headers
            ) as answer:
                first = next(answer.iter_lines())
        assert first.startswith("data: ")
        (gone,) = emu.wait_for_disconnects(1, timeout=10.0)
    assert (gone.endpoint, gone.status, gone.disconnected) == ("chat", 200, True)
    assert emu.disconnects == (gone,)


def test_a_finished_stream_is_no_disconnect() -> None:
    with GitHubEmulator(_scenario()) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        request = body("responses", "m", stream=True)
        with client.stream("POST", f"{origin}/responses", json=request, headers=headers) as answer:
            answer.read()
        # The whole stream was read, so the server wrote its last byte: nothing can fail now.
        assert emu.disconnects == ()
        with pytest.raises(TimeoutError, match="0 of 1"):
            emu.wait_for_disconnects(1, timeout=0)
    (record,) = emu.requests_to("responses")
    assert (record.status, record.disconnected) == (200, False)


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_a_cut_stream_ends_without_its_end_after_the_events_it_sent(protocol: str) -> None:
    """As when the service or a proxy drops a stream: the events so far, then a connection
    that closes without the terminating chunk, which a client sees as a protocol error."""
    with (
        GitHubEmulator(_scenario(replies=Replies(stream_cut=2, stream_events=8))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        received = b""
        with (
            client.stream(
                "POST",
                origin + PATH[protocol],
                json=body(protocol, "m", stream=True),
                headers=headers,
            ) as answer,
            pytest.raises(httpx2.RemoteProtocolError),
        ):
            for chunk in answer.iter_raw():
                received += chunk
        assert answer.status_code == 200
    assert received.count(b"\n\n") == 2
    assert received.endswith(b"\n\n")


def test_a_stream_cut_is_a_count_of_events() -> None:
    with pytest.raises(ValueError, match="stream_cut"):
        Scenario(replies=Replies(stream_cut=-1))


def test_a_drip_sends_the_body_a_byte_at_a_time() -> None:
    """Each read returns quickly (a per-read timeout never fires) but the body comes in
    single bytes: only a total deadline can stop such an answer."""
    with (
        GitHubEmulator(Scenario(faults=Faults(drip={"user": 0.01}))) as emu,
        httpx2.Client(transport=emu.transport(), timeout=httpx2.Timeout(2.0)) as client,
    ):
        auth = {"Authorization": f"token {emu.github_token}"}
        with client.stream("GET", "https://api.github.com/user", headers=auth) as answer:
            pieces = list(answer.iter_raw())
    whole = b"".join(pieces)
    assert json.loads(whole)["login"] == "octocat"
    assert len(pieces) >= 5  # never one read: the bytes came one by one


def test_leaving_a_drip_early_is_recorded() -> None:
    with GitHubEmulator(Scenario(faults=Faults(drip={"user": 0.2}))) as emu:
        with httpx2.Client(transport=emu.transport()) as client:
            auth = {"Authorization": f"token {emu.github_token}"}
            with client.stream("GET", "https://api.github.com/user", headers=auth) as answer:
                next(answer.iter_raw())
        (gone,) = emu.wait_for_disconnects(1, timeout=10.0)
    assert gone.endpoint == "user"


def test_a_dripped_stream_is_still_valid_sse() -> None:
    with (
        GitHubEmulator(
            _scenario(replies=Replies(stream_events=1), faults=Faults(drip={"messages": 0.0001}))
        ) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        request = body("messages", "m", stream=True)
        with client.stream(
            "POST", f"{origin}/v1/messages", json=request, headers=headers
        ) as answer:
            values = payloads(sse(answer.iter_lines()))
    assert _deltas("messages", values) == ["echo: hi"]


def test_records_expose_the_initiator_and_the_vision_header() -> None:
    with GitHubEmulator(_scenario()) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        url = f"{origin}/chat/completions"
        client.post(url, json=body("chat", "m"), headers={**headers, "X-Initiator": "agent"})
        client.post(
            url, json=body("chat", "m"), headers={**headers, "Copilot-Vision-Request": "true"}
        )
        tagged, plain = emu.requests_to("chat")
    assert (tagged.initiator, tagged.vision) == ("agent", False)
    assert (plain.initiator, plain.vision) == (None, True)
