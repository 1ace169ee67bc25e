"""The Responses rewrites (gateway/_responses_tools.py) over raw HTTP through a real gateway
to the loopback emulator, both directions: Codex's tool shapes go upstream as plain function
tools, and the calls come back as Codex sent the tools (custom, namespaced), whole and
streamed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from copilot_host.gateway import REWRITES
from copilot_host.testing import GitHubEmulator, Replies, Scenario, ToolCall
from tests.gateway._rewrites_support import checked, events_of, module_gateway, rewrote
from tests.gateway._support import Gateway, running_gateway

PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+say "hi" \\ bye\n+日本 😀\n*** End Patch\n'


def _function(name: str, description: str, argument: str) -> dict[str, Any]:
    """A Responses function tool taking one string argument."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {argument: {"type": "string"}}},
    }


EXEC = _function("exec_command", "run a command", "cmd")
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Apply a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+"},
}
SPAWN = _function("spawn_agent", "start an agent", "task")
NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "sub-agents",
    # exec_command collides with the top-level tool: it goes as multi_agent_v1__exec_command.
    "tools": [SPAWN, {**EXEC, "description": "run in an agent"}],
}
WEB_SEARCH = {"type": "web_search", "external_web_access": False}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


def responses_body(**more: Any) -> dict[str, Any]:
    return {
        "model": "gpt-5.5",
        "input": [USER],
        "tools": [EXEC, APPLY_PATCH, WEB_SEARCH, NAMESPACE],
        **more,
    }


def _output(answer: Any, *, stream: bool) -> list[Any]:
    """A Responses answer's output items: the whole answer's, or response.completed's."""
    if not stream:
        return list(answer["output"])
    completed = next(e for e in events_of(answer) if e["type"] == "response.completed")
    return list(completed["response"]["output"])


SCRIPT = (
    ToolCall("apply_patch", {"input": PATCH}),
    ToolCall("multi_agent_v1__spawn_agent", {"task": "look"}),
    ToolCall("multi_agent_v1__exec_command", {"cmd": "ls"}),
)


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from module_gateway(
        tmp_path_factory, "responses", Scenario(replies=Replies(tool_script=SCRIPT))
    )


@pytest.fixture
def gw(started: Gateway) -> Iterator[Gateway]:
    yield from checked(started)


