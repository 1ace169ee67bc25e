"""``realistic_models()``: the odd entries a real account's inventory holds, served as such."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx2

from copilot_host.testing import (
    GitHubEmulator,
    Inventory,
    Scenario,
    minimal_models,
    realistic_models,
)
from tests.testing._support import PATH, body, copilot


def _caps(item: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = item["capabilities"]
    return value


def test_the_realistic_inventory_holds_every_odd_entry_of_a_real_one() -> None:
    models: list[dict[str, Any]] = [dict(m) for m in realistic_models()]
    json.dumps(models)  # the wire form
    assert len(models) >= 40
    ids = Counter(m["id"] for m in models)
    assert [i for i, n in ids.items() if n > 1] == ["gpt-4o"]
    assert any("/" in i for i in ids)
    endpoints = [tuple(m["supported_endpoints"]) for m in models if "supported_endpoints" in m]
    assert len(endpoints) < len(models) - 15  # many entries list none
    assert ("ws:/responses",) in endpoints
    assert ("/v1/messages",) in endpoints
    assert any("ws:/responses" in e and "/responses" in e for e in endpoints)
    kinds = Counter(_caps(m)["type"] for m in models)
    assert kinds["embeddings"] >= 1 and kinds["completion"] >= 1 and kinds["chat"] >= 30
    policies = {m["policy"]["state"] if "policy" in m else None for m in models}
    assert policies == {"enabled", "disabled", "unconfigured", None}
    assert all(isinstance(m["warning_message"], str) for m in models)
    assert any(isinstance(m.get("warning_messages"), list) for m in models)
    assert all("is_premium" in m["billing"] for m in models)
    limits = [v for m in models for v in _caps(m)["limits"].values() if not isinstance(v, dict)]
    assert 0 in limits
    assert any(isinstance(v, float) and v.is_integer() for v in limits)
    assert any(isinstance(v, float) and not v.is_integer() for v in limits)
    names = " ".join(m["name"] for m in models)
    assert "'" in names and "\u2013" in names


def test_the_default_inventory_is_the_realistic_one() -> None:
    """The default path exercises real drift; the tidy inventory is there when asked for."""
    assert Scenario().inventory.models == realistic_models()
    assert realistic_models() != minimal_models()


def test_the_realistic_inventory_is_served_and_routed_as_listed() -> None:
    with (
        GitHubEmulator(Scenario(inventory=Inventory(models=realistic_models()))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        listed = client.get(f"{origin}/models", headers=headers).json()["data"]

        def status(protocol: str, model: str) -> int:
            url = f"{origin}{PATH[protocol]}"
            return client.post(url, json=body(protocol, model), headers=headers).status_code

        outcomes = {
            ("chat", "gpt-4o"): status("chat", "gpt-4o"),  # legacy: no list, chat only
            ("responses", "gpt-4o"): status("responses", "gpt-4o"),
            ("messages", "claude-opus-5"): status("messages", "claude-opus-5"),
            ("chat", "claude-opus-5"): status("chat", "claude-opus-5"),
            ("responses", "gpt-5.3-codex-ws"): status("responses", "gpt-5.3-codex-ws"),
            ("responses", "gpt-5.5"): status("responses", "gpt-5.5"),
            ("chat", "byok/phi-4"): status("chat", "byok/phi-4"),
        }
    assert listed == [dict(m) for m in realistic_models()]
    assert outcomes == {
        ("chat", "gpt-4o"): 200,
        ("responses", "gpt-4o"): 400,
        ("messages", "claude-opus-5"): 200,
        ("chat", "claude-opus-5"): 400,
        ("responses", "gpt-5.3-codex-ws"): 400,
        ("responses", "gpt-5.5"): 200,
        ("chat", "byok/phi-4"): 200,
    }
