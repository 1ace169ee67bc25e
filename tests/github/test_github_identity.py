"""The editor identity copilot-host presents, its override, and what the inventory says about
it (warning codes) and about cost (billing), against the strict emulator."""

from __future__ import annotations

import json

import pytest

import copilot_host as ch
from copilot_host.github import DEFAULT_EDITOR, EditorIdentity, GitHubCopilotHost, parse_editor
from copilot_host.github._discovery import parse_models
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    GitHubEmulator,
    Inventory,
    Scenario,
    chat_model,
    minimal_models,
    token_billing,
)
from tests._clock import FakeClock
from tests.core._hosts import MemoryHost

from ._support import response


def test_the_default_identity_is_current_vscode() -> None:
    # VS Code 1.140 / Copilot Chat 0.68 and the API version @vscode/copilot-api 0.5.2 sets.
    assert DEFAULT_EDITOR.editor_version == "vscode/1.140.0"
    assert DEFAULT_EDITOR.plugin_version == "copilot-chat/0.68.0"
    assert DEFAULT_EDITOR.user_agent.startswith("GitHubCopilotChat/0.68.0 copilot-host/")
    assert DEFAULT_EDITOR.api_version == "2026-08-01"
    assert DEFAULT_EDITOR.integration_id == "vscode-chat"


def test_parse_editor_moves_the_three_editor_values_and_nothing_else() -> None:
    newer = parse_editor("  vscode/1.150.2 copilot-chat/0.78.1 ")
    assert (newer.editor_version, newer.plugin_version) == ("vscode/1.150.2", "copilot-chat/0.78.1")
    assert newer.user_agent.startswith("GitHubCopilotChat/0.78.1 copilot-host/")
    assert (newer.api_version, newer.integration_id) == (
        DEFAULT_EDITOR.api_version,
        DEFAULT_EDITOR.integration_id,
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "vscode/1.2.3",
        "vscode/1.2.3  copilot-chat/0.1.0",
        "jetbrains/1.2 copilot-chat/0.1",
        "vscode/1.2.3 copilot-chat/0.1.0\r\nX-Injected: 1",
        "vscode/1 copilot-chat/0",
    ],
)
def test_parse_editor_refuses_anything_but_two_versioned_tokens(text: str) -> None:
    with pytest.raises(ValueError, match="two tokens"):
        parse_editor(text)


def _discover(store: CredentialStore, scenario: Scenario, editor: EditorIdentity) -> object:
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), editor=editor) as host,
    ):
        host.login(sleep=lambda _s: None)
        return ch.register_models(ch.Catalog(), host)


def test_the_emulators_floors_accept_the_current_identity_and_refuse_old_ones(
    store: CredentialStore,
) -> None:
    # The floors the service has enforced: a retired VS Code (466 since 2026-02-11) and a
    # retired API version; the current identity is above both.
    scenario = Scenario(
        inventory=Inventory(
            models=minimal_models(), min_client_version="1.110.0", min_api_version="2026-06-01"
        )
    )
    assert _discover(store, scenario, DEFAULT_EDITOR)
    for old in (
        parse_editor("vscode/1.109.0 copilot-chat/0.37.0"),
        EditorIdentity(api_version="2026-01-09"),
    ):
        store.delete()
        with pytest.raises(ch.ClientOutdatedError):
            _discover(store, scenario, old)


def test_warning_codes_stay_aligned_with_the_texts() -> None:
    item = chat_model("gpt-x")
    item["warning_message"] = "Plain note."
    item["warning_messages"] = [
        {"code": "client_version_deprecated", "message": "Update your client."},
        "A bare text.",
        {"code": "Not A Code!", "message": "Odd code."},
        {"message": "Plain note.", "code": "usage_billing"},
    ]
    found = parse_models(response(200, json.dumps({"data": [item]})))
    spec = found.models[0]
    assert spec.warnings == ("Plain note.", "Update your client.", "A bare text.", "Odd code.")
    assert spec.warning_codes == ("usage_billing", "client_version_deprecated", None, None)


def test_validation_keeps_codes_aligned_when_a_note_cleans_to_nothing() -> None:
    spec = ch.ModelSpec(
        "m",
        "M",
        ch.ApiProtocol.OPENAI_CHAT,
        warnings=("\x00\x07", "kept"),
        warning_codes=("gone", "kept_code"),
    )
    routes = ch.register_models(ch.Catalog(), MemoryHost(models=[spec], clock=FakeClock())).routes
    assert routes[0].spec.warnings == ("kept",)
    assert routes[0].spec.warning_codes == ("kept_code",)


def test_billing_keeps_prices_as_listed_per_batch() -> None:
    item = chat_model(
        "opus",
        billing=token_billing(
            500,
            2500,
            50,
            multiplier=3,
            context_max=200_000,
            long_context=(1000, 3750, 100, 1_000_000),
        ),
    )
    item["billing"]["token_prices"]["batch_size"] = 1000  # type: ignore[index]
    spec = parse_models(response(200, json.dumps({"data": [item]}))).models[0]
    billing = spec.billing
    assert billing is not None and billing.premium is True and billing.multiplier == 3.0
    prices = billing.prices
    assert prices is not None
    assert (prices.batch_size, prices.input, prices.output, prices.cache) == (1000, 500, 2500, 50)
    assert prices.context_max == 200_000
    assert prices.per_million(prices.input) == 500_000.0
    assert prices.long_context == ch.TokenPrices(1000, 1000.0, 3750.0, 100.0, 1_000_000)


@pytest.mark.parametrize(
    "billing",
    [
        "premium",
        {"is_premium": "yes"},
        {"multiplier": -1},
        {"multiplier": True},
        {"token_prices": []},
        {"token_prices": {"default": {"input_price": 1}}},
        {"token_prices": {"batch_size": 1000000, "default": {"input_price": "1"}}},
        {"token_prices": {"batch_size": 1000000, "default": {}, "long_context": 5}},
    ],
)
def test_malformed_billing_is_dropped_and_the_model_kept(billing: object) -> None:
    item = chat_model("m")
    item["billing"] = billing
    found = parse_models(response(200, json.dumps({"data": [item]})))
    assert [m.model_id for m in found.models] == ["m"]
    assert found.models[0].billing is None


def test_the_library_never_reads_the_override(
    store: CredentialStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COPILOT_HOST_EDITOR", "vscode/9.9.9 copilot-chat/9.9.9")
    with GitHubCopilotHost(store=store) as host:
        assert host.editor == DEFAULT_EDITOR
        assert host.request_headers()["Editor-Version"] == DEFAULT_EDITOR.editor_version
