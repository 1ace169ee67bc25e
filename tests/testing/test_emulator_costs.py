"""``Scenario(usage=Usage(cost_model="prices"))``: an answer costs its tokens times the
inventory's prices (the budget tests' model), beside the flat ``request_cost``."""

from __future__ import annotations

import json
import math
from typing import Any

import httpx2
import pytest

from copilot_host.testing import (
    GitHubEmulator,
    Inventory,
    Replies,
    Scenario,
    Usage,
    chat_model,
    token_billing,
)
from tests.testing._support import copilot

CHAT = "/chat/completions"


def _ask(scenario: Scenario, payload: dict[str, Any]) -> tuple[dict[str, Any], int, float]:
    """(the whole answer, the body's byte length, the quota the account used)."""
    data = json.dumps(payload).encode()
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        headers["Content-Type"] = "application/json"
        answer = client.post(f"{origin}{CHAT}", content=data, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer.json(), len(data), emu.quota_used


def _chat(model: str, text: str = "hi") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def _priced(model: str, **billing: Any) -> Scenario:
    return Scenario(
        inventory=Inventory(models=(chat_model(model, billing=token_billing(**billing)),)),
        replies=Replies(stream_events=4),
        usage=Usage(cost_model="prices"),
    )


def test_an_answer_costs_its_tokens_times_the_prices() -> None:
    scenario = _priced("m", input_price=300, output_price=1500)
    whole, size, used = _ask(scenario, _chat("m", "x" * 1000))
    tokens = math.ceil(size / 4)
    cost = (tokens * 300 + 4 * 1500) / 1_000_000
    assert whole["usage"]["prompt_tokens"] == tokens
    assert whole["usage"]["completion_tokens"] == 4
    assert whole["copilot_usage"]["total_nano_aiu"] == round(cost * 1e9)
    assert used == pytest.approx(cost)


def test_a_longer_prompt_costs_more_and_the_flat_model_does_not_care() -> None:
    priced = _priced("m", input_price=300, output_price=1500)
    short, _, _ = _ask(priced, _chat("m", "hi"))
    long, _, _ = _ask(priced, _chat("m", "x" * 40_000))
    assert long["copilot_usage"]["total_nano_aiu"] > 10 * short["copilot_usage"]["total_nano_aiu"]
    flat = Scenario(inventory=priced.inventory, usage=Usage(request_cost=0.5))
    for text in ("hi", "x" * 40_000):
        whole, _, used = _ask(flat, _chat("m", text))
        assert whole["copilot_usage"]["total_nano_aiu"] == 500_000_000
        assert whole["usage"]["prompt_tokens"] == 1
        assert used == 0.5


def test_the_long_context_tier_applies_past_the_default_budget() -> None:
    scenario = _priced(
        "m", input_price=100, output_price=0, context_max=50, long_context=(1000, 0, 0, 10**6)
    )
    small, size_small, _ = _ask(scenario, _chat("m", "a"))
    large, size_large, _ = _ask(scenario, _chat("m", "a" * 400))
    assert math.ceil(size_small / 4) <= 50 < math.ceil(size_large / 4)
    assert small["copilot_usage"]["total_nano_aiu"] == round(
        math.ceil(size_small / 4) * 100 / 1e6 * 1e9
    )
    assert large["copilot_usage"]["total_nano_aiu"] == round(
        math.ceil(size_large / 4) * 1000 / 1e6 * 1e9
    )


def test_prices_in_nano_aiu_cost_the_same() -> None:
    credits, _, _ = _ask(_priced("m", input_price=300, output_price=1500), _chat("m"))
    nano, _, _ = _ask(_priced("m", input_price=300, output_price=1500, unit="nano_aiu"), _chat("m"))
    assert nano["copilot_usage"] == credits["copilot_usage"]


@pytest.mark.parametrize(
    ("ends_at", "factor"),
    [(None, 0.75), ("2999-01-01T00:00:00Z", 0.75), ("2001-01-01T00:00:00Z", 1.0)],
)
def test_an_active_promo_discounts_and_an_expired_one_does_not(
    ends_at: str | None, factor: float
) -> None:
    promo: dict[str, Any] = {"id": "p", "discount_percent": 25}
    if ends_at is not None:
        promo["ends_at"] = ends_at
    base, _, _ = _ask(_priced("m", input_price=300, output_price=1500), _chat("m"))
    cut, _, _ = _ask(_priced("m", input_price=300, output_price=1500, promo=promo), _chat("m"))
    expected = round(base["copilot_usage"]["total_nano_aiu"] * factor)
    assert abs(cut["copilot_usage"]["total_nano_aiu"] - expected) <= 1


def test_a_model_without_prices_costs_the_flat_amount() -> None:
    scenario = Scenario(
        inventory=Inventory(models=(chat_model("m"),)),
        usage=Usage(cost_model="prices", request_cost=0.125),
    )
    whole, size, _ = _ask(scenario, _chat("m"))
    assert whole["copilot_usage"]["total_nano_aiu"] == 125_000_000
    assert whole["usage"]["prompt_tokens"] == math.ceil(size / 4)


def test_the_cost_model_is_checked() -> None:
    with pytest.raises(ValueError, match="cost_model"):
        Scenario(usage=Usage(cost_model="tokens"))