@pytest.fixture(scope="module")
def unscripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway over an emulator whose model calls the first tool offered, with ``{}``."""
    yield from module_gateway(tmp_path_factory, "unscripted")


@pytest.fixture
def plain(unscripted: Gateway) -> Iterator[Gateway]:
    unscripted.emulator.clear_requests()
    unscripted.access.lines.clear()
    yield unscripted
    unscripted.emulator.assert_no_refusals()


def sent(gateway: Gateway) -> dict[str, Any]:
    (record,) = gateway.emulator.requests_to("responses")
    document = json.loads(record.body)
    assert isinstance(document, dict)
    return document


def call_output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "done"}


def test_codex_tools_go_upstream_as_plain_function_tools(gw: Gateway) -> None:
    status, _, answer = gw.post("/v1/responses", responses_body())
    assert status == 200, answer
    tools = sent(gw)["tools"]
    assert [tool["type"] for tool in tools] == ["function"] * 4
    assert [tool["name"] for tool in tools] == [
        "exec_command",
        "apply_patch",
        "multi_agent_v1__spawn_agent",
        "multi_agent_v1__exec_command",
    ]
    patch_tool = tools[1]
    assert patch_tool["parameters"]["required"] == ["input"]
    assert patch_tool["parameters"]["properties"]["input"]["type"] == "string"
    assert "Apply a patch." in patch_tool["description"]
    assert "lark" in patch_tool["description"]
    assert "start: begin_patch hunk+" in patch_tool["description"]
    assert tools[0] == EXEC
    assert rewrote(gw) == ["namespaces", "web-search", "custom-tools"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_custom_tool_call_comes_back_as_custom_tool_call(gw: Gateway, stream: bool) -> None:
    status, _, answer = gw.post("/v1/responses", responses_body(stream=stream))
    assert status == 200
    if not stream:
        (item,) = answer["output"]
    else:
        events = events_of(answer)
        kinds = [event["type"] for event in events]
        assert "response.function_call_arguments.delta" not in kinds
        assert "response.function_call_arguments.done" not in kinds
        assert kinds.count("response.custom_tool_call_input.delta") >= 1
        added = next(e for e in events if e["type"] == "response.output_item.added")
        assert added["item"]["type"] == "custom_tool_call"
        assert added["item"]["name"] == "apply_patch"
        deltas = "".join(
            e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta"
        )
        assert deltas == PATCH
        done = next(e for e in events if e["type"] == "response.custom_tool_call_input.done")
        assert done["input"] == PATCH
        assert done["item_id"] == added["item"]["id"]
        (item,) = next(e for e in events if e["type"] == "response.completed")["response"]["output"]
        finished = next(e for e in events if e["type"] == "response.output_item.done")["item"]
        assert finished == item
        # The event names match their data.
        assert re.findall(r"^event: (\S+)$", answer, re.M) == kinds
    assert item["type"] == "custom_tool_call"
    assert item["name"] == "apply_patch"
    assert item["input"] == PATCH
    assert "arguments" not in item
    assert item["call_id"].startswith("call_") and item["id"] and item["status"] == "completed"


@pytest.mark.parametrize("stream", [False, True])
def test_namespaced_calls_come_back_with_their_namespace(gw: Gateway, stream: bool) -> None:
    patch_call = {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch"}
    history = [
        USER,
        {**patch_call, "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "call_p", "output": "patched"},
    ]
    status, _, answer = gw.post("/v1/responses", responses_body(input=history, stream=stream))
    assert status == 200
    upstream = sent(gw)["input"]
    # The earlier custom call went upstream as the function call it stands for.
    assert upstream[1] == {
        "type": "function_call",
        "call_id": "call_p",
        "name": "apply_patch",
        "arguments": json.dumps({"input": PATCH}),
    }
    assert upstream[2] == {"type": "function_call_output", "call_id": "call_p", "output": "patched"}
    output = _output(answer, stream=stream)
    (item,) = output
    assert item["type"] == "function_call"
    assert (item["name"], item["namespace"]) == ("spawn_agent", "multi_agent_v1")
    assert json.loads(item["arguments"]) == {"task": "look"}

    # Its result, and Codex's namespaced call as it sends it back: by its flat name upstream.
    gw.emulator.clear_requests()
    gw.access.lines.clear()
    namespaced = {
        "type": "function_call",
        "call_id": item["call_id"],
        "name": "spawn_agent",
        "namespace": "multi_agent_v1",
        "arguments": item["arguments"],
    }
    history += [namespaced, call_output(item["call_id"])]
    status, _, answer = gw.post("/v1/responses", responses_body(input=history, stream=stream))
    assert status == 200
    sent_call = sent(gw)["input"][3]
    assert sent_call["name"] == "multi_agent_v1__spawn_agent" and "namespace" not in sent_call
    output = _output(answer, stream=stream)
    (item,) = output
    assert (item["name"], item["namespace"]) == ("exec_command", "multi_agent_v1")


@pytest.mark.parametrize("stream", [False, True])
def test_additional_tools_join_tools(gw: Gateway, stream: bool) -> None:
    extra = {"type": "additional_tools", "role": "developer", "tools": [NAMESPACE, APPLY_PATCH]}
    body = {"model": "gpt-5.5", "input": [extra, USER], "tools": [EXEC], "stream": stream}
    status, _, answer = gw.post("/v1/responses", body)
    assert status == 200, answer
    upstream = sent(gw)
    assert upstream["input"] == [USER]
    assert [tool["name"] for tool in upstream["tools"]] == [
        "exec_command",
        "multi_agent_v1__spawn_agent",
        "multi_agent_v1__exec_command",
        "apply_patch",
    ]
    assert rewrote(gw) == ["additional-tools", "namespaces", "custom-tools"]
    if stream:
        completed = next(e for e in events_of(answer) if e["type"] == "response.completed")
        (item,) = completed["response"]["output"]
    else:
        (item,) = answer["output"]
    assert item["type"] == "custom_tool_call"


def test_long_or_odd_namespaced_names_get_a_hash_and_map_back(plain: Gateway) -> None:
    gw = plain
    namespace = "mcp__my-server.with.dots"
    member = "tool_" + "x" * 70
    tool = {
        "type": "namespace",
        "name": namespace,
        "description": "an MCP server",
        "tools": [{**SPAWN, "name": member}, {**SPAWN, "name": "spawn_agent"}],
    }
    # Two namespaces holding spawn_agent: both get their prefix, one with a hash.
    body = {"model": "gpt-5.5", "input": [USER], "tools": [tool, NAMESPACE]}
    status, _, answer = gw.post("/v1/responses", body)
    assert status == 200
    names = [tool["name"] for tool in sent(gw)["tools"]]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in names), names
    assert len(set(names)) == len(names)
    assert "multi_agent_v1__spawn_agent" in names
    # The emulator called the first tool, by the flat name it was given.
    (item,) = answer["output"]
    assert (item["name"], item["namespace"]) == (member, namespace)


def test_plain_function_calls_and_their_streams_are_left_alone(plain: Gateway) -> None:
    gw = plain
    body = {"model": "gpt-5.5", "input": [USER], "tools": [EXEC], "stream": True}
    status, _, answer = gw.post("/v1/responses", body)
    assert status == 200
    kinds = [event["type"] for event in events_of(answer)]
    assert "response.function_call_arguments.done" in kinds
    assert rewrote(gw) == []
    (record,) = gw.emulator.requests_to("responses")
    assert json.loads(record.body) == body  # the client's request as it was


@pytest.mark.parametrize("stream", [False, True])
def test_max_output_tokens_is_capped(gw: Gateway, stream: bool) -> None:
    body = {"model": "gpt-5.5", "input": "hi", "max_output_tokens": 500000, "stream": stream}
    status, _, _ = gw.post("/v1/responses", body)
    assert status == 200
    assert sent(gw)["max_output_tokens"] == 128000
    assert rewrote(gw) == ["max_output_tokens"]


def test_without_the_rewrites_the_emulator_refuses_each_shape(tmp_path: Path) -> None:
    off = frozenset(REWRITES) - {"namespaces", "additional-tools", "web-search", "custom-tools"}
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, tmp_path / "home", rewrites=off) as gateway,
    ):
        for tools, check in (
            ([APPLY_PATCH], "custom_tools"),
            ([NAMESPACE], "namespace_tools"),
            ([WEB_SEARCH], "web_search_tools"),
        ):
            status, _, _ = gateway.post(
                "/v1/responses", {"model": "gpt-5.5", "input": "hi", "tools": tools}
            )
            assert status == 400
            assert emulator.refusals[-1].refusal == check


@pytest.mark.parametrize("stream", [False, True])
def test_a_custom_tool_inside_a_namespace_comes_back_custom_and_namespaced(
    plain: Gateway, stream: bool
) -> None:
    exec_tool = {**APPLY_PATCH, "name": "exec", "description": "run code"}
    tool = {"type": "namespace", "name": "code_mode", "description": "code", "tools": [exec_tool]}
    body = {"model": "gpt-5.5", "input": [USER], "tools": [tool], "stream": stream}
    status, _, answer = plain.post("/v1/responses", body)
    assert status == 200
    (sent_tool,) = sent(plain)["tools"]
    assert (sent_tool["type"], sent_tool["name"]) == ("function", "code_mode__exec")
    if stream:
        events = events_of(answer)
        kinds = [event["type"] for event in events]
        assert "response.custom_tool_call_input.done" in kinds
        (item,) = next(e for e in events if e["type"] == "response.completed")["response"]["output"]
    else:
        (item,) = answer["output"]
    # The emulator called it with {}: an empty input.
    assert (item["type"], item["name"], item["namespace"], item["input"]) == (
        "custom_tool_call",
        "exec",
        "code_mode",
        "",
    )


def test_a_tool_choice_for_a_custom_or_namespaced_tool_names_the_flat_function(
    gw: Gateway,
) -> None:
    choice = {"type": "function", "name": "exec_command", "namespace": "multi_agent_v1"}
    status, _, _ = gw.post("/v1/responses", responses_body(tool_choice=choice))
    assert status == 200
    assert sent(gw)["tool_choice"] == {"type": "function", "name": "multi_agent_v1__exec_command"}
    gw.emulator.clear_requests()
    gw.access.lines.clear()
    gw.post("/v1/responses", responses_body(tool_choice={"type": "custom", "name": "apply_patch"}))
    assert sent(gw)["tool_choice"] == {"type": "function", "name": "apply_patch"}


@pytest.mark.parametrize("kind", [[], {}, ["response.output_item.added"], 7, None])
def test_an_answer_whose_type_is_not_text_goes_on_as_it_came(kind: object) -> None:
    """An upstream event or output item whose ``type`` is a list or an object (no type the
    answer changes know, and nothing a set can hold) goes on as it came, beside the items
    they map: such an event made them raise, which cut a stream after it had started."""
    from copilot_host.gateway._changes import AnswerPass
    from copilot_host.gateway._changes._tool_answers import CustomAnswers, NamespaceAnswers
    from copilot_host.gateway._changes._tools import FlatTool

    answers = AnswerPass(
        [
            NamespaceAnswers({"ns__f": FlatTool("f", "ns", custom=False)}),
            CustomAnswers(frozenset({"patch"})),
        ]
    )
    odd = {"type": kind, "name": "ns__f", "item_id": "fc_1", "note": "function_call"}
    event = {**odd, "item": odd, "response": {"output": [odd]}}
    block = b"event: x\ndata: " + json.dumps(event).encode() + b"\n\n"
    assert answers.events(block) == block
    call = {"type": "function_call", "name": "patch", "arguments": '{"input": "x"}'}
    whole = json.loads(answers.whole(json.dumps({"output": [odd, call]}).encode()))
    assert whole["output"] == [odd, {"type": "custom_tool_call", "name": "patch", "input": "x"}]
