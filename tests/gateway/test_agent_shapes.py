"""The shapes no tested agent sends yet (docs/WIRE.md, "Shapes no tested agent sends yet"),
each sent through a real gateway to the loopback emulator: what the gateway does with it
(rewrites it, answers it, or passes it on as it came), and, for each rewrite, that the
emulator refuses the shape unchanged (a gateway with its rewrites off sends it as it came),
so the rewrite is what makes the request go through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
import pytest

from copilot_host.gateway import REWRITES
from copilot_host.gateway._changes import PASSED as PASSED_SHAPES
from copilot_host.testing import GitHubEmulator, Scenario, Usage
from tests.gateway._rewrites_support import checked, module_gateway, rewrote
from tests.gateway._support import Gateway, running_gateway

MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
CHAT = "/v1/chat/completions"
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
READ = {"name": "Read", "description": "read a file", "input_schema": {"type": "object"}}
EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "run a command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}


def messages(**more: Any) -> dict[str, Any]:
    body = {"model": "claude-sonnet-4.6", "max_tokens": 1000}
    return {**body, "messages": [{"role": "user", "content": "hi"}], **more}


def responses(**more: Any) -> dict[str, Any]:
    return {"model": "gpt-5.5", "input": [USER], **more}


def chat(model: str, **more: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **more}


@dataclass(frozen=True)
class Shape:
    """One shape: where it goes, the body, the beta header it goes with, and what the
    gateway does: ``rewrite`` (its name; the emulator's ``check`` refuses it unchanged),
    or ``passed`` (a key of PASSED_SHAPES: it goes upstream as it came)."""

    path: str
    body: dict[str, Any]
    beta: str = ""
    rewrite: str | None = None
    check: str | None = None
    passed: str | None = None


MCP = [{"type": "url", "url": "https://mcp.example.invalid/sse", "name": "docs"}]
SEARCH = {"name": "tool_search_tool_regex", "type": "tool_search_tool_regex_20251119"}
REFERENCE = {"type": "tool_reference", "tool_name": "Read"}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [REFERENCE]}
ADVANCED = "advanced-tool-use-2025-11-20"
TTL = "extended-cache-ttl-2025-04-11"


def _system(control: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "be brief", "cache_control": control}]


def _turns_with_a_reference() -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": "toolu_1", "name": "tool_search_tool_regex", "input": {}}
    return [
        {"role": "user", "content": "find the read tool"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [TOOL_RESULT, {"type": "text", "text": "now read"}]},
    ]


SHAPES: dict[str, Shape] = {
    "tool search without its beta": Shape(
        MESSAGES,
        messages(tools=[SEARCH, {**READ, "defer_loading": True}]),
        rewrite="tool-search",
        check="tool_search",
    ),
    "a tool_reference without its beta": Shape(
        MESSAGES,
        messages(messages=_turns_with_a_reference(), tools=[READ]),
        rewrite="tool-search",
        check="tool_search",
    ),
    "tool search with its beta": Shape(
        MESSAGES,
        messages(tools=[SEARCH, {**READ, "defer_loading": True}]),
        beta=ADVANCED,
        passed="messages: tool search with advanced-tool-use",
    ),
    "cache_control scope": Shape(
        MESSAGES,
        messages(system=_system({"type": "ephemeral", "scope": "global"})),
        rewrite="cache-control",
        check="cache_control",
    ),
    "cache_control ttl without its beta": Shape(
        MESSAGES,
        messages(
            tools=[{**READ, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            cache_control={"type": "ephemeral", "ttl": "1h"},
        ),
        rewrite="cache-control",
        check="cache_control",
    ),
    "cache_control ttl with its beta": Shape(
        MESSAGES,
        messages(system=_system({"type": "ephemeral", "ttl": "1h"})),
        beta=TTL,
        passed="messages: cache_control ttl with extended-cache-ttl",
    ),
    "output_config effort max": Shape(
        MESSAGES,
        messages(output_config={"effort": "max"}, thinking={"type": "adaptive"}),
        rewrite="effort",
        check="effort",
    ),
    "adaptive thinking": Shape(
        MESSAGES,
        messages(thinking={"type": "adaptive"}),
        passed="messages: thinking.type adaptive",
    ),
    "metadata": Shape(
        MESSAGES,
        messages(metadata={"user_id": "user_0123"}),
        passed="messages: metadata",
    ),
    "output_config effort medium": Shape(
        MESSAGES,
        messages(output_config={"effort": "medium"}, thinking={"type": "adaptive"}),
        passed="messages: output_config",
    ),
    "hosted tools": Shape(
        RESPONSES,
        responses(
            tools=[
                EXEC,
                {"type": "image_generation"},
                {"type": "local_shell"},
                {"type": "file_search", "vector_store_ids": ["vs_1"]},
                {"type": "mcp", "server_label": "docs", "server_url": "https://x.invalid"},
            ],
            tool_choice={"type": "image_generation"},
        ),
        rewrite="hosted-tools",
        check="hosted_tools",
    ),
    "reasoning.context": Shape(
        RESPONSES,
        responses(reasoning={"effort": "medium", "context": "all_turns"}),
        rewrite="reasoning-context",
        check="reasoning_context",
    ),
    "temperature to a GPT-5 model on Responses": Shape(
        RESPONSES,
        responses(temperature=0, top_p=0.9),
        rewrite="sampling",
        check="sampling",
    ),
    "temperature and max_tokens to a GPT-5 model on Chat": Shape(
        CHAT,
        chat("gpt-5-mini", temperature=0, max_tokens=100),
        rewrite="sampling",
        check="sampling",
    ),
    "temperature and max_tokens to gpt-4.1": Shape(
        CHAT,
        chat("gpt-4.1", temperature=0, max_tokens=100),
        passed="chat: temperature and max_tokens to other models",
    ),
    "compaction input items": Shape(
        RESPONSES,
        responses(input=[{"type": "compaction", "encrypted_content": "gAAAA"}, USER]),
        passed="responses: compaction input items",
    ),
    "Codex's tool_search tool": Shape(
        RESPONSES,
        responses(tools=[EXEC, {"type": "tool_search"}]),
        passed="responses: tool_search tool",
    ),
    "client_metadata": Shape(
        RESPONSES,
        responses(client_metadata={"session_id": "0190", "turn_id": "1"}),
        passed="responses: client_metadata",
    ),
    "text.verbosity": Shape(
        RESPONSES, responses(text={"verbosity": "low"}), passed="responses: text.verbosity"
    ),
    "prompt_cache_key": Shape(
        RESPONSES, responses(prompt_cache_key="0190:gpt-5.5"), passed="responses: prompt_cache_key"
    ),
}


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from module_gateway(tmp_path_factory, "shapes")


@pytest.fixture
def shaped(started: Gateway) -> Iterator[Gateway]:
    yield from checked(started)


@pytest.fixture(scope="module")
def unchanged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway with every rewrite that can be turned off turned off."""
    home = tmp_path_factory.mktemp("unchanged") / "home"
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, home, rewrites=frozenset()) as running,
    ):
        yield running


