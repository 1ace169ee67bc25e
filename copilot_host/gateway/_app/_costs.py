"""What an answer costs, and the tokens it counts, as the gateway reads them (pure; no I/O).

Since usage-based billing the Copilot API reports each request's cost in the answer:
``copilot_usage.total_nano_aiu`` (nano AI credits: 1 credit = 10**9), at the top level of
a whole answer or of a streamed event's data, or under its ``response`` (Responses),
``message`` or ``usage`` (Anthropic Messages) member. :func:`answer_cost` reads a whole
answer, :func:`events_cost` the complete events of a stream chunk; the gateway's
:class:`CostReader` reads both as they are relayed, *after* each piece was sent (reading
never holds an event back), with the tokens the answer counts (the API's reader), and
parses only what names the cost or ``usage``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import httpx2

from copilot_host._internal import read_json_body

from .. import _sse
from .._documents import Tokens

__all__ = ["NANO_PER_CREDIT", "CostReader", "Tally", "answer_cost", "events_cost", "usage_cost"]

NANO_PER_CREDIT = 1_000_000_000
# Looked for with find(), never ``in``: on Python 3.11 ``bytes in bytes`` raises and drops
# a TypeError before it searches, which cost more than the search on every answer.
_FIELD = b"total_nano_aiu"
_USAGE = b'"usage"'
_HOLDERS = ("response", "message", "usage")


def _nano(value: object) -> float | None:
    if not isinstance(value, dict):
        return None
    usage = value.get("copilot_usage")
    if not isinstance(usage, dict):
        return None
    nano = usage.get("total_nano_aiu")
    if isinstance(nano, bool) or not isinstance(nano, int | float):
        return None
    # Compared before any conversion: float() of a JSON integer past a float's range raises.
    return float(nano) if 0 <= nano < 1e21 else None


def _credits_in(value: object) -> float | None:
    """Credits reported in one JSON value: at its top level or under a holder member."""
    nano = _nano(value)
    if nano is None and isinstance(value, dict):
        for holder in _HOLDERS:
            nano = _nano(value.get(holder))
            if nano is not None:
                break
    return None if nano is None else nano / NANO_PER_CREDIT


def answer_cost(body: bytes) -> float | None:
    """The credits a whole (JSON) answer reports, or None when it reports none."""
    if body.find(_FIELD) < 0:
        return None
    try:
        # The library's one JSON reader: orjson on [fast], two to three times json's speed
        # on an answer read whole for the few bytes of its cost.
        return _credits_in(read_json_body(body))
    except (ValueError, RecursionError):
        return None


def events_cost(chunk: bytes) -> float | None:
    """The credits the complete SSE events in ``chunk`` report (summed), or None."""
    if chunk.find(_FIELD) < 0:
        return None
    total: float | None = None
    for data in _sse.data_lines(chunk):
        if data.find(_FIELD) < 0:
            continue
        try:
            cost = _credits_in(read_json_body(data))
        except (ValueError, RecursionError):
            continue
        if cost is not None:
            total = cost if total is None else total + cost
    return total


def usage_cost(input_tokens: int | None, prices: object) -> float | None:
    """What ``input_tokens`` (an answer's prompt, from its usage) cost at the model's input
    price (a ``TokenPrices``): for an answer that reports no cost of its own (embeddings).
    None when either is missing."""
    per_million = getattr(prices, "per_million", None)
    price = per_million(getattr(prices, "input", None)) if callable(per_million) else None
    if price is None or input_tokens is None or input_tokens >= 10**12:
        return None
    cost = input_tokens * float(price) / 1_000_000
    return cost if math.isfinite(cost) else None


class Tally(Protocol):
    """Where a :class:`CostReader` puts what it read (the gateway's per-request outcome)."""

    def add_cost(self, credits: float | None, *, estimated: bool = False) -> None: ...

    def set_tokens(self, tokens: tuple[int | None, int | None, int | None]) -> None: ...


class CostReader:
    """The gateway's own answer observer (:class:`copilot_host.gateway.AnswerObserver`): the
    cost an answer reports and the tokens it counts (read by ``tokens``, the API's reader),
    into ``tally``. Given ``prices`` (an API whose answers report no cost:
    :attr:`~copilot_host.gateway._protocols.Api.prices_usage`), a whole answer that reports
    none is priced from its prompt's tokens, marked estimated. Only a whole answer or an
    event that names ``usage`` or the cost is parsed. (The quota headers an answer carries
    are taken by the relay from the headers it relays, which hold them.)"""

    __slots__ = ("_prices", "_tally", "_tokens")

    def __init__(
        self, tally: Tally, tokens: Callable[[object], Tokens | None], prices: object = None
    ) -> None:
        self._tally = tally
        self._tokens = tokens
        self._prices = prices

    def start(self, status: int, headers: httpx2.Headers) -> None:
        """Nothing to read here: the cost is in the body, the quota in relayed headers."""

    def _read(self, data: bytes, *, whole: bool) -> None:
        try:
            value = read_json_body(data)
        except (ValueError, RecursionError):
            return
        # Searched for in the bytes first: most answers report tokens and no cost.
        credits = _credits_in(value) if data.find(_FIELD) >= 0 else None
        tokens = self._tokens(value)
        if tokens is not None:
            self._tally.set_tokens(tokens)
        if credits is None and whole and self._prices is not None and tokens is not None:
            self._tally.add_cost(usage_cost(tokens[0], self._prices), estimated=True)
            return
        self._tally.add_cost(credits)

    def whole(self, body: bytes) -> None:
        if body.find(_FIELD) >= 0 or body.find(_USAGE) >= 0:
            self._read(body, whole=True)

    def events(self, block: bytes) -> None:
        if block.find(_FIELD) < 0 and block.find(_USAGE) < 0:
            return
        for data in _sse.data_lines(block):
            if data.find(_FIELD) >= 0 or data.find(_USAGE) >= 0:
                self._read(data, whole=False)

    def end(self) -> None:
        pass
