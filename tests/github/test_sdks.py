"""The official OpenAI and Anthropic SDKs through route.auth, against the strict emulator:
every protocol, whole and streamed, with images and tool loops. The emulator refuses image
input without the vision header, as the real service does, and records the vision and
X-Initiator headers of each request, so these tests show what route.auth sent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, RecordedRequest

PLACEHOLDER = "sk-placeholder-never-sent"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
# JSON for the wire, as an application sends it (the SDKs' TypedDicts would demand
# fields such as the Responses API's "strict", which real clients omit).
TOOL: dict[str, Any] = {
    "chat": {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    },
    "responses": {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {}},
    },
    "messages": {"name": "get_weather", "input_schema": {"type": "object", "properties": {}}},
}


class Account:
    """A logged-in emulated account and its registered routes."""

    def __init__(self, emulator: GitHubEmulator, catalog: ch.Catalog) -> None:
        self.emulator = emulator
        self.catalog = catalog

    def route(self, model_id: str) -> ch.ModelRoute:
        route = self.catalog.get(f"github-copilot/{model_id}")
        assert route is not None
        return route

    def last(self, endpoint: str) -> RecordedRequest:
        return self.emulator.requests_to(endpoint)[-1]

    def sent(self, endpoint: str) -> list[tuple[bool, str | None]]:
        """(vision header, X-Initiator) of every request to ``endpoint``, in order."""
        return [(r.vision, r.initiator) for r in self.emulator.requests_to(endpoint)]


@pytest.fixture
def account(tmp_path: Path) -> Iterator[Account]:
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home")
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as host:
            host.login(sleep=lambda _seconds: None)
            catalog = ch.Catalog()
            ch.register_models(catalog, host)
            emulator.clear_requests()
            yield Account(emulator, catalog)
        for request in emulator.requests:
            assert PLACEHOLDER not in str(dict(request.headers))


@contextmanager
def _openai(account: Account, route: ch.ModelRoute) -> Iterator[openai.OpenAI]:
    with httpx2.Client(auth=route.auth, transport=account.emulator.transport()) as http:
        yield openai.OpenAI(base_url=route.origin, api_key=PLACEHOLDER, http_client=http)


@contextmanager
def _anthropic(account: Account, route: ch.ModelRoute) -> Iterator[anthropic.Anthropic]:
    with httpx2.Client(auth=route.auth, transport=account.emulator.transport()) as http:
        yield anthropic.Anthropic(
            base_url=route.origin, auth_token=PLACEHOLDER, http_client=http, max_retries=0
        )


def test_openai_chat_with_an_image_whole_and_streamed(account: Account) -> None:
    route = account.route("gpt-4.1")
    with _openai(account, route) as client:
        image: Any = [
            {"type": "text", "text": "What is in it?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ]
        whole = client.chat.completions.create(
            model=route.model_id, messages=[{"role": "user", "content": image}]
        )
        assert whole.choices[0].message.content
        streamed = client.chat.completions.create(
            model=route.model_id, messages=[{"role": "user", "content": "Hello"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert text.startswith("echo: Hello")
        assert account.sent("chat") == [(True, "user"), (False, "user")]


def test_openai_chat_tool_loop_is_billed_once(account: Account) -> None:
    route = account.route("gpt-4.1")
    with _openai(account, route) as client:
        messages: list[Any] = [{"role": "user", "content": "Weather?"}]
        first = client.chat.completions.create(
            model=route.model_id, messages=messages, tools=[TOOL["chat"]]
        )
        call = first.choices[0].message.tool_calls
        assert call is not None
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call[0].id, "content": "sunny"},
        ]
        second = client.chat.completions.create(
            model=route.model_id, messages=messages, tools=[TOOL["chat"]]
        )
        assert second.choices[0].message.content
        # The person's turn is billed; the tool result's follow-up is the agent's.
        assert account.sent("chat") == [(False, "user"), (False, "agent")]


def test_openai_responses_with_an_image_and_a_tool_result(account: Account) -> None:
    route = account.route("gpt-5.4")
    assert route.protocol is ch.ApiProtocol.OPENAI_RESPONSES
    with _openai(account, route) as client:
        image: Any = [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Look"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
                ],
            }
        ]
        assert client.responses.create(model=route.model_id, input=image).output_text
        first = client.responses.create(
            model=route.model_id, input="Weather?", tools=[TOOL["responses"]]
        )
        call = next(item for item in first.output if item.type == "function_call")
        follow_up: Any = [
            {"role": "user", "content": "Weather?"},
            call.model_dump(exclude_none=True),
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ]
        streamed = client.responses.create(
            model=route.model_id, input=follow_up, tools=[TOOL["responses"]], stream=True
        )
        done = [event for event in streamed if event.type == "response.completed"]
        assert len(done) == 1
        assert account.sent("responses") == [(True, "user"), (False, "user"), (False, "agent")]


def test_anthropic_messages_with_an_image_streamed_and_a_tool_loop(account: Account) -> None:
    route = account.route("claude-opus-5")
    assert route.protocol is ch.ApiProtocol.ANTHROPIC_MESSAGES
    with _anthropic(account, route) as client:
        image: Any = [
            {"type": "text", "text": "What is in it?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ]
        whole = client.messages.create(
            model=route.model_id, max_tokens=64, messages=[{"role": "user", "content": image}]
        )
        assert whole.content[0].type == "text"
        with client.messages.stream(
            model=route.model_id, max_tokens=64, messages=[{"role": "user", "content": "Hello"}]
        ) as stream:
            assert "".join(stream.text_stream).startswith("echo: Hello")
        ask: Any = [{"role": "user", "content": "Weather?"}]
        first = client.messages.create(
            model=route.model_id, max_tokens=64, messages=ask, tools=[TOOL["messages"]]
        )
        use = first.content[0]
        assert use.type == "tool_use"
        follow_up: Any = [
            *ask,
            {"role": "assistant", "content": [use.model_dump(exclude_none=True)]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}],
            },
        ]
        client.messages.create(
            model=route.model_id, max_tokens=64, messages=follow_up, tools=[TOOL["messages"]]
        )
        assert account.sent("messages") == [
            (True, "user"),
            (False, "user"),
            (False, "user"),
            (False, "agent"),
        ]


def test_a_claude_route_that_also_speaks_messages_serves_the_anthropic_sdk(
    account: Account,
) -> None:
    """route.auth serves any of the route's protocols on its origin: an application may call
    a Chat-routed Claude model through the Anthropic SDK when its spec lists Messages."""
    route = account.route("claude-sonnet-4.6")
    assert route.protocol is ch.ApiProtocol.OPENAI_CHAT
    assert ch.ApiProtocol.ANTHROPIC_MESSAGES in route.spec.protocols
    with _anthropic(account, route) as client:
        answer = client.messages.create(
            model=route.model_id, max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
        )
        assert answer.content[0].type == "text"


def test_without_route_auth_the_strict_emulator_refuses_the_image(account: Account) -> None:
    """The emulator is as strict as the service: the header is what makes images work."""
    route = account.route("gpt-4.1")
    token = account.emulator.session_tokens[-1]
    headers = {
        "Authorization": f"Bearer {token}",
        "Editor-Version": "vscode/1.121.0",
        "Copilot-Integration-Id": "vscode-chat",
    }
    body = {
        "model": route.model_id,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,x"}}],
            }
        ],
    }
    with httpx2.Client(transport=account.emulator.transport()) as http:
        refused = http.post(route.url, json=body, headers=headers)
    assert refused.status_code == 400
    assert "Copilot-Vision-Request" in refused.text


def test_async_sdks_stream_through_an_async_hosts_routes(tmp_path: Path) -> None:
    async def main(emulator: GitHubEmulator) -> tuple[str, str]:
        store = CredentialStore(tmp_path / "home")
        async with AsyncGitHubCopilotHost(
            store=store, transport=emulator.async_transport()
        ) as host:

            async def no_wait(_seconds: float) -> None:
                return None

            await host.login(sleep=no_wait)
            catalog = ch.Catalog()
            await ch.aregister_models(catalog, host)
            chat = catalog.get("github-copilot/gpt-4.1")
            claude = catalog.get("github-copilot/claude-opus-5")
            assert chat is not None and claude is not None
            async with httpx2.AsyncClient(
                auth=chat.auth, transport=emulator.async_transport()
            ) as http:
                oai = openai.AsyncOpenAI(
                    base_url=chat.origin, api_key=PLACEHOLDER, http_client=http
                )
                stream = await oai.chat.completions.create(
                    model=chat.model_id, messages=[{"role": "user", "content": "Hi"}], stream=True
                )
                text = "".join(
                    [c.choices[0].delta.content or "" async for c in stream if c.choices]
                )
                ant = anthropic.AsyncAnthropic(
                    base_url=claude.origin, auth_token=PLACEHOLDER, http_client=http
                )
                async with ant.messages.stream(
                    model=claude.model_id,
                    max_tokens=64,
                    messages=[{"role": "user", "content": "Hi"}],
                ) as events:
                    claude_text = "".join([t async for t in events.text_stream])
        return text, claude_text

    with GitHubEmulator() as emulator:
        chat_text, claude_text = asyncio.run(main(emulator))
        assert [r.initiator for r in emulator.requests_to("chat")] == ["user"]
        assert [r.initiator for r in emulator.requests_to("messages")] == ["user"]
    assert chat_text.startswith("echo: Hi")
    assert claude_text.startswith("echo: Hi")
