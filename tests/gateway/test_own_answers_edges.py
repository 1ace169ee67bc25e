"""What the gateway answers itself, read as each API's official SDK reads a model's answer
(whole and streamed), and two answers from upstream the happy path never sees: a body that
is a JSON array, and Auto's session call refusing a Copilot session GitHub revoked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import Message, TextBlock
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseTextDeltaEvent,
)

from copilot_host.gateway._protocols import CHAT, MESSAGES, RESPONSES, Api
from copilot_host.testing import Auto, Faults, GitHubEmulator, RawAnswer, Scenario, Usage
from tests._clock import FakeClock
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks

TEXT = "Answered by the gateway: naïve café ✓"
MODEL = "gpt-5-mini"
IDENT = "resp_copilot_host_7"


def _serving(api: Api, stream: bool) -> httpx2.Client:
    """An HTTP client whose every request is answered with ``api``'s own answer."""

    def answer(_request: httpx2.Request) -> httpx2.Response:
        kind = "text/event-stream" if stream else "application/json"
        body = api.text_answer(MODEL, TEXT, ident=IDENT, stream=stream)
        return httpx2.Response(200, headers={"content-type": kind}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(answer))


def _openai(api: Api, *, stream: bool) -> openai.OpenAI:
    return openai.OpenAI(
        base_url="http://127.0.0.1:9/v1", api_key="x", http_client=_serving(api, stream)
    )


HI: list[Any] = [{"role": "user", "content": "hi"}]


def test_a_chat_answer_of_the_gateways_own_is_read_by_the_openai_sdk() -> None:
    with _openai(CHAT, stream=False) as client:
        answer = client.chat.completions.create(model=MODEL, messages=HI)
    (choice,) = answer.choices
    assert (choice.message.content, choice.finish_reason) == (TEXT, "stop")
    assert answer.usage is not None
    assert (answer.id, answer.model, answer.usage.total_tokens) == (IDENT, MODEL, 0)


def test_a_streamed_chat_answer_of_the_gateways_own_is_read_by_the_openai_sdk() -> None:
    with _openai(CHAT, stream=True) as client:
        chunks = list(client.chat.completions.create(model=MODEL, messages=HI, stream=True))
    assert {chunk.id for chunk in chunks} == {IDENT}
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == TEXT
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_responses_answer_of_the_gateways_own_is_read_by_the_openai_sdk() -> None:
    with _openai(RESPONSES, stream=False) as client:
        reply = client.responses.create(model=MODEL, input="hi")
    assert (reply.id, reply.status, reply.output_text) == (IDENT, "completed", TEXT)
    assert reply.usage is not None and reply.usage.total_tokens == 0


def test_a_streamed_responses_answer_of_the_gateways_own_is_read_by_the_openai_sdk() -> None:
    with _openai(RESPONSES, stream=True) as client:
        events = list(client.responses.create(model=MODEL, input="hi", stream=True))
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = [e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)]
    assert "".join(deltas) == TEXT
    first, last = events[0], events[-1]
    assert isinstance(first, ResponseCreatedEvent) and first.response.output == []
    assert isinstance(last, ResponseCompletedEvent) and last.response.output_text == TEXT


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_messages_answer_of_the_gateways_own_is_read_by_the_anthropic_sdk(stream: bool) -> None:
    claude = anthropic.Anthropic(
        base_url="http://127.0.0.1:9", api_key="x", http_client=_serving(MESSAGES, stream)
    )
    message: Message
    with claude:
        if stream:
            with claude.messages.stream(model=MODEL, max_tokens=8, messages=HI) as events:
                message = events.get_final_message()
        else:
            message = claude.messages.create(model=MODEL, max_tokens=8, messages=HI)
    (block,) = message.content
    assert isinstance(block, TextBlock) and block.text == TEXT
    assert (message.stop_reason, message.usage.output_tokens) == ("end_turn", 0)


@pytest.mark.parametrize("api", [CHAT, RESPONSES, MESSAGES], ids=lambda api: api.name)
def test_the_gateways_own_answers_count_no_tokens(api: Api) -> None:
    """Their ledger rows and spend are 0: the gateway's own reader finds zero tokens."""
    whole = json.loads(api.text_answer(MODEL, TEXT, ident=IDENT, stream=False))
    assert api.tokens(whole) == (0, 0, None)


def test_an_empty_responses_answer_has_no_output_item() -> None:
    """Codex's warm-up is answered so (tests/gateway/test_socket.py has the socket)."""
    whole = json.loads(RESPONSES.text_answer(MODEL, "", ident=IDENT, stream=False))
    assert (whole["output"], whole["status"]) == ([], "completed")


# -- upstream answers the happy path never sees -----------------------------------------------

ARRAY = b'[{"usage": {"prompt_tokens": 7, "completion_tokens": 3}}, "copilot_cost"]'


@pytest.mark.parametrize(
    "emulator",
    [Scenario(faults=Faults(answers={"chat": RawAnswer(200, ARRAY)}))],
    indirect=True,
)
def test_an_upstream_answer_that_is_a_json_array_is_relayed_and_counts_nothing(
    gateway: Gateway,
) -> None:
    status, _headers, body = gateway.post(
        "/v1/chat/completions",
        {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert status == 200
    assert body == json.loads(ARRAY)  # as upstream said it, unread
    (line,) = [line for line in gateway.access.lines if "/v1/chat/completions" in line]
    assert " status=200 " in line
    # Neither the array's "usage" nor its "copilot_cost" was taken for a count.
    assert "tokens=" not in line and "credits=" not in line


FREE = Usage(usage_plan="free")


@pytest.fixture
def auto_gateway(tmp_path: Path) -> Iterator[tuple[Gateway, FakeClock]]:
    clock = FakeClock()
    scenario = Scenario(usage=FREE, auto=Auto(pool_lifetime=400))
    with (
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, tmp_path / "home", clock=clock) as running,
    ):
        yield running, clock
        assert_no_leaks(running)


def test_a_session_auto_refuses_is_replaced_before_the_gateways_next_request(
    auto_gateway: tuple[Gateway, FakeClock],
) -> None:
    """GitHub revoked the Copilot session: Auto's call answers 401. The client is told to
    try again, and trying again works (before the fix the gateway sent the revoked session
    until it expired by its own clock)."""
    gateway, clock = auto_gateway
    chat = {"model": "auto", "messages": [{"role": "user", "content": "hi"}]}
    assert gateway.post("/v1/chat/completions", chat)[0] == 200
    clock.advance(101)  # the Auto session is due for renewal
    gateway.emulator.revoke_sessions()
    gateway.emulator.clear_requests()
    status, _headers, body = gateway.post("/v1/chat/completions", chat)
    assert (status, body["error"]["code"]) == (503, "session_expired")
    assert "HTTP 401" in body["error"]["message"]
    clock.advance(2)  # past the second a failure is told to every caller
    status, _headers, body = gateway.post("/v1/chat/completions", chat)
    assert (status, body["model"]) == (200, "gpt-5-mini")
    calls = [(r.endpoint, r.status) for r in gateway.emulator.requests]
    assert calls == [
        ("auto_session", 401),
        ("copilot_token", 200),
        ("auto_session", 200),
        ("chat", 200),
    ]