def _send(gateway: Gateway, shape: Shape) -> tuple[int, Any]:
    headers = {"anthropic-beta": shape.beta} if shape.beta else {}
    status, _headers, body = gateway.post(shape.path, shape.body, headers=headers)
    return status, body


def _upstream(gateway: Gateway) -> dict[str, Any]:
    (sent,) = [r for r in gateway.emulator.requests if r.endpoint != "models"][-1:]
    body: dict[str, Any] = json.loads(sent.body)
    return body


def test_every_shape_is_a_rewrite_or_a_documented_pass() -> None:
    for name, shape in SHAPES.items():
        assert (shape.rewrite is None) != (shape.passed is None), name
        if shape.rewrite is not None:
            assert shape.rewrite in REWRITES, name
        else:
            assert shape.passed in PASSED_SHAPES, name
    # Each pass the table documents is sent here.
    assert {shape.passed for shape in SHAPES.values()} - {None} == set(PASSED_SHAPES)


@pytest.mark.parametrize("name", [name for name, shape in SHAPES.items() if shape.rewrite])
def test_a_rewritten_shape_goes_through_and_unchanged_is_refused(
    shaped: Gateway, unchanged: Gateway, name: str
) -> None:
    shape = SHAPES[name]
    status, body = _send(shaped, shape)
    assert status == 200, body
    assert shape.rewrite in rewrote(shaped)
    # Sent as it came, the emulator refuses it by the rule named for it.
    unchanged.emulator.clear_requests()
    status, body = _send(unchanged, shape)
    assert status == 400, body
    (refused,) = unchanged.emulator.refusals
    assert refused.refusal == shape.check


