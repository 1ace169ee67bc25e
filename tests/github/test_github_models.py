"""Discovery: eligibility and protocol rules; an odd entry is skipped with its reason,
never fatal to the others."""

from __future__ import annotations

import json
from typing import Any

import pytest

import copilot_host as ch
from copilot_host._catalog._validate import validate_inventory
from copilot_host.github._discovery import parse_models
from copilot_host.testing import chat_model, minimal_models
from tests.github._support import response


def _inventory(*items: Any) -> ch.Inventory:
    return parse_models(response(body=json.dumps({"data": list(items)})))


def _parse(*items: Any) -> tuple[ch.ModelSpec, ...]:
    return tuple(_inventory(*items).models)


def _skipped(*items: Any) -> dict[str, str]:
    return {s.model_id: s.reason for s in _inventory(*items).skipped}


def test_default_inventory_mapping() -> None:
    inventory = _inventory(*minimal_models())
    specs = {s.model_id: s for s in inventory.models}
    assert set(specs) == {
        "gpt-4.1",
        "gpt-5-mini",
        "claude-sonnet-4",
        "text-embedding-3-small",
        "claude-messages-only",
    }
    assert specs["gpt-4.1"].protocol is ch.ApiProtocol.OPENAI_CHAT
    assert specs["gpt-4.1"].input_modalities == ("text", "image")
    assert specs["gpt-4.1"].display_name == "GPT-4.1"
    assert specs["gpt-4.1"].context_window == 128_000
    assert specs["gpt-4.1"].max_output_tokens == 16_384
    assert specs["gpt-5-mini"].protocol is ch.ApiProtocol.OPENAI_RESPONSES
    assert specs["gpt-5-mini"].protocols == {
        ch.ApiProtocol.OPENAI_RESPONSES,
        ch.ApiProtocol.OPENAI_CHAT,
    }
    assert specs["gpt-5-mini"].supports_reasoning
    # No supported_endpoints at all: Chat Completions. The picker flag is a hint only.
    assert specs["claude-sonnet-4"].protocol is ch.ApiProtocol.OPENAI_CHAT
    assert specs["claude-sonnet-4"].picker_enabled is False
    assert specs["claude-messages-only"].protocol is ch.ApiProtocol.ANTHROPIC_MESSAGES
    # Discovery reads the embeddings model; registration leaves it out unless asked.
    embeddings = specs["text-embedding-3-small"]
    assert embeddings.protocols == {ch.ApiProtocol.OPENAI_EMBEDDINGS}
    assert {(s.model_id, s.reason) for s in inventory.skipped} == {
        ("o3-disabled", "policy_not_enabled"),
    }


@pytest.mark.parametrize(
    ("endpoints", "protocol"),
    [
        (None, ch.ApiProtocol.OPENAI_CHAT),
        (["/chat/completions"], ch.ApiProtocol.OPENAI_CHAT),
        (["/responses"], ch.ApiProtocol.OPENAI_RESPONSES),
        (["/chat/completions", "/responses"], ch.ApiProtocol.OPENAI_RESPONSES),
        (["/v1/messages", "/chat/completions"], ch.ApiProtocol.OPENAI_CHAT),
        (["/v1/messages"], ch.ApiProtocol.ANTHROPIC_MESSAGES),
        (["/responses", "ws:/responses"], ch.ApiProtocol.OPENAI_RESPONSES),
        (["ws:/responses"], None),
        ([], None),
    ],
)
def test_protocol_from_supported_endpoints(
    endpoints: list[str] | None, protocol: ch.ApiProtocol | None
) -> None:
    """The preferred protocol the entry lists (Responses, then Chat, then Messages); never
    from the model's name."""
    item = chat_model("m1", endpoints=endpoints)
    specs = _parse(item)
    assert [s.protocol for s in specs] == ([protocol] if protocol else [])
    if protocol is None:
        assert _skipped(item) == {"m1": "no_supported_protocol"}


def test_protocols_hold_every_listed_protocol_we_speak() -> None:
    (spec,) = _parse(
        chat_model("claude-x", endpoints=["/v1/messages", "ws:/responses", "/chat/completions"])
    )
    assert spec.protocol is ch.ApiProtocol.OPENAI_CHAT
    assert spec.protocols == {ch.ApiProtocol.OPENAI_CHAT, ch.ApiProtocol.ANTHROPIC_MESSAGES}
    # Copilot's socket carries Responses: a model that does not serve them has no use for it.
    assert spec.websocket is False


