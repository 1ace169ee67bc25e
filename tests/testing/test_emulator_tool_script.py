"""A scripted tool call (issue 24 §3): each protocol answers the scripted calls, whole and
streamed, as its official SDK parses them strictly, and answers text once the request
carries every call's result."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from copilot_host.testing import GitHubEmulator, Inventory, Replies, Scenario, ToolCall, chat_model
from tests.testing._support import (
    PATH,
    Copilot,
    anthropic_sdk,
    copilot,
    openai_sdk,
    payloads,
    session,
    sse,
)

ALL = ("/chat/completions", "/responses", "/v1/messages")
READ = ToolCall(name="Read", arguments={"file_path": "/home/me/notes.txt", "limit": 20})
LIST = ToolCall(name="exec_command", arguments={"cmd": "ls -la", "workdir": "/home/me"})
SCRIPT = Scenario(
    inventory=Inventory(models=(chat_model("m", endpoints=ALL),)),
    replies=Replies(stream_events=3, tool_script=(READ, LIST)),
)
TOOLS: dict[str, list[Any]] = {
    "chat": [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("Read", "exec_command")
    ],
    "responses": [
        {"type": "function", "name": n, "parameters": {"type": "object"}, "strict": False}
        for n in ("Read", "exec_command")
    ],
    "messages": [{"name": n, "input_schema": {"type": "object"}} for n in ("Read", "exec_command")],
}
HI: list[Any] = [{"role": "user", "content": "read the notes"}]


@pytest.fixture
def copilot_http() -> Iterator[Copilot]:
    with GitHubEmulator(SCRIPT) as emu, httpx2.Client(transport=emu.transport()) as http:
        origin, token = session(emu, http)
        yield origin, token, http
        emu.assert_no_refusals()


@pytest.fixture
def oai(copilot_http: Copilot) -> openai.OpenAI:
    return openai_sdk(copilot_http)


@pytest.fixture
def lax(copilot_http: Copilot) -> openai.OpenAI:
    """Default parsing: Copilot's first chat chunk (Azure's prompt filter) is not a strict
    chunk, as on the real service."""
    return openai_sdk(copilot_http, strict=False)


@pytest.fixture
def claude(copilot_http: Copilot) -> anthropic.Anthropic:
    return anthropic_sdk(copilot_http)


def test_chat_answers_each_scripted_call_then_text(oai: openai.OpenAI, lax: openai.OpenAI) -> None:
    tools: Any = TOOLS["chat"]
    messages: list[Any] = list(HI)
    for expected in (READ, LIST):
        whole = oai.chat.completions.create(model="m", messages=messages, tools=tools)
        (call,) = whole.choices[0].message.tool_calls or []
        assert whole.choices[0].finish_reason == "tool_calls"
        assert call.function.name == expected.name  # type: ignore[union-attr]
        assert json.loads(call.function.arguments) == expected.arguments  # type: ignore[union-attr]
        with lax.chat.completions.stream(model="m", messages=messages, tools=tools) as stream:
            final = stream.get_final_completion()
        (streamed,) = final.choices[0].message.tool_calls or []
        assert streamed.function.name == expected.name
        assert json.loads(streamed.function.arguments) == expected.arguments
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "file text"},
        ]
    done = oai.chat.completions.create(model="m", messages=messages, tools=tools)
    assert done.choices[0].message.content == "echo: read the notes"
    assert done.choices[0].finish_reason == "stop"


def test_responses_answers_each_scripted_call_then_text(oai: openai.OpenAI) -> None:
    tools: Any = TOOLS["responses"]
    items: list[Any] = [{"role": "user", "content": "read the notes"}]
    for expected in (READ, LIST):
        whole = oai.responses.create(model="m", input=items, tools=tools)
        (call,) = whole.output
        assert call.type == "function_call" and call.name == expected.name
        assert json.loads(call.arguments) == expected.arguments
        with oai.responses.stream(model="m", input=items, tools=tools) as stream:
            final = stream.get_final_response()
        (streamed,) = final.output
        assert streamed.type == "function_call"
        assert json.loads(streamed.arguments) == expected.arguments
        items += [
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "ok"},
        ]
    done = oai.responses.create(model="m", input=items, tools=tools)
    assert done.output_text == "echo: read the notes"


def test_messages_answers_each_scripted_call_then_text(claude: anthropic.Anthropic) -> None:
    tools: Any = TOOLS["messages"]
    messages: list[Any] = list(HI)
    for expected in (READ, LIST):
        whole = claude.messages.create(model="m", max_tokens=64, messages=messages, tools=tools)
        block = whole.content[0]
        assert whole.stop_reason == "tool_use" and block.type == "tool_use"
        assert (block.name, block.input) == (expected.name, expected.arguments)
        with claude.messages.stream(
            model="m", max_tokens=64, messages=messages, tools=tools
        ) as stream:
            final = stream.get_final_message()
        streamed = final.content[0]
        assert streamed.type == "tool_use" and streamed.input == expected.arguments
        messages += [
            {"role": "assistant", "content": [block.model_dump()]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": block.id, "content": "ok"}],
            },
        ]
    done = claude.messages.create(model="m", max_tokens=64, messages=messages, tools=tools)
    assert done.content[0].type == "text" and done.content[0].text == "echo: read the notes"


# The event sequence each protocol streams for a call, as the services send it.
SEQUENCES = {
    "responses": [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ],
    "messages": [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ],
}


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_a_streamed_call_carries_its_arguments_in_deltas(protocol: str) -> None:
    payload: dict[str, Any] = {"model": "m", "stream": True, "tools": TOOLS[protocol]}
    if protocol == "responses":
        payload["input"] = "read the notes"
    else:
        payload["messages"] = HI
    if protocol == "messages":
        payload["max_tokens"] = 64
    with GitHubEmulator(SCRIPT) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        with client.stream(
            "POST", f"{origin}{PATH[protocol]}", json=payload, headers=headers
        ) as answer:
            events = sse(answer.iter_lines())
    values = payloads(events)
    if protocol == "chat":
        calls = [c["choices"][0]["delta"].get("tool_calls") for c in values[1:] if c["choices"]]
        pieces = [call[0]["function"]["arguments"] for call in calls[1:] if call]
        assert values[-1]["choices"][0]["finish_reason"] == "tool_calls"
        assert events[-1][1] == "[DONE]"
    elif protocol == "responses":
        assert [name for name, _ in events] == SEQUENCES["responses"]
        pieces = [v["delta"] for v in values if v["type"].endswith("arguments.delta")]
        assert values[2]["item"]["arguments"] == ""
    else:
        assert [name for name, _ in events] == SEQUENCES["messages"]
        assert values[1]["content_block"]["input"] == {}
        pieces = [v["delta"]["partial_json"] for v in values if v["type"] == "content_block_delta"]
    assert len(pieces) == 2
    assert json.loads("".join(pieces)) == READ.arguments


def test_a_scripted_tool_the_request_does_not_offer_is_not_called() -> None:
    # A side request (a title, a summary) offers other tools or none: it gets text.
    other = [{"type": "function", "function": {"name": "Write", "parameters": {}}}]
    with GitHubEmulator(SCRIPT) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        url = f"{origin}/chat/completions"
        offered = client.post(
            url, json={"model": "m", "messages": HI, "tools": other}, headers=headers
        )
        bare = client.post(url, json={"model": "m", "messages": HI}, headers=headers)
    for answer in (offered, bare):
        assert answer.json()["choices"][0]["message"]["content"] == "echo: read the notes"


def test_a_script_is_followed_even_with_default_calls_off() -> None:
    scenario = Scenario(
        inventory=SCRIPT.inventory,
        replies=Replies(tool_calls=False, tool_script=(LIST,)),
    )
    tools: Any = TOOLS["chat"]
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}/chat/completions",
            json={"model": "m", "messages": HI, "tools": tools},
            headers=headers,
        )
    (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "exec_command"


def test_a_tool_call_is_checked_and_frozen() -> None:
    given = {"cmd": "ls"}
    call = ToolCall(name="exec_command", arguments=given)
    given["cmd"] = "rm -rf /"
    assert call.arguments == {"cmd": "ls"}
    assert call.arguments_json == '{"cmd":"ls"}'
    with pytest.raises(ValueError, match="names its tool"):
        ToolCall(name="")
    with pytest.raises(ValueError, match="must be JSON"):
        ToolCall(name="x", arguments={"when": object()})
    with pytest.raises(TypeError):
        Scenario(replies=Replies(tool_script=("exec_command",)))  # type: ignore[arg-type]
