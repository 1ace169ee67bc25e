"""The official OpenAI and Anthropic SDKs, unchanged, against a real gateway (uvicorn on a
loopback port) in front of the strict emulator: chat and responses, sync and async,
whole and streamed; messages whole and streamed; the model lists. What reached the
emulator shows what the gateway sent: the route's origin and path, the session bearer,
never the client's key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.gateway._support import Gateway
from tests.gateway.conftest import fresh_view


@pytest.fixture
def gateway(shared_gateway: Gateway) -> Iterator[Gateway]:
    """One gateway for the module: these tests log nobody in or out."""
    yield from fresh_view(shared_gateway)


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
COPILOT = "api.individual.githubcopilot.com"


def _upstream_is_clean(gateway: Gateway, endpoint: str) -> None:
    """Every request to ``endpoint`` went to the route's origin and protocol path, with the
    session bearer and without the client's key anywhere."""
    sent = gateway.emulator.requests_to(endpoint)
    assert sent
    for record in sent:
        assert record.host == COPILOT
        assert record.headers["authorization"].startswith("Bearer tid=")
        assert gateway.key not in repr(dict(record.headers))
        assert gateway.key.encode() not in record.body
        assert "x-api-key" not in record.headers
    assert gateway.emulator.refused == ()


def test_openai_sdk_sync_chat_whole_and_streamed(gateway: Gateway) -> None:
    client = gateway.openai()
    whole = client.chat.completions.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "Hello"}]
    )
    assert whole.choices[0].message.content == "echo: Hello"
    assert whole.model == "gpt-4.1"
    stream = client.chat.completions.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "Hello"}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "echo: Hello"
    assert [r.path for r in gateway.emulator.requests_to("chat")] == ["/chat/completions"] * 2
    _upstream_is_clean(gateway, "chat")


def test_openai_sdk_sync_responses_whole_and_streamed(gateway: Gateway) -> None:
    client = gateway.openai()
    assert client.responses.create(model="gpt-5.5", input="Hi there").output_text == (
        "echo: Hi there"
    )
    with client.responses.stream(model="gpt-5.5", input="Hi there") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "echo: Hi there" == final.output_text
    assert [r.path for r in gateway.emulator.requests_to("responses")] == ["/responses"] * 2
    _upstream_is_clean(gateway, "responses")


def test_openai_sdk_async_chat_and_responses_streamed(gateway: Gateway) -> None:
    async def run() -> tuple[str, str, str]:
        client = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gateway.key)
        async with client:
            whole = await client.chat.completions.create(
                model="gpt-5.4", messages=[{"role": "user", "content": "async"}]
            )
            chat = await client.chat.completions.create(
                model="gpt-5.4", messages=[{"role": "user", "content": "async"}], stream=True
            )
            chat_text = "".join([c.choices[0].delta.content or "" async for c in chat if c.choices])
            responses = await client.responses.create(model="gpt-5.4", input="async", stream=True)
            response_text = "".join(
                [e.delta async for e in responses if e.type == "response.output_text.delta"]
            )
            return whole.choices[0].message.content or "", chat_text, response_text

    assert asyncio.run(run()) == ("echo: async",) * 3


def test_openai_sdk_with_an_image_and_a_tool_loop(gateway: Gateway) -> None:
    """route.auth sets the vision and X-Initiator headers from the relayed body: the image
    is accepted, and the tool result's follow-up is the agent's turn."""
    client = gateway.openai()
    image: Any = [
        {"type": "text", "text": "What is in it?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]
    client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": image}])
    tool: Any = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    }
    messages: list[Any] = [{"role": "user", "content": "Weather?"}]
    first = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=[tool])
    calls = first.choices[0].message.tool_calls
    assert calls is not None
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": calls[0].id, "content": "sunny"},
    ]
    second = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=[tool])
    assert second.choices[0].message.content
    sent = [(r.vision, r.initiator) for r in gateway.emulator.requests_to("chat")]
    assert sent == [(True, "user"), (False, "user"), (False, "agent")]


def test_anthropic_sdk_messages_whole_and_streamed(gateway: Gateway) -> None:
    client = gateway.anthropic()
    whole = client.messages.create(
        model="claude-opus-5", max_tokens=64, messages=[{"role": "user", "content": "Bonjour"}]
    )
    assert whole.content[0].type == "text"
    assert whole.content[0].text == "echo: Bonjour"
    with client.messages.stream(
        model="claude-sonnet-4.6", max_tokens=64, messages=[{"role": "user", "content": "Bonjour"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "echo: Bonjour"
    assert final.stop_reason == "end_turn"
    sent = gateway.emulator.requests_to("messages")
    assert [r.path for r in sent] == ["/v1/messages"] * 2
    # The Messages API version header is the client's, forwarded.
    version = client.default_headers["anthropic-version"]
    assert {r.headers.get("anthropic-version") for r in sent} == {version}
    _upstream_is_clean(gateway, "messages")


def test_anthropic_sdk_errors_arrive_in_anthropics_shape(gateway: Gateway) -> None:
    client = gateway.anthropic()
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(
            model="gpt-4.1", max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
    assert refused.value.status_code == 400
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "/v1/chat/completions" in refused.value.message
    wrong = gateway.anthropic(api_key="cph_wrong")
    with pytest.raises(anthropic.AuthenticationError) as unauthorized:
        wrong.models.list()
    assert unauthorized.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


def test_model_lists_for_both_sdks(gateway: Gateway) -> None:
    listed = gateway.openai().models.list().data
    ids = [m.id for m in listed]
    assert ids == sorted(ids) and "gpt-4.1" in ids and "claude-opus-5" in ids
    assert {m.object for m in listed} == {"model"}
    assert {m.owned_by for m in listed} == {"github-copilot"}
    assert gateway.openai().models.retrieve("gpt-4.1").id == "gpt-4.1"
    # Anthropic clients see only the models served on /v1/messages (Copilot Auto among
    # them: its pool has one).
    claude = [m.id for m in gateway.anthropic().models.list()]
    assert claude and all(model_id.startswith("claude-") for model_id in claude[1:])
    assert claude[0] == "auto"
    assert "claude-opus-5" in claude and "gpt-4.1" not in claude
    assert gateway.anthropic().models.retrieve("claude-opus-5").display_name


def test_a_route_id_names_the_model_too(gateway: Gateway) -> None:
    client = gateway.openai()
    answer = client.chat.completions.create(
        model="github-copilot/gpt-4.1", messages=[{"role": "user", "content": "by route"}]
    )
    assert answer.choices[0].message.content == "echo: by route"
    # Upstream knows the model by its own id: only "model" was rewritten.
    (record,) = gateway.emulator.requests_to("chat")
    assert json.loads(record.body) == {
        "model": "gpt-4.1",
        "messages": [{"role": "user", "content": "by route"}],
    }
