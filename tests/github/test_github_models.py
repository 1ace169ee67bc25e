"""Discovery: DESIGN.md step 4's eligibility and protocol rules, strict types, no partial
catalogs."""

from __future__ import annotations

import json
from typing import Any

import pytest

import copilot_host as ch
from copilot_host._validate import validate_inventory
from copilot_host.github._models import parse_models
from copilot_host.testing import chat_model, default_models
from tests.github._support import response


def _parse(*items: Any) -> tuple[ch.ModelSpec, ...]:
    return parse_models(response(body=json.dumps({"data": list(items)})))


def test_default_inventory_mapping() -> None:
    specs = {s.model_id: s for s in _parse(*default_models())}
    assert set(specs) == {"gpt-4.1", "gpt-5-mini", "claude-sonnet-4"}
    assert specs["gpt-4.1"].protocol is ch.ApiProtocol.OPENAI_CHAT
    assert specs["gpt-4.1"].input_modalities == ("text", "image")
    assert specs["gpt-4.1"].display_name == "GPT-4.1"
    assert specs["gpt-4.1"].context_window == 128_000
    assert specs["gpt-4.1"].max_output_tokens == 16_384
    assert specs["gpt-5-mini"].protocol is ch.ApiProtocol.OPENAI_RESPONSES
    assert specs["gpt-5-mini"].supports_reasoning
    # No supported_endpoints at all: Chat Completions. The picker flag is a hint only.
    assert specs["claude-sonnet-4"].protocol is ch.ApiProtocol.OPENAI_CHAT
    assert specs["claude-sonnet-4"].picker_enabled is False


@pytest.mark.parametrize(
    ("endpoints", "protocol"),
    [
        (None, ch.ApiProtocol.OPENAI_CHAT),
        (["/chat/completions"], ch.ApiProtocol.OPENAI_CHAT),
        (["/responses"], ch.ApiProtocol.OPENAI_RESPONSES),
        (["/chat/completions", "/responses"], ch.ApiProtocol.OPENAI_RESPONSES),
        (["/v1/messages", "/chat/completions"], ch.ApiProtocol.OPENAI_CHAT),
        (["/v1/messages"], None),
        ([], None),
    ],
)
def test_protocol_from_supported_endpoints(
    endpoints: list[str] | None, protocol: ch.ApiProtocol | None
) -> None:
    specs = _parse(chat_model("m1", endpoints=endpoints))
    assert [s.protocol for s in specs] == ([protocol] if protocol else [])


@pytest.mark.parametrize(
    ("kind", "policy", "eligible"),
    [
        ("chat", "enabled", True),
        ("chat", None, True),
        ("chat", "disabled", False),
        ("chat", "unconfigured", False),
        ("embeddings", "enabled", False),
        ("completion", None, False),
    ],
)
def test_eligibility(kind: str, policy: str | None, eligible: bool) -> None:
    assert len(_parse(chat_model("m1", kind=kind, policy=policy))) == int(eligible)


def test_model_without_capabilities_is_not_eligible() -> None:
    assert _parse({"id": "bare"}) == ()


def test_name_falls_back_to_the_id_and_server_order_is_kept() -> None:
    items = [chat_model(f"m{i}") for i in (3, 1, 2)]
    del items[0]["name"]
    assert [(s.model_id, s.display_name) for s in _parse(*items)] == [
        ("m3", "m3"),
        ("m1", "m1"),
        ("m2", "m2"),
    ]


def _broken(path: tuple[str, ...], value: object) -> dict[str, Any]:
    item: dict[str, Any] = chat_model("ok-model", vision=True, reasoning=True)
    target = item
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return item


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("id",), 42),
        (("id",), ""),
        (("name",), ["x"]),
        (("model_picker_enabled",), "yes"),
        (("capabilities",), "chat"),
        (("capabilities", "type"), 1),
        (("capabilities", "limits"), []),
        (("capabilities", "limits", "max_context_window_tokens"), "128k"),
        (("capabilities", "limits", "max_context_window_tokens"), -1),
        (("capabilities", "limits", "max_output_tokens"), 10**30),
        (("capabilities", "limits", "max_output_tokens"), 1.5),
        (("capabilities", "limits", "max_output_tokens"), True),
        (("capabilities", "supports"), "all"),
        (("capabilities", "supports", "vision"), "true"),
        (("capabilities", "supports", "reasoning_effort"), [1, 2]),
        (("policy",), "enabled"),
        (("policy", "state"), False),
        (("supported_endpoints",), "/responses"),
        (("supported_endpoints",), [None]),
        (("supported_endpoints",), ["/x"] * 100),
    ],
)
def test_one_malformed_item_fails_the_whole_inventory(path: tuple[str, ...], value: object) -> None:
    with pytest.raises(ch.ModelValidationError) as caught:
        _parse(chat_model("fine"), _broken(path, value), chat_model("also-fine"))
    assert "#1" in caught.value.message


@pytest.mark.parametrize("item", [None, 5, "gpt-4", ["gpt-4"]])
def test_an_item_that_is_not_an_object_fails_everything(item: object) -> None:
    with pytest.raises(ch.ModelValidationError):
        _parse(chat_model("fine"), item)


@pytest.mark.parametrize(
    "body", ["{}", '{"data": {}}', '{"data": null}', '{"data": "x"}', "[]", "not json"]
)
def test_no_data_list_is_an_error(body: str) -> None:
    with pytest.raises((ch.ModelValidationError, ch.ResponseError)):
        parse_models(response(body=body))


def test_a_401_asks_for_a_fresh_session() -> None:
    with pytest.raises(ch.SessionError) as caught:
        parse_models(response(401, '{"error": {"message": "token expired"}}'))
    assert caught.value.retryable


def test_registration_refuses_a_model_carrying_this_logins_github_token(store: object) -> None:
    from copilot_host._secret import Secret
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore

    assert isinstance(store, CredentialStore)
    identity = ch.LoginIdentity("id-1", "octocat")
    # A credential with no token shape: only the exact-value screen can catch it.
    credential = Secret("opensesame-phrase")
    specs = _parse(chat_model("fine"), chat_model("opensesame-phrase"))
    with GitHubCopilotHost(store=store) as host:
        assert len(validate_inventory(specs)) == 2
        host._remember(identity, credential)
        with pytest.raises(ch.ModelValidationError) as caught:
            validate_inventory(specs)
    assert "opensesame" not in caught.value.message
