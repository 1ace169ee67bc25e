"""Stage: admit. A model request is let upstream only within the budget (``max_credits``).

Before the request is changed, a spent budget refuses it (``budget_exhausted``, with the
status its agent stops on at once, :func:`copilot_host.gateway._agents.budget_status`:
402, or 400 for the agents that retry a 402; never a status clients retry, and
``x-should-retry: false``); just before it goes upstream it is admitted with a reservation
(:meth:`._spend.Spend.admit`), refused (429 ``budget_in_flight``, ``Retry-After: 1``: that
one is to be retried) when the requests in flight may use the rest. The reservation's
estimate comes from the model's token prices (:func:`._spend.estimate_cost`): input as a
quarter of the body's bytes, output as the request's cap (the API's
:attr:`~copilot_host.gateway._protocols.Api.output_caps`), else an eighth of the model's
output limit; none on an API whose answers generate no tokens (embeddings:
:attr:`~copilot_host.gateway._protocols.Api.chat`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import copilot_host as ch

from .._protocols import Api
from ._access import Refusal
from ._spend import Reservation, Spend, estimate_cost

__all__ = ["admit", "estimate", "over_daily", "spent"]

_RETRY_SOON = ((b"retry-after", b"1"),)
_FINAL = ((b"x-should-retry", b"false"),)
# What makes opencode 1.18.33 retry an error whatever its status: its session retry
# matches the message and the body against these (its bundle; a 402 saying "500 AI
# credits" was retried until killed, measured). A budget message with its numbers that
# matches is told without them.
_RETRIED = re.compile(
    r"429|500|502|503|504|524|rate.?limit|too many requests|rate increased|overloaded|"
    r"unavailable|internal error|server error|provider returned error|terminated|"
    r"fetch failed|econnreset|etimedout|timeout|timed out|time out|try your request again|"
    r"retry your request|resource.exhausted|try again|at capacity",
    re.IGNORECASE,
)
SAFE_BUDGET_MESSAGE = (
    "copilot-host gateway: the budget set with --max-credits is used up; restart "
    "copilot-host with a higher --max-credits to allow more"
)


def budget_message(spend: Spend) -> str:
    """The spent budget's message, with its numbers unless they would make a client
    read it as passing (:data:`_RETRIED`)."""
    message = spend.refusal_message()
    return SAFE_BUDGET_MESSAGE if _RETRIED.search(message) else message


SAFE_DAILY_MESSAGE = (
    "copilot-host gateway: the daily budget set with --max-credits-per-day is used up for "
    "today (UTC); it renews at midnight UTC"
)


def over_daily(message: str, status: int = 402) -> Refusal:
    """The refusal of a model request that would pass ``--max-credits-per-day`` (the
    ledger's :class:`~copilot_host.gateway._ledger.OverDailyBudget` says ``message``): final,
    as the run's budget's is, in the status the sending agent stops on."""
    shown = SAFE_DAILY_MESSAGE if _RETRIED.search(message) else message
    return Refusal(status, "budget_exhausted", shown, _FINAL)


def spent(spend: Spend, status: int = 402) -> Refusal | None:
    """The refusal of a model request once the budget is used up (``status``: what the
    sending agent stops on), else None."""
    if spend.exhausted():
        return Refusal(status, "budget_exhausted", budget_message(spend), _FINAL)
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