@pytest.mark.parametrize(
    ("endpoints", "websocket"),
    [
        (["/responses", "ws:/responses"], True),
        (["/chat/completions", "ws:/responses", "/responses"], True),
        (["/responses"], False),
        (None, False),
    ],
)
def test_the_websocket_transport_is_recorded_beside_the_http_protocol(
    endpoints: list[str] | None, websocket: bool
) -> None:
    """``ws:/responses`` never changes the route's protocol; it says the model also serves
    Responses over Copilot's own socket."""
    (spec,) = _parse(chat_model("m1", endpoints=endpoints))
    assert spec.websocket is websocket
    assert spec.protocol is not None


@pytest.mark.parametrize(
    ("kind", "policy", "reason"),
    [
        ("chat", "enabled", None),
        ("chat", None, None),
        ("chat", "disabled", "policy_not_enabled"),
        ("chat", "unconfigured", "policy_not_enabled"),
        ("embeddings", "enabled", None),
        ("embeddings", "disabled", "policy_not_enabled"),
        ("completion", None, "not_chat"),
    ],
)
def test_eligibility(kind: str, policy: str | None, reason: str | None) -> None:
    item = chat_model("m1", kind=kind, policy=policy)
    assert len(_parse(item)) == int(reason is None)
    assert _skipped(item) == ({} if reason is None else {"m1": reason})


@pytest.mark.parametrize(
    "endpoints", [None, ["/chat/completions"], ["/embeddings"], ["/responses", "/embeddings"], []]
)
def test_the_type_makes_an_embeddings_model_whatever_its_endpoints_say(
    endpoints: list[str] | None,
) -> None:
    item = chat_model("emb", kind="embeddings", endpoints=endpoints)
    item["capabilities"]["limits"] = {"max_inputs": 512.0}  # type: ignore[index]
    item["capabilities"]["supports"] = {"dimensions": True}  # type: ignore[index]
    (spec,) = _parse(item)
    assert spec.protocol is ch.ApiProtocol.OPENAI_EMBEDDINGS
    assert spec.protocols == {ch.ApiProtocol.OPENAI_EMBEDDINGS}
    assert (spec.max_inputs, spec.dimensions) == (512, True)
    # A chat entry that lists /embeddings stays a chat model, and the path is not among its
    # protocols; one listing nothing else is served on nothing copilot-host speaks.
    (chat,) = _parse(chat_model("c", endpoints=["/embeddings", "/chat/completions"]))
    assert chat.protocols == {ch.ApiProtocol.OPENAI_CHAT}
    assert _skipped(chat_model("c", endpoints=["/embeddings"])) == {"c": "no_supported_protocol"}


def test_an_embeddings_entry_without_limits_or_supports_takes_no_dimensions() -> None:
    item = chat_model("ada", kind="embeddings", endpoints=None, context_window=None)
    item["capabilities"]["supports"] = {"dimensions": "yes"}  # type: ignore[index]
    (spec,) = _parse(item)
    assert (spec.max_inputs, spec.dimensions, spec.context_window) == (None, False, None)


def test_a_policy_pending_model_says_what_the_plan_allows_and_where_its_settings_are() -> None:
    (entry,) = _inventory(chat_model("m1", policy="unconfigured")).skipped
    assert "(plan and settings: https://github.com/settings/copilot)" in entry.message
    assert "no per-model switch since 2026-02-03" in entry.message
    (entry,) = _inventory(chat_model("m1", policy="disabled")).skipped
    assert "administrator" in entry.message


def test_model_without_capabilities_is_skipped_not_fatal() -> None:
    assert _skipped({"id": "bare"}) == {"bare": "not_chat"}


def test_name_falls_back_to_the_id_and_server_order_is_kept() -> None:
    items = [chat_model(f"m{i}") for i in (3, 1, 2)]
    del items[0]["name"]
    assert [(s.model_id, s.display_name) for s in _parse(*items)] == [
        ("m3", "m3"),
        ("m1", "m1"),
        ("m2", "m2"),
    ]


def test_warnings_are_kept_from_either_field() -> None:
    item = chat_model("m1")
    item["warning_message"] = "Usage-based billing applies."
    item["warning_messages"] = [{"code": "x", "message": "Retires on 2026-12-01."}, "Preview"]
    (spec,) = _parse(item)
    assert spec.warnings == ("Usage-based billing applies.", "Retires on 2026-12-01.", "Preview")


