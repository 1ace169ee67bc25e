"""The Messages changes (gateway/_changes/_messages.py), over raw HTTP through a real gateway to the
loopback emulator: what the emulator received, what the client got back (whole and
streamed), and the access line's ``rewrote=`` field."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from copilot_host.gateway._changes import REWRITES, check_rewrites, rewrites_from_environment
from copilot_host.gateway._changes._messages import SERVER_TOOLS_TEXT
from copilot_host.testing import GitHubEmulator, Inventory, Scenario, realistic_models
from tests.gateway._rewrites_support import checked, events_of, module_gateway, rewrote
from tests.gateway._support import Gateway, running_gateway

_ANTHROPIC = {"anthropic-version": "2023-06-01"}
BILLING = "x-anthropic-billing-header: cc_version=2.1.332.abc; cc_entrypoint=sdk-cli;"


def messages_body(**more: Any) -> dict[str, Any]:
    return {
        "model": "claude-opus-5",
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": "hi"}],
        **more,
    }


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from module_gateway(tmp_path_factory, "rewrites")


@pytest.fixture
def gw(started: Gateway) -> Iterator[Gateway]:
    yield from checked(started)


def sent(gateway: Gateway, endpoint: str = "messages") -> dict[str, Any]:
    (record,) = gateway.emulator.requests_to(endpoint)
    document = json.loads(record.body)
    assert isinstance(document, dict)
    return document


def post(gateway: Gateway, body: dict[str, Any], **headers: str) -> tuple[int, dict[str, str], Any]:
    return gateway.post("/v1/messages", body, headers={**_ANTHROPIC, **headers})


# -- the billing header ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_billing_header_block_is_removed(gw: Gateway, stream: bool) -> None:
    system = [{"type": "text", "text": BILLING}, {"type": "text", "text": "You are Claude."}]
    status, _, answer = post(gw, messages_body(system=system, stream=stream))
    assert status == 200, answer
    assert sent(gw)["system"] == [{"type": "text", "text": "You are Claude."}]
    assert rewrote(gw) == ["billing-header"]
    if stream:
        assert events_of(answer)[-1]["type"] == "message_stop"
    else:
        assert answer["content"][0]["type"] == "text"
    assert BILLING not in gw.access.lines[0]


def test_a_system_of_only_the_billing_header_is_omitted(gw: Gateway) -> None:
    status, _, _ = post(gw, messages_body(system=[{"type": "text", "text": BILLING}]))
    assert status == 200
    assert "system" not in sent(gw)


def test_a_string_system_loses_its_billing_line(gw: Gateway) -> None:
    status, _, _ = post(gw, messages_body(system=BILLING + "\nYou are Claude."))
    assert status == 200
    # ... and is sent as a block, as every string system is.
    assert sent(gw)["system"] == [{"type": "text", "text": "You are Claude."}]
    assert rewrote(gw) == ["billing-header"]


def test_a_billing_header_anywhere_in_system_is_removed(gw: Gateway) -> None:
    system = [{"type": "text", "text": "You are Claude."}, {"type": "text", "text": BILLING}]
    status, _, _ = post(gw, messages_body(system=system))
    assert status == 200
    assert sent(gw)["system"] == [{"type": "text", "text": "You are Claude."}]
    assert rewrote(gw) == ["billing-header"]


# -- fields and betas --------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_display_goes_when_its_beta_is_dropped(gw: Gateway, stream: bool) -> None:
    thinking = {"type": "enabled", "budget_tokens": 2000, "display": "omitted"}
    status, _, _ = post(
        gw,
        messages_body(max_tokens=4000, thinking=thinking, stream=stream),
        **{"anthropic-beta": "thinking-display-updates-2026-08-18,interleaved-thinking-2025-05-14"},
    )
    assert status == 200
    assert sent(gw)["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert rewrote(gw) == ["beta-fields"]


def test_context_management_stays_with_its_served_beta_and_goes_without(gw: Gateway) -> None:
    edits = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    post(
        gw,
        messages_body(context_management=edits),
        **{"anthropic-beta": "context-management-2025-06-27"},
    )
    assert sent(gw)["context_management"] == edits
    assert rewrote(gw) == []
    gw.emulator.clear_requests()
    gw.access.lines.clear()
    post(gw, messages_body(context_management=edits))
    assert "context_management" not in sent(gw)
    assert rewrote(gw) == ["beta-fields"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_system_message_joins_the_user_turn_before_it(gw: Gateway, stream: bool) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "# Environment\ncwd: /tmp"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]
    status, _, _ = post(gw, messages_body(messages=messages, stream=stream))
    assert status == 200
    assert sent(gw)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "text", "text": "# Environment\ncwd: /tmp"},
            ],
        },
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]
    assert rewrote(gw) == ["system-message"]


def test_a_leading_system_message_joins_the_user_turn_after_it(gw: Gateway) -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "# Environment"}]},
        {"role": "user", "content": "hi"},
    ]
    post(gw, messages_body(messages=messages))
    assert sent(gw)["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "# Environment"}, {"type": "text", "text": "hi"}],
        }
    ]


# -- output caps -------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_max_tokens_is_capped_at_the_models_limit(gw: Gateway, stream: bool) -> None:
    # Claude Code's default: claude-opus-5-5, served by claude-opus-5 (64000 out).
    body = messages_body(model="claude-opus-5-5", max_tokens=128000, stream=stream)
    status, headers, _ = post(gw, body)
    assert status == 200
    assert headers["x-copilot-host-model"] == "claude-opus-5"
    assert sent(gw)["max_tokens"] == 64000
    assert rewrote(gw) == ["max_tokens"]


def test_a_thinking_budget_over_the_cap_is_lowered(gw: Gateway) -> None:
    thinking = {"type": "enabled", "budget_tokens": 100000}
    post(gw, messages_body(max_tokens=128000, thinking=thinking))
    upstream = sent(gw)
    assert upstream["max_tokens"] == 64000
    assert upstream["thinking"] == {"type": "enabled", "budget_tokens": 63999}
    assert rewrote(gw) == ["max_tokens", "thinking-budget"]


def test_max_tokens_within_the_limit_goes_as_sent(gw: Gateway) -> None:
    body = json.dumps(messages_body(max_tokens=64000), indent=1).encode()
    status, _, _ = gw.raw(
        "POST",
        "/v1/messages",
        body=body,
        headers={**_ANTHROPIC, "Content-Type": "application/json"},
    )
    assert status == 200
    # Nothing rewritten: the client's own bytes went upstream (not encoded again).
    (record,) = gw.emulator.requests_to("messages")
    assert record.body == body
    assert rewrote(gw) == []


@pytest.mark.parametrize("stream", [False, True])
def test_chat_output_caps(gw: Gateway, stream: bool) -> None:
    body = {
        "model": "gpt-4.1",
        "max_tokens": 32000,
        "max_completion_tokens": 20000,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    }
    status, _, _ = gw.post("/v1/chat/completions", body)
    assert status == 200
    upstream = sent(gw, "chat")
    assert (upstream["max_tokens"], upstream["max_completion_tokens"]) == (16384, 16384)
    assert rewrote(gw) == ["max_tokens", "max_completion_tokens"]


# -- server tools ------------------------------------------------------------------------

WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 8}
READ = {"name": "Read", "description": "read a file", "input_schema": {"type": "object"}}


def test_server_tools_are_removed_beside_others(gw: Gateway) -> None:
    body = messages_body(
        tools=[WEB_SEARCH, READ, {"type": "web_fetch_20250910", "name": "web_fetch"}],
        tool_choice={"type": "tool", "name": "web_search"},
    )
    status, _, answer = post(gw, body)
    assert status == 200
    upstream = sent(gw)
    assert upstream["tools"] == [READ]
    assert "tool_choice" not in upstream
    assert rewrote(gw) == ["server-tools", "tool_choice"]
    assert answer["content"][0]["name"] == "Read"  # the emulator called the tool left


def test_a_tool_choice_naming_a_kept_tool_stays(gw: Gateway) -> None:
    body = messages_body(tools=[WEB_SEARCH, READ], tool_choice={"type": "tool", "name": "Read"})
    post(gw, body)
    assert sent(gw)["tool_choice"] == {"type": "tool", "name": "Read"}


def test_a_server_tools_only_request_is_answered_by_the_gateway(gw: Gateway) -> None:
    body = messages_body(model="claude-opus-5-5", tools=[WEB_SEARCH], tool_choice={"type": "any"})
    status, headers, answer = post(gw, body)
    assert status == 200
    assert gw.emulator.requests_to("messages") == ()
    assert headers["x-copilot-host-model"] == "claude-opus-5"
    assert headers["content-type"] == "application/json"
    assert answer["type"] == "message"
    assert answer["model"] == "claude-opus-5-5"  # the model asked
    assert answer["content"] == [{"type": "text", "text": SERVER_TOOLS_TEXT}]
    assert answer["stop_reason"] == "end_turn"
    (line,) = gw.access.lines
    assert "credits=" not in line
    assert "rewrote=server-tools" in line


def test_a_streamed_server_tools_only_request_gets_the_event_sequence(gw: Gateway) -> None:
    body = messages_body(tools=[WEB_SEARCH], stream=True)
    status, headers, answer = post(gw, body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert gw.emulator.requests_to("messages") == ()
    kinds = [event["type"] for event in events_of(answer)]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    text = "".join(
        event["delta"].get("text", "")
        for event in events_of(answer)
        if event["type"] == "content_block_delta"
    )
    assert text == SERVER_TOOLS_TEXT
    # The anthropic SDK reads it as a whole answer.
    client = gw.anthropic()
    with client.messages.stream(
        model="claude-opus-5",
        max_tokens=100,
        messages=[{"role": "user", "content": "hi"}],
        tools=[WEB_SEARCH],  # type: ignore[list-item] # as Claude Code sends it
    ) as streamed:
        final = streamed.get_final_message()
    (block,) = final.content
    assert block.type == "text" and block.text == SERVER_TOOLS_TEXT


# -- turning rewrites off ----------------------------------------------------------------


def test_rewrites_are_named_and_checked() -> None:
    assert check_rewrites(None) == frozenset(REWRITES)
    with pytest.raises(ValueError, match="unknown rewrite 'nope'"):
        check_rewrites(["nope"])
    assert rewrites_from_environment({}) == frozenset(REWRITES)
    left = rewrites_from_environment({"COPILOT_HOST_REWRITES": "-billing-header, -max_tokens"})
    assert left == frozenset(REWRITES) - {"billing-header", "max_tokens"}
    for bad in ("billing-header", "-nope", "-"):
        with pytest.raises(ValueError, match="COPILOT_HOST_REWRITES"):
            rewrites_from_environment({"COPILOT_HOST_REWRITES": bad})


def test_with_rewrites_off_the_request_goes_as_sent(tmp_path: Any) -> None:
    with (
        GitHubEmulator() as emulator,
        running_gateway(
            emulator, tmp_path / "home", rewrites=frozenset(REWRITES) - {"billing-header"}
        ) as gateway,
    ):
        system = [{"type": "text", "text": BILLING}, {"type": "text", "text": "x"}]
        post(gateway, messages_body(system=system, max_tokens=128000))
        upstream = sent(gateway)
        assert upstream["system"] == system
        assert upstream["max_tokens"] == 64000
        assert rewrote(gateway) == ["max_tokens"]


# -- count_tokens ------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?beta=true"])
def test_count_tokens_is_answered_by_the_gateway(gw: Gateway, query: str) -> None:
    body = {
        "model": "claude-opus-5-5",
        "system": [{"type": "text", "text": "You are Claude."}],
        "messages": [{"role": "user", "content": "héllo 日本語 " * 50}],
        "tools": [READ],
    }
    status, headers, answer = gw.post("/v1/messages/count_tokens" + query, body, headers=_ANTHROPIC)
    assert status == 200, answer
    assert headers["x-copilot-host-model"] == "claude-opus-5"
    assert gw.emulator.requests_to("messages") == ()  # never upstream
    counted = json.dumps([body["system"], body["messages"], body["tools"]], ensure_ascii=False)
    utf8 = len(counted.encode())
    non_ascii = sum(1 for char in counted if ord(char) > 127)
    ascii_bytes = len(counted) - non_ascii
    assert set(answer) == {"input_tokens"}
    assert answer["input_tokens"] >= max(utf8 / 4, non_ascii + ascii_bytes / 4)
    (line,) = gw.access.lines
    assert "/v1/messages/count_tokens" in line
    assert "credits=" not in line


def test_count_tokens_needs_the_key_and_a_model(gw: Gateway) -> None:
    body = {"model": "claude-opus-5", "messages": [{"role": "user", "content": "hi"}]}
    status, _, _ = gw.post("/v1/messages/count_tokens", body, headers=_ANTHROPIC, key=False)
    assert status == 401
    status, _, answer = gw.post(
        "/v1/messages/count_tokens", {**body, "model": "nope-1"}, headers=_ANTHROPIC
    )
    assert status == 404
    assert answer["type"] == "error"  # in Anthropic's shape
    assert answer["error"]["type"] == "not_found_error"


def test_the_404_text_lists_count_tokens(gw: Gateway) -> None:
    status, _, answer = gw.post("/v1/nothing", {"model": "x"})
    assert status == 404
    assert "POST /v1/messages/count_tokens" in answer["error"]["message"]


def test_count_tokens_is_served_when_the_budget_is_spent(tmp_path: Any) -> None:
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, tmp_path / "home", max_credits=0.01) as gateway,
    ):
        assert post(gateway, messages_body())[0] == 200
        assert post(gateway, messages_body())[0] == 402  # spent
        body = {"model": "claude-opus-5", "messages": [{"role": "user", "content": "hi"}]}
        status, _, answer = gateway.post("/v1/messages/count_tokens", body, headers=_ANTHROPIC)
        assert status == 200
        assert answer["input_tokens"] >= 1
        # Not a model request: the stop line's count is the one request that went upstream.
        assert gateway.app.spend.requests == 1


def test_with_count_tokens_off_it_is_404(tmp_path: Any) -> None:
    with (
        GitHubEmulator() as emulator,
        running_gateway(
            emulator, tmp_path / "home", rewrites=frozenset(REWRITES) - {"count-tokens"}
        ) as gateway,
    ):
        body = {"model": "claude-opus-5", "messages": [{"role": "user", "content": "hi"}]}
        status, _, _ = gateway.post("/v1/messages/count_tokens", body, headers=_ANTHROPIC)
        assert status == 404


# -- the emulator refuses what these rewrites remove ---------------------------------------


@pytest.mark.parametrize(
    ("body", "check"),
    [
        (messages_body(system=[{"type": "text", "text": BILLING}]), "billing_header"),
        (messages_body(max_tokens=128000), "output_limit"),
        (messages_body(tools=[WEB_SEARCH]), "server_tools"),
        (
            messages_body(
                messages=[{"role": "user", "content": "hi"}, {"role": "system", "content": "x"}]
            ),
            "beta_fields",
        ),
    ],
)
def test_without_the_rewrites_the_emulator_refuses_and_lenient_takes_it(
    tmp_path: Any, body: dict[str, Any], check: str
) -> None:
    """The shapes 0.3.0 forwarded: refused by the emulator (lenient off), taken with it on."""
    for lenient, expected in ((False, 400), (True, 200)):
        with (
            GitHubEmulator(Scenario(lenient=lenient)) as emulator,
            running_gateway(
                emulator, tmp_path / f"home-{lenient}", rewrites=frozenset()
            ) as gateway,
        ):
            status, _, _ = post(gateway, body)
            assert status == expected
            refused = [record.refusal for record in emulator.refusals]
            assert refused == ([] if lenient else [check])


def test_each_rewrite_is_named_once_at_debug(gw: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    system = [{"type": "text", "text": BILLING}, {"type": "text", "text": "x"}]
    with caplog.at_level(logging.DEBUG, logger="copilot_host.gateway"):
        post(gw, messages_body(system=system, max_tokens=128000))
    named = [r.getMessage() for r in caplog.records if r.getMessage().startswith("rewrote ")]
    assert [line.split(":")[0] for line in named] == [
        "rewrote billing-header",
        "rewrote max_tokens",
    ]
    assert all("cc_version" not in line for line in named)


def _small_opus(limit: int) -> Scenario:
    models = [dict(model) for model in realistic_models()]
    for model in models:
        if model["id"] == "claude-opus-5":
            capabilities = dict(model["capabilities"])  # type: ignore[call-overload]
            capabilities["limits"] = {**capabilities["limits"], "max_output_tokens": limit}
            model["capabilities"] = capabilities
    return Scenario(inventory=Inventory(models=tuple(models)))


@pytest.mark.parametrize(("limit", "thinking"), [(1500, 1499), (1000, None)])
def test_a_thinking_budget_is_lowered_or_dropped_under_a_small_cap(
    tmp_path: Any, limit: int, thinking: int | None
) -> None:
    with (
        GitHubEmulator(_small_opus(limit)) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        body = messages_body(max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 2000})
        status, _, _ = post(gateway, body)
        assert status == 200
        upstream = sent(gateway)
        assert upstream["max_tokens"] == limit
        if thinking is None:
            assert "thinking" not in upstream
        else:
            assert upstream["thinking"]["budget_tokens"] == thinking
        assert rewrote(gateway) == ["max_tokens", "thinking-budget"]
        emulator.assert_no_refusals()


def test_a_large_body_is_rewritten_too(gw: Gateway) -> None:
    # Over the size parsed (and so encoded again) in a worker thread.
    big = "x" * (2 * 1024 * 1024)
    body = messages_body(system=[{"type": "text", "text": BILLING}], max_tokens=128000)
    body["messages"] = [{"role": "user", "content": big}]
    status, _, _ = post(gw, body)
    assert status == 200
    upstream = sent(gw)
    assert "system" not in upstream
    assert upstream["max_tokens"] == 64000
    assert upstream["messages"][0]["content"] == big
