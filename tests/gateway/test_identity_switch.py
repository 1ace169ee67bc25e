"""The gateway over an organisation whose chat identity discovers the models but is answered
400 ``model_not_supported`` on inference (``Scenario.unserved_models``): the route's auth
switches to the Copilot CLI's identity once and the gateway relays that answer."""

from __future__ import annotations

import openai
import pytest

from copilot_host.github._headers import CLI_INTEGRATION_ID
from copilot_host.testing import Inventory, Scenario, Session, minimal_models
from tests.gateway._support import Gateway

ENTERPRISE = "https://api.enterprise.githubcopilot.com"
ALL = frozenset({"*"})
INFERENCE = ("chat", "responses", "messages")
CHAT_ONLY = Scenario(
    session=Session(api_endpoint=ENTERPRISE),
    inventory=Inventory(models=minimal_models(), unserved_models={"vscode-chat": ALL}),
)
BOTH = Scenario(
    session=Session(api_endpoint=ENTERPRISE),
    inventory=Inventory(
        models=minimal_models(), unserved_models={"vscode-chat": ALL, CLI_INTEGRATION_ID: ALL}
    ),
)


def _seen(gateway: Gateway) -> list[tuple[str, int]]:
    return [
        (r.headers.get("copilot-integration-id", ""), r.status)
        for r in gateway.emulator.requests
        if r.endpoint in INFERENCE
    ]


@pytest.mark.parametrize("emulator", [CHAT_ONLY], indirect=True)
def test_the_gateway_relays_the_switched_answer_as_200(gateway: Gateway) -> None:
    body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
    status, headers, answer = gateway.post("/v1/chat/completions", body)
    assert status == 200
    assert answer["choices"][0]["message"]["content"] == "echo: hi"
    refused, served = gateway.emulator.requests_to("chat")
    assert (refused.headers["copilot-integration-id"], refused.status) == ("vscode-chat", 400)
    assert (served.headers["copilot-integration-id"], served.status) == (CLI_INTEGRATION_ID, 200)
    # The answer relayed is the one the CLI identity got, not the refusal before it.
    assert headers["x-github-request-id"] == served.request_id
    (line,) = [line for line in gateway.access.lines if line.startswith("POST ")]
    assert "status=200" in line.split()

    # The next requests go as the CLI at once: a stream through the OpenAI SDK and the
    # Anthropic SDK on Messages.
    client = gateway.openai()
    stream = client.chat.completions.create(
        model="gpt-5-mini", messages=[{"role": "user", "content": "again"}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "echo: again"
    claude = gateway.anthropic()
    message = claude.messages.create(
        model="claude-messages-only",
        max_tokens=64,
        messages=[{"role": "user", "content": "hello"}],
    )
    assert message.content[0].type == "text" and message.content[0].text == "echo: hello"
    assert _seen(gateway) == [
        ("vscode-chat", 400),
        (CLI_INTEGRATION_ID, 200),
        (CLI_INTEGRATION_ID, 200),
        (CLI_INTEGRATION_ID, 200),
    ]


@pytest.mark.parametrize("emulator", [BOTH], indirect=True)
def test_the_gateway_relays_the_second_refusal_when_both_identities_are_refused(
    gateway: Gateway,
) -> None:
    client = gateway.openai()
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.code == "model_not_supported"
    assert refused.value.response.headers["content-type"] == "text/plain; charset=utf-8"
    assert _seen(gateway) == [("vscode-chat", 400), (CLI_INTEGRATION_ID, 400)]
    assert refused.value.response.headers["x-github-request-id"] == (
        gateway.emulator.requests_to("chat")[-1].request_id
    )
    # The switch did not work, so it was not kept: the next request starts as the chat
    # identity again, and again goes out twice at most.
    status, _, body = gateway.post(
        "/v1/chat/completions",
        {"model": "claude-sonnet-4", "messages": [{"role": "user", "content": "again"}]},
    )
    assert (status, body["error"]["code"]) == (400, "model_not_supported")
    assert _seen(gateway)[2:] == [("vscode-chat", 400), (CLI_INTEGRATION_ID, 400)]


@pytest.mark.parametrize(
    "emulator",
    [
        Scenario(
            session=Session(api_endpoint=ENTERPRISE),
            inventory=Inventory(
                models=minimal_models(),
                unserved_models={
                    "vscode-chat": frozenset({"gpt-5-mini"}),
                    CLI_INTEGRATION_ID: frozenset({"gpt-4.1"}),
                },
            ),
        )
    ],
    indirect=True,
)
def test_alternating_models_served_to_different_identities_do_not_flap(gateway: Gateway) -> None:
    """Each model remembers the identity that worked for it: after one switch per model,
    every request goes out once."""
    for model in ("gpt-4.1", "gpt-5-mini") * 4:
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
        status, _headers, _answer = gateway.post("/v1/chat/completions", body)
        assert status == 200
    seen = _seen(gateway)
    # One refusal per model (gpt-5-mini as the chat identity, then gpt-4.1 as the CLI's
    # once the default had switched); every other request goes out once.
    assert [entry for entry in seen if entry[1] != 200] == [
        ("vscode-chat", 400),
        (CLI_INTEGRATION_ID, 400),
    ]
    assert len(seen) == 8 + 2
    assert seen[-2:] == [("vscode-chat", 200), (CLI_INTEGRATION_ID, 200)]
