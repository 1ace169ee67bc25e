"""The official SDKs parse every emulated answer, with their strict response validation on.

The headers a compliant client sends are set here by hand (in applications ``route.auth``
adds them); the SDKs talk to the emulator through its transport.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionChunk

from copilot_host.testing import GitHubEmulator, Inventory, Replies, Scenario, chat_model
from tests.testing._support import TOOL, Copilot, anthropic_sdk, openai_sdk, session

ALL = ("/chat/completions", "/responses", "/v1/messages")
SCENARIO = Scenario(
    inventory=Inventory(models=(chat_model("m", endpoints=ALL, vision=True),)),
    replies=Replies(stream_events=3),
)


@pytest.fixture
def copilot() -> Iterator[tuple[str, str, httpx2.Client]]:
    with (
        GitHubEmulator(SCENARIO) as emu,
        httpx2.Client(transport=emu.transport()) as http,
    ):
        origin, token = session(emu, http)
        yield origin, token, http


@pytest.fixture
def oai(copilot: Copilot) -> openai.OpenAI:
    return openai_sdk(copilot)


@pytest.fixture
def lax(copilot: Copilot) -> openai.OpenAI:
    """The SDK as applications use it: its default, lenient parsing."""
    return openai_sdk(copilot, strict=False)


def _strictly(chunks: list[ChatCompletionChunk]) -> list[ChatCompletionChunk]:
    """Every chunk but the prompt-filter one, validated as strictly as a whole answer."""
    (first, *rest) = chunks
    assert (first.choices, first.id, first.object) == ([], "", "")
    return [ChatCompletionChunk.model_validate(c.model_dump(exclude_unset=True)) for c in rest]


@pytest.fixture
def claude(copilot: Copilot) -> anthropic.Anthropic:
    return anthropic_sdk(copilot)


HI: list[Any] = [{"role": "user", "content": "hi"}]


def test_openai_chat_whole_and_streamed(oai: openai.OpenAI, lax: openai.OpenAI) -> None:
    whole = oai.chat.completions.create(model="m", messages=HI)
    assert whole.choices[0].message.content == "echo: hi"
    chunks = _strictly(list(lax.chat.completions.create(model="m", messages=HI, stream=True)))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "echo: hi"
    with lax.chat.completions.stream(model="m", messages=HI) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "echo: hi"


def test_openai_chat_tool_call(oai: openai.OpenAI, lax: openai.OpenAI) -> None:
    whole = oai.chat.completions.create(model="m", messages=HI, tools=[TOOL["chat"]])
    (call,) = whole.choices[0].message.tool_calls or []
    assert (call.function.name, call.function.arguments) == ("get_weather", "{}")  # type: ignore[union-attr]
    raw = lax.chat.completions.create(model="m", messages=HI, tools=[TOOL["chat"]], stream=True)
    assert _strictly(list(raw))[-1].choices[0].finish_reason == "tool_calls"
    with lax.chat.completions.stream(model="m", messages=HI, tools=[TOOL["chat"]]) as stream:
        final = stream.get_final_completion()
    (streamed,) = final.choices[0].message.tool_calls or []
    assert (streamed.function.name, streamed.function.arguments) == ("get_weather", "{}")
    assert final.choices[0].finish_reason == "tool_calls"


def test_openai_responses_whole_and_streamed(oai: openai.OpenAI) -> None:
    whole = oai.responses.create(model="m", input="hi")
    assert whole.output_text == "echo: hi"
    events = list(oai.responses.create(model="m", input="hi", stream=True))
    assert events[-1].type == "response.completed"
    with oai.responses.stream(model="m", input="hi") as stream:
        final = stream.get_final_response()
    assert final.output_text == "echo: hi"


def test_openai_responses_tool_call(oai: openai.OpenAI) -> None:
    whole = oai.responses.create(model="m", input="hi", tools=[TOOL["responses"]])
    (call,) = whole.output
    assert (call.type, call.name, call.arguments) == ("function_call", "get_weather", "{}")  # type: ignore[union-attr]
    with oai.responses.stream(model="m", input="hi", tools=[TOOL["responses"]]) as stream:
        final = stream.get_final_response()
    assert final.output[0].type == "function_call"


def test_openai_sees_a_refusal_as_its_own_error(oai: openai.OpenAI) -> None:
    image: Any = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(model="m", messages=[{"role": "user", "content": image}])
    assert caught.value.status_code == 400
    assert "missing required Copilot-Vision-Request header" in str(caught.value)
    assert caught.value.response.headers["x-github-request-id"]


def test_anthropic_messages_whole_and_streamed(claude: anthropic.Anthropic) -> None:
    whole = claude.messages.create(model="m", max_tokens=64, messages=HI)
    assert whole.content[0].type == "text"
    assert whole.content[0].text == "echo: hi"
    events = list(claude.messages.create(model="m", max_tokens=64, messages=HI, stream=True))
    assert [e.type for e in events] == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 3,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    with claude.messages.stream(model="m", max_tokens=64, messages=HI) as stream:
        streamed_text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed_text == "echo: hi"
    assert final.content[0].type == "text"
    assert final.content[0].text == "echo: hi"
    assert final.stop_reason == "end_turn"


def test_anthropic_tool_use(claude: anthropic.Anthropic) -> None:
    tools: Any = [TOOL["messages"]]
    whole = claude.messages.create(model="m", max_tokens=64, messages=HI, tools=tools)
    block = whole.content[0]
    assert (block.type, whole.stop_reason) == ("tool_use", "tool_use")
    assert (block.name, block.input) == ("get_weather", {})  # type: ignore[union-attr]
    with claude.messages.stream(model="m", max_tokens=64, messages=HI, tools=tools) as stream:
        final = stream.get_final_message()
    assert final.content[0].type == "tool_use"
    assert final.content[0].input == {}
