"""What a model answer costs under ``Scenario(usage=Usage(cost_model="prices"))``: its
tokens times the inventory's prices.

The prices are the entry's ``billing.token_prices`` as :func:`token_billing` writes them (AI
credits, or nano-AIU when ``price_unit`` says so, per ``batch_size`` tokens); the long-context
tier applies once the prompt is past the default tier's budget, and an active ``promo``
takes its discount. The emulator's own arithmetic: the service does not publish how it
rounds, so budget tests compare against this, not against GitHub's bill.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from typing import Any

from ._inventory import NANO_AIU_PER_CREDIT

__all__ = ["COST_MODELS", "estimate_tokens", "price_cost"]

# "flat": every answer costs ``Usage.request_cost``; "prices": tokens x prices.
COST_MODELS = frozenset({"flat", "prices"})


def estimate_tokens(body: bytes) -> int:
    """The prompt's tokens as the emulator counts them: a quarter of the body's bytes."""
    return max(1, math.ceil(len(body) / 4))


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _promo_discount(billing: Mapping[str, Any], now: float) -> float:
    promo = billing.get("promo")
    if not isinstance(promo, Mapping):
        return 0.0
    percent = _number(promo.get("discount_percent"))
    if percent is None or not 0 < percent <= 100:
        return 0.0
    ends = promo.get("ends_at")
    if isinstance(ends, str):
        try:
            at = datetime.datetime.fromisoformat(ends.replace("Z", "+00:00"))
        except ValueError:
            return 0.0  # an expiry that does not parse surfaces no promo (the SDK's rule)
        if at.tzinfo is None or at.timestamp() <= now:
            return 0.0
    return percent / 100


def price_cost(billing: object, input_tokens: int, output_tokens: int, now: float) -> float | None:
    """The answer's cost in AI credits, or None when the entry lists no usable prices."""
    if not isinstance(billing, Mapping):
        return None
    prices = billing.get("token_prices")
    if not isinstance(prices, Mapping):
        return None
    default = prices.get("default")
    if not isinstance(default, Mapping):
        return None
    tier = default
    budget = _number(default.get("max_prompt_tokens")) or _number(default.get("context_max"))
    long = prices.get("long_context")
    if budget is not None and input_tokens > budget and isinstance(long, Mapping):
        tier = long
    input_price = _number(tier.get("input_price"))
    output_price = _number(tier.get("output_price"))
    if output_price is None and output_tokens == 0:
        output_price = 0.0  # an embeddings entry prices its input only
    batch = _number(prices.get("batch_size")) or 1_000_000
    if input_price is None or output_price is None or batch <= 0:
        return None
    cost = (input_tokens * input_price + output_tokens * output_price) / batch
    if prices.get("price_unit") == "nano_aiu":
        cost /= NANO_AIU_PER_CREDIT
    return cost * (1 - _promo_discount(billing, now))
