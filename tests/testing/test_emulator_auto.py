"""The emulator's Copilot Auto: the pool call, the routing call, and what a model request
of an Auto session may do (docs/EMULATOR.md, "Copilot Auto"), over real sockets."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest

from copilot_host.testing import (
    Auto,
    GitHubEmulator,
    Inventory,
    Scenario,
    Usage,
    minimal_models,
)
from tests.testing._support import PATH, PLAIN, body, copilot

POOL = {"auto_mode": {"model_hints": ["auto"]}}
TINY = Inventory(models=minimal_models())


def pool_session(
    emu: GitHubEmulator, client: httpx2.Client
) -> tuple[str, dict[str, str], dict[str, Any]]:
    origin, headers = copilot(emu, client)
    answer = client.post(f"{origin}/models/session", json=POOL, headers=headers)
    assert answer.status_code == 200, answer.text
    return origin, headers, answer.json()


def test_the_pool_call_answers_the_models_a_client_picks_from() -> None:
    before = int(time.time())
    with (
        GitHubEmulator(Scenario(inventory=TINY)) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        _origin, _headers, value = pool_session(emu, client)
    assert set(value) == {"available_models", "expires_at", "discounted_costs", "session_token"}
    # The chat default first, then the first model each API serves.
    assert value["available_models"] == ["gpt-4.1", "gpt-5-mini", "claude-messages-only"]
    # A plan that may name models gets a discount on Auto's picks (0.1, VS Code's example).
    assert value["discounted_costs"] == dict.fromkeys(value["available_models"], 0.1)
    assert value["session_token"] in emu.auto_session_tokens
    # An hour by default (the real horizon is not known: assumed).
    assert before + 3600 <= value["expires_at"] <= int(time.time()) + 3600


def test_plans_limited_to_auto_get_the_pool_without_discounts() -> None:
    scenario = Scenario(inventory=TINY, usage=Usage(usage_plan="student"))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        exchanged = client.get(
            "https://api.github.com/copilot_internal/v2/token",
            headers={"Authorization": f"token {emu.github_token}"},
        ).json()
        _origin, _headers, value = pool_session(emu, client)
    assert exchanged["sku"] == "free_educational_quota"
    assert value["discounted_costs"] == {}


def test_the_routing_call_chooses_one_model_for_a_prompt() -> None:
    scenario = Scenario(inventory=TINY, auto=Auto(route_lifetime=600))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        chosen = client.post(f"{origin}/auto", json={"prompt": "fix it"}, headers=headers)
        with_image = client.post(
            f"{origin}/auto", json={"prompt": "look", "has_image": True}, headers=headers
        )
        no_prompt = client.post(f"{origin}/auto", json={"tier": "balance"}, headers=headers)
    value = chosen.json()
    assert set(value) == {"session_token", "expires_at", "selected_model", "discounted_costs"}
    selected = value["selected_model"]
    # The pool's first, as a /models entry with its volatile fields left unset.
    assert selected["id"] == "gpt-4.1" and selected["capabilities"]["type"] == "chat"
    assert "policy" not in selected and "model_picker_enabled" not in selected
    assert value["discounted_costs"] == {"gpt-4.1": 0.1}
    # With an image, the pool's first model that takes images.
    assert with_image.json()["selected_model"]["id"] == "gpt-4.1"
    assert no_prompt.status_code == 400


@pytest.mark.parametrize(
    ("gated", "path", "status", "text"),
    [
        ("pool", "/models/session", 404, "404 page not found\n"),
        ("route", "/auto", 404, '{"error":"auto_not_enabled"}'),
    ],
)
def test_a_call_gated_off_answers_404(gated: str, path: str, status: int, text: str) -> None:
    scenario = Scenario(inventory=TINY, auto=Auto(gated=frozenset({gated})))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(f"{origin}{path}", json={**POOL, "prompt": "x"}, headers=headers)
    assert (answer.status_code, answer.text) == (status, text)


def test_an_auto_session_serves_its_models_at_their_discount_on_any_plan() -> None:
    scenario = Scenario(
        inventory=TINY,
        usage=Usage(usage_plan="free"),
        auto=Auto(pool=("gpt-4.1", "claude-messages-only"), discounts={"gpt-4.1": 0.5}),
    )
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers, value = pool_session(emu, client)
        auto = {**headers, "Copilot-Session-Token": value["session_token"]}
        served = client.post(f"{origin}{PATH['chat']}", json=body("chat", "gpt-4.1"), headers=auto)
        outside = client.post(
            f"{origin}{PATH['chat']}", json=body("chat", "gpt-5-mini"), headers=auto
        )
        # Without the session the Free plan refuses the same model.
        named = client.post(
            f"{origin}{PATH['chat']}", json=body("chat", "gpt-4.1"), headers=headers
        )
        refusals = [(r.refusal, r.refusal_detail) for r in emu.refusals]
    assert served.status_code == 200
    # Half the flat cost (0.0425 credits): the session's discount on its model.
    assert served.json()["copilot_usage"]["total_nano_aiu"] == 21_250_000
    assert (outside.status_code, outside.headers["content-type"]) == (400, PLAIN)
    assert outside.json()["error"]["code"] == "model_not_supported"
    assert named.json()["error"]["code"] == "model_not_supported"
    assert refusals == [
        ("auto_session", "'gpt-5-mini' is not in the Auto session"),
        ("auto_only", "a named model on an Auto-only plan"),
    ]


@pytest.mark.parametrize("which", ["expired", "unknown"])
def test_an_expired_or_unknown_session_token_is_refused(which: str) -> None:
    scenario = Scenario(inventory=TINY, auto=Auto(pool_lifetime=0))
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers, value = pool_session(emu, client)
        sent = value["session_token"] if which == "expired" else "ast_not_issued"
        answer = client.post(
            f"{origin}{PATH['messages']}",
            json=body("messages", "claude-messages-only"),
            headers={**headers, "Copilot-Session-Token": sent},
        )
        (refused,) = emu.refusals
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_session"
    assert refused.refusal == "auto_session"