def _broken(path: tuple[str, ...], value: object) -> dict[str, Any]:
    item: dict[str, Any] = chat_model("ok-model", vision=True, reasoning=True)
    target = item
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return item


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (("id",), 42, "malformed"),
        (("id",), "", "malformed"),
        (("capabilities",), "chat", "not_chat"),
        (("capabilities", "type"), 1, "not_chat"),
        (("policy", "state"), False, "policy_not_enabled"),
        (("supported_endpoints",), "/responses", "malformed"),
        (("supported_endpoints",), [None], "no_supported_protocol"),
        (("supported_endpoints",), ["/x"] * 100, "no_supported_protocol"),
    ],
)
def test_an_odd_entry_is_skipped_and_the_others_stay(
    path: tuple[str, ...], value: object, reason: str
) -> None:
    inventory = _inventory(chat_model("fine"), _broken(path, value), chat_model("also-fine"))
    assert [s.model_id for s in inventory.models] == ["fine", "also-fine"]
    assert [s.reason for s in inventory.skipped] == [reason]


@pytest.mark.parametrize(
    ("path", "value", "field", "expected"),
    [
        (("name",), ["x"], "display_name", "ok-model"),
        (("model_picker_enabled",), "yes", "picker_enabled", True),
        (("capabilities", "limits"), [], "context_window", None),
        (("capabilities", "limits", "max_context_window_tokens"), "128k", "context_window", None),
        (("capabilities", "limits", "max_context_window_tokens"), -1, "context_window", None),
        (("capabilities", "limits", "max_context_window_tokens"), 0, "context_window", None),
        (("capabilities", "limits", "max_context_window_tokens"), 1e6, "context_window", 10**6),
        (("capabilities", "limits", "max_output_tokens"), 1.5, "max_output_tokens", None),
        (("capabilities", "limits", "max_output_tokens"), True, "max_output_tokens", None),
        (("capabilities", "limits", "max_prompt_tokens"), "1m", "max_prompt_tokens", None),
        (("capabilities", "limits", "max_prompt_tokens"), 0, "max_prompt_tokens", None),
        (("capabilities", "limits", "max_prompt_tokens"), 9e4, "max_prompt_tokens", 90_000),
        (("is_chat_default",), "true", "chat_default", False),
        (("is_chat_default",), 1, "chat_default", False),
        (("capabilities", "supports"), "all", "input_modalities", ("text",)),
        (("capabilities", "supports", "vision"), "true", "input_modalities", ("text",)),
        (("capabilities", "supports", "reasoning_effort"), [1, 2], "supports_reasoning", False),
        (("policy",), "enabled", "picker_enabled", True),
        (("warning_messages",), [5, None], "warnings", ()),
    ],
)
def test_odd_fields_are_tolerated_and_the_model_kept(
    path: tuple[str, ...], value: object, field: str, expected: object
) -> None:
    """Drift in optional fields costs that field, never the model."""
    item = _broken(path, value)
    if path == ("capabilities", "supports", "reasoning_effort"):
        item["capabilities"]["supports"].pop("max_thinking_budget", None)
    (spec,) = _parse(item)
    assert getattr(spec, field) == expected


def test_the_prompt_limit_and_the_chat_default_are_kept() -> None:
    """Profiles size agents' windows from ``max_prompt_tokens`` and pick the default
    model from ``is_chat_default``: discovery keeps both as listed."""
    listed = chat_model("big", max_prompt_tokens=90_000, chat_default=True)
    plain = chat_model("plain")
    big, other = _parse(listed, plain)
    assert (big.max_prompt_tokens, big.chat_default) == (90_000, True)
    assert (other.max_prompt_tokens, other.chat_default) == (None, False)
    assert big.context_window == 128_000


@pytest.mark.parametrize("item", [None, 5, "gpt-4", ["gpt-4"]])
def test_an_item_that_is_not_an_object_is_skipped(item: object) -> None:
    inventory = _inventory(chat_model("fine"), item)
    assert [s.model_id for s in inventory.models] == ["fine"]
    assert [(s.model_id, s.reason) for s in inventory.skipped] == [("", "malformed")]


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
    from copilot_host._safety._secret import Secret
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore

    assert isinstance(store, CredentialStore)

    # A credential with no token shape: only the exact-value screen can catch it.
    credential = Secret("opensesame-phrase")
    specs = _inventory(chat_model("fine"), chat_model("opensesame-phrase"))
    with GitHubCopilotHost(store=store) as host:
        assert len(validate_inventory(specs).models) == 2
        host._hold(credential)
        with pytest.raises(ch.ModelValidationError) as caught:
            validate_inventory(specs)
    assert "opensesame" not in caught.value.message
