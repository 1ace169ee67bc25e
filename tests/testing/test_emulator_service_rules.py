"""The request shapes the Copilot service is reported to refuse (issue 24 §1): each rule with
its status, body and content type, its record in ``refusals``, and ``lenient`` switching it
off."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from copilot_host.testing import CHECKS, GitHubEmulator, Scenario
from tests.testing._support import PATH, PLAIN, body, copilot

BILLING = "x-anthropic-billing-header: cc_version=2.1.332.abc; cc_entrypoint=cli;"


def _post(
    emu: GitHubEmulator,
    protocol: str,
    payload: dict[str, Any],
    *,
    betas: str | None = None,
    path: str | None = None,
) -> httpx2.Response:
    with httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        if betas is not None:
            headers["anthropic-beta"] = betas
        return client.post(f"{origin}{path or PATH[protocol]}", json=payload, headers=headers)


def _messages(**more: Any) -> dict[str, Any]:
    return body("messages", "claude-sonnet-5", **more)


# name -> (protocol, body, anthropic-beta, check, status, exact body text)
CASES: dict[str, tuple[str, dict[str, Any], str | None, str, int, str]] = {
    "billing-block": (
        "messages",
        _messages(system=[{"type": "text", "text": BILLING}, {"type": "text", "text": "Hi"}]),
        None,
        "billing_header",
        400,
        '{"error":{"message":"x-anthropic-billing-header is a reserved keyword and may not be '
        'used in the system prompt.","code":"invalid_request_body"}}\n',
    ),
    "thinking-display": (
        "messages",
        _messages(thinking={"type": "adaptive", "display": "omitted"}),
        "interleaved-thinking-2025-05-14",
        "beta_fields",
        400,
        '{"message":"thinking.adaptive.display: Extra inputs are not permitted"}\n',
    ),
    "context-management-without-its-beta": (
        "messages",
        _messages(context_management={"edits": [{"type": "clear_tool_uses_20250919"}]}),
        None,
        "beta_fields",
        400,
        '{"message":"context_management: Extra inputs are not permitted"}\n',
    ),
    "system-message": (
        "messages",
        {
            "model": "claude-sonnet-5",
            "max_tokens": 64,
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "system", "content": "# Environment"},
            ],
        },
        None,
        "beta_fields",
        400,
        "{\"message\":\"messages.1.role: Input should be 'user' or 'assistant'\"}\n",
    ),
    "web-search-server-tool": (
        "messages",
        _messages(tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}]),
        None,
        "server_tools",
        400,
        '{"error":{"message":"The use of the web search tool is not supported.",'
        '"code":"unsupported_value"}}\n',
    ),
    "web-fetch-server-tool": (
        "messages",
        _messages(tools=[{"type": "web_fetch_20250910", "name": "web_fetch"}]),
        None,
        "server_tools",
        400,
        '{"error":{"message":"The use of the web fetch tool is not supported.",'
        '"code":"unsupported_value"}}\n',
    ),
    "messages-max-tokens": (
        "messages",
        body("messages", "claude-opus-5", max_tokens=128000),
        None,
        "output_limit",
        400,
        '{"message":"max_tokens: 128000 > 64000, which is the maximum allowed number of '
        'output tokens for claude-opus-5"}\n',
    ),
    "chat-max-tokens": (
        "chat",
        body("chat", "gpt-4.1", max_tokens=32000),
        None,
        "output_limit",
        400,
        '{"error":{"message":"max_tokens is too large: 32000. This model supports at most 16384 '
        'completion tokens, whereas you provided 32000.","code":"invalid_value",'
        '"param":"max_tokens","type":"invalid_request_error"}}\n',
    ),
    "chat-max-completion-tokens": (
        "chat",
        body("chat", "gpt-4.1", max_completion_tokens=20000),
        None,
        "output_limit",
        400,
        '{"error":{"message":"max_completion_tokens is too large: 20000. This model supports '
        'at most 16384 completion tokens, whereas you provided 20000.","code":"invalid_value",'
        '"param":"max_completion_tokens","type":"invalid_request_error"}}\n',
    ),
    "responses-max-output-tokens": (
        "responses",
        body("responses", "gpt-5.5", max_output_tokens=200000),
        None,
        "output_limit",
        400,
        '{"error":{"message":"max_output_tokens is too large: 200000. This model supports at '
        'most 128000 completion tokens, whereas you provided 200000.","code":"invalid_value",'
        '"param":"max_output_tokens","type":"invalid_request_error"}}\n',
    ),
    "custom-tool": (
        "responses",
        body(
            "responses",
            "gpt-5.5",
            tools=[
                {
                    "type": "custom",
                    "name": "apply_patch",
                    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
                }
            ],
        ),
        None,
        "custom_tools",
        400,
        '{"error":{"message":"Invalid value: \'custom\'","code":"unknown_parameter",'
        '"param":"tools","type":"invalid_request_error"}}\n',
    ),
    "namespace-tool": (
        "responses",
        body(
            "responses",
            "gpt-5.5",
            tools=[
                {
                    "type": "namespace",
                    "name": "multi_agent_v1",
                    "tools": [{"type": "function", "name": "spawn", "parameters": {}}],
                }
            ],
        ),
        None,
        "namespace_tools",
        400,
        '{"error":{"message":"Invalid value: \'namespace\'","code":"unknown_parameter",'
        '"param":"tools","type":"invalid_request_error"}}\n',
    ),
    "responses-web-search": (
        "responses",
        body("responses", "gpt-5.5", tools=[{"type": "web_search", "external_web_access": False}]),
        None,
        "web_search_tools",
        400,
        '{"error":{"message":"The use of the web search tool is not supported.",'
        '"code":"unsupported_value","param":"tools","type":"invalid_request_error"}}\n',
    ),
    "additional-tools-item": (
        "responses",
        {
            "model": "gpt-5.5",
            "input": [
                {"type": "additional_tools", "tools": [{"type": "function", "name": "x"}]},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ],
        },
        None,
        "additional_tools",
        400,
        '{"error":{"message":"Invalid value: \'additional_tools\'","code":"unknown_parameter",'
        '"param":"input","type":"invalid_request_error"}}\n',
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_shape_the_service_refuses_is_refused_in_its_words(case: str) -> None:
    protocol, payload, betas, check, status, text = CASES[case]
    assert check in CHECKS
    with GitHubEmulator() as emu:
        answer = _post(emu, protocol, payload, betas=betas)
        (record,) = emu.refusals
    assert (answer.status_code, answer.text) == (status, text)
    assert answer.headers["content-type"] == PLAIN
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert record.refusal == check and record.status == status
    assert record.model == payload["model"]
    with pytest.raises(AssertionError, match=check):
        emu.assert_no_refusals()


@pytest.mark.parametrize("case", sorted(CASES))
def test_lenient_switches_the_rule_off(case: str) -> None:
    protocol, payload, betas, check, _, _ = CASES[case]
    for lenient in (True, frozenset({check})):
        with GitHubEmulator(Scenario(lenient=lenient)) as emu:
            answer = _post(emu, protocol, payload, betas=betas)
            assert answer.status_code == 200, answer.text
            assert emu.refusals == ()
            emu.assert_no_refusals()


def test_the_web_search_refusal_on_messages_is_the_captured_100_bytes() -> None:
    _, payload, _, _, _, _ = CASES["web-search-server-tool"]
    with GitHubEmulator() as emu:
        answer = _post(emu, "messages", payload)
    assert len(answer.content) == 100  # caozhiyuan/copilot-api #189: content-length 100


def test_a_string_system_starting_with_the_billing_header_is_refused_too() -> None:
    payload = _messages(system=BILLING + "\nYou are Claude Code.")
    with GitHubEmulator(Scenario(lenient=frozenset({"system_text"}))) as emu:
        answer = _post(emu, "messages", payload)
    assert answer.status_code == 400
    assert "reserved keyword" in answer.text
    assert [r.refusal for r in emu.refusals] == ["billing_header"]


def test_a_billing_header_later_in_the_prompt_is_not_refused() -> None:
    payload = _messages(system=[{"type": "text", "text": "See: " + BILLING}])
    with GitHubEmulator() as emu:
        assert _post(emu, "messages", payload).status_code == 200


def test_context_management_goes_through_with_its_served_beta() -> None:
    _, payload, _, _, _, _ = CASES["context-management-without-its-beta"]
    with GitHubEmulator() as emu:
        answer = _post(emu, "messages", payload, betas="context-management-2025-06-27")
        assert answer.status_code == 200, answer.text
        emu.assert_no_refusals()


def test_a_beta_that_is_not_served_does_not_license_its_field() -> None:
    # With the unserved-beta check off, the display beta reaches the body rules: it is
    # still not *served*, so its field is refused.
    payload = _messages(thinking={"type": "enabled", "budget_tokens": 2048, "display": "updates"})
    scenario = Scenario(lenient=frozenset({"anthropic_beta"}))
    with GitHubEmulator(scenario) as emu:
        answer = _post(emu, "messages", payload, betas="thinking-display-updates-2026-08-18")
    assert answer.status_code == 400
    assert answer.text == '{"message":"thinking.enabled.display: Extra inputs are not permitted"}\n'


def test_a_cap_at_the_limit_is_served_and_the_record_shows_the_limits() -> None:
    with GitHubEmulator() as emu:
        answer = _post(emu, "messages", body("messages", "claude-opus-5", max_tokens=64000))
        (record,) = emu.requests_to("messages")
    assert answer.status_code == 200
    assert record.refusal is None and record.model == "claude-opus-5"
    assert record.limits == {
        "max_output_tokens": 64000.0,
        "max_prompt_tokens": 936000.0,
        "max_context_window_tokens": 1000000.0,
    }


def test_a_model_without_a_usable_output_limit_takes_any_cap() -> None:
    # trajectory-compaction lists max_output_tokens 0: no limit to hold a request to.
    with GitHubEmulator() as emu:
        answer = _post(emu, "chat", body("chat", "trajectory-compaction", max_tokens=10**6))
    assert answer.status_code == 200


def test_a_fractional_limit_is_compared_as_a_number() -> None:
    # grok-4.5 lists 64000.5: 64000 is under it, 64001 over it.
    with GitHubEmulator() as emu:
        under = _post(emu, "responses", body("responses", "grok-4.5", max_output_tokens=64000))
        over = _post(emu, "responses", body("responses", "grok-4.5", max_output_tokens=64001))
    assert (under.status_code, over.status_code) == (200, 400)
    assert "at most 64000.5 completion tokens" in over.text


def test_custom_tools_inside_a_namespace_are_refused_when_namespaces_are_allowed() -> None:
    payload = body(
        "responses",
        "gpt-5.5",
        tools=[{"type": "namespace", "name": "ns", "tools": [{"type": "custom", "name": "exec"}]}],
    )
    with GitHubEmulator(Scenario(lenient=frozenset({"namespace_tools"}))) as emu:
        answer = _post(emu, "responses", payload)
    assert answer.status_code == 400 and "'custom'" in answer.text


def test_plain_function_tools_on_responses_are_served() -> None:
    payload = body(
        "responses",
        "gpt-5.5",
        tools=[{"type": "function", "name": "exec_command", "parameters": {}}],
    )
    with GitHubEmulator() as emu:
        answer = _post(emu, "responses", payload)
        emu.assert_no_refusals()
    assert answer.status_code == 200
    assert answer.json()["output"][0]["type"] == "function_call"


@pytest.mark.parametrize("query", ["", "?beta=true"])
def test_count_tokens_is_not_served(query: str) -> None:
    with GitHubEmulator() as emu:
        answer = _post(emu, "messages", _messages(), path=f"/v1/messages/count_tokens{query}")
        (record,) = emu.refusals
    assert (answer.status_code, answer.text) == (404, "404 page not found\n")
    assert answer.headers["content-type"] == PLAIN
    assert (record.refusal, record.endpoint) == ("count_tokens", "count_tokens")


def test_lenient_count_tokens_answers_an_estimate() -> None:
    with GitHubEmulator(Scenario(lenient=True)) as emu:
        answer = _post(emu, "messages", _messages(), path="/v1/messages/count_tokens")
    assert answer.status_code == 200
    count = answer.json()["input_tokens"]
    assert isinstance(count, int) and count >= 1


def test_earlier_refusals_are_recorded_by_name_too() -> None:
    with GitHubEmulator() as emu:
        _post(emu, "messages", _messages(), betas="afk-mode-2026-01-31")
        _post(emu, "chat", body("chat", "no-such-model"))
        _post(emu, "chat", body("chat", "claude-opus-5"))  # Messages only
    assert [r.refusal for r in emu.refusals] == ["anthropic_beta", "model", "model_endpoint"]
    assert emu.refusals[2].model == "claude-opus-5"


def test_lenient_true_is_every_check() -> None:
    scenario = Scenario(lenient=True)
    assert scenario.lenient == CHECKS
    assert not any(scenario.strict(check) for check in CHECKS)
    assert all(Scenario(lenient=False).strict(check) for check in CHECKS)