@pytest.mark.parametrize("name", [name for name, shape in SHAPES.items() if shape.passed])
def test_a_passed_shape_goes_upstream_as_it_came(shaped: Gateway, name: str) -> None:
    shape = SHAPES[name]
    status, body = _send(shaped, shape)
    assert status == 200, body
    sent = _upstream(shaped)
    for key, value in shape.body.items():
        if key != "model":
            assert sent[key] == value, key


def test_what_each_rewrite_leaves(shaped: Gateway) -> None:
    _send(shaped, SHAPES["tool search without its beta"])
    sent = _upstream(shaped)
    assert sent["tools"] == [READ]  # the search tool gone, Read loaded eagerly
    _send(shaped, SHAPES["a tool_reference without its beta"])
    result = _upstream(shaped)["messages"][2]["content"][0]
    assert result["content"] == [{"type": "text", "text": "Tool: Read"}]
    _send(shaped, SHAPES["cache_control ttl without its beta"])
    sent = _upstream(shaped)
    assert sent["cache_control"] == sent["tools"][0]["cache_control"] == {"type": "ephemeral"}
    _send(shaped, SHAPES["cache_control scope"])
    assert _upstream(shaped)["system"][0]["cache_control"] == {"type": "ephemeral"}
    _send(shaped, SHAPES["output_config effort max"])
    assert _upstream(shaped)["output_config"] == {"effort": "high"}
    _send(shaped, SHAPES["hosted tools"])
    sent = _upstream(shaped)
    assert sent["tools"] == [EXEC] and "tool_choice" not in sent
    _send(shaped, SHAPES["reasoning.context"])
    assert _upstream(shaped)["reasoning"] == {"effort": "medium"}
    _send(shaped, SHAPES["temperature to a GPT-5 model on Responses"])
    assert not {"temperature", "top_p"} & set(_upstream(shaped))
    _send(shaped, SHAPES["temperature and max_tokens to a GPT-5 model on Chat"])
    sent = _upstream(shaped)
    assert "temperature" not in sent and "max_tokens" not in sent
    assert sent["max_completion_tokens"] == 100


def test_mcp_servers_is_answered_by_the_gateway(shaped: Gateway, unchanged: Gateway) -> None:
    client = anthropic.Anthropic(base_url=shaped.root_url, api_key=shaped.key, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(**messages(), extra_body={"mcp_servers": MCP})
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "remote MCP servers (mcp_servers)" in refused.value.message
    assert not shaped.emulator.requests_to("messages")
    assert rewrote(shaped) == ["mcp-servers"]
    # Unchanged, the emulator refuses the field.
    unchanged.emulator.clear_requests()
    status, _headers, _body = unchanged.post(MESSAGES, messages(mcp_servers=MCP))
    assert status == 400
    assert [r.refusal for r in unchanged.emulator.refusals] == ["mcp_servers"]


AUTO_ONLY = Scenario(usage=Usage(auto_only=True))


@pytest.mark.parametrize("emulator", [AUTO_ONLY], indirect=True)
def test_an_auto_only_plan_is_told_in_the_clients_own_shape(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """A named model on a plan that can use only Auto is refused in the client's API's
    shape (never the service's OpenAI-shaped words on /v1/messages), saying so and naming
    the model auto: by the gateway itself when the registration knew the plan (the named
    models are not served), by the AutoOnlyRefusal reshape when the service refused."""
    claude = gateway.anthropic()
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(**messages())
    error = refused.value.body["error"]  # type: ignore[index]
    assert refused.value.body["type"] == "error"  # type: ignore[index]
    assert error["type"] == "invalid_request_error"
    assert re.search(r"can use only (Copilot )?Auto model selection", error["message"])
    assert re.search(r"\bauto\b", error["message"].replace("Auto model", ""))
    with pytest.raises(openai.BadRequestError) as refused_too:
        gateway.openai().chat.completions.create(**chat("gpt-4.1"))
    assert refused_too.value.code == "model_not_supported"
    assert re.search(r"can use only (Copilot )?Auto model selection", refused_too.value.message)
