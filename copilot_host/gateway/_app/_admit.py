"""Stage: admit. A model request is let upstream only within the budget (``max_credits``).

Before the request is changed, a spent budget refuses it (429 ``budget_exhausted``); just
before it goes upstream it is admitted with a reservation (:meth:`._spend.Spend.admit`),
refused (429 ``budget_in_flight``, ``Retry-After: 1``) when the requests in flight may use
the rest. The reservation's estimate comes from the model's token prices
(:func:`._spend.estimate_cost`): input as a quarter of the body's bytes, output as the
request's cap (the API's :attr:`~copilot_host.gateway._protocols.Api.output_caps`), else an
eighth of the model's output limit; none on an API whose answers generate no tokens
(embeddings: :attr:`~copilot_host.gateway._protocols.Api.chat`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import copilot_host as ch

from .._protocols import Api
from ._access import Refusal
from ._spend import Reservation, Spend, estimate_cost

__all__ = ["admit", "estimate", "spent"]

_RETRY_SOON = ((b"retry-after", b"1"),)


def spent(spend: Spend) -> Refusal | None:
    """The refusal of a model request once the budget is used up, else None."""
    if spend.exhausted():
        return Refusal(429, "budget_exhausted", spend.refusal_message())
    return None


def estimate(api: Api, route: ch.ModelRoute, body: bytes, value: Mapping[str, Any]) -> float | None:
    """The request's cost from its model's prices, None when they are unknown."""
    spec = route.spec
    prices = spec.billing.prices if spec.billing is not None else None
    if prices is None:
        return None
    cap: int | None = None if api.chat else 0
    for name in api.output_caps:
        found = value.get(name)
        if isinstance(found, int) and not isinstance(found, bool) and found >= 0:
            cap = found
            break
    return estimate_cost(
        prices, input_bytes=len(body), output_cap=cap, output_limit=spec.max_output_tokens
    )


def admit(
    spend: Spend, api: Api, route: ch.ModelRoute, body: bytes, value: Mapping[str, Any]
) -> Reservation | Refusal:
    """The request's reservation against the budget, or the refusal."""
    held = spend.admit(route.model_id, estimate(api, route, body, value))
    if held is None:
        return Refusal(429, "budget_in_flight", spend.in_flight_message(), _RETRY_SOON)
    return held
