"""What quota is left, and the budget (pure; no I/O). What an answer costs is read by
:mod:`._costs`.

Inference answers also carry the account's quota (``x-quota-snapshot-<quota>`` and
``x-usage-ratelimit-<window>``, each ``ent=..&rem=<percent left>&rst=..``, as VS Code's
``chatQuotaService.ts`` reads them); the gateway relays those headers and :class:`Spend`
warns once per quota per start when one shows under 10% left.

:class:`Spend` keeps the totals the stop line shows and the ``--max-credits`` budget. A
model request is admitted (:meth:`Spend.admit`) when what was spent, plus what requests in
flight hold, plus its own reservation stays within the budget, or when nothing is spent past
the budget and nothing is in flight (a fresh budget always lets one through). A reservation
is the larger of the largest cost the model has reported since start and the request's own
estimate from its token prices (:func:`estimate_cost`), whichever is known; a model with
neither is admitted one request at a time until it reports a cost. What an answer reports is
spent; an answer whose cost could not be read (its client hung up and the drain was cut)
counts its reservation as spent, and the stop line says how much of the total was estimated.
So the reported and estimated total passes the budget by at most one request's reservation,
as far as reservations cover what answers cost; GitHub's own bill is what the service
counts.
"""

from __future__ import annotations

import functools
import math
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "QUOTA_HEADER_PREFIXES",
    "Reservation",
    "Spend",
    "estimate_cost",
    "format_credits",
]

# Response headers that describe the account's quota; relayed to clients as they are.
QUOTA_HEADER_PREFIXES = ("x-quota-snapshot-", "x-usage-ratelimit-")
# Warn when a relayed quota shows less than this share left (percent).
LOW_QUOTA_PERCENT = 10.0
# More output tokens than any answer has (a JSON integer has no bound, a float has).
_MOST_TOKENS = 10**12


def format_credits(credits: float) -> str:
    """Up to four decimals, no trailing zeros: ``0.0425``, ``12``, ``0.0001``."""
    text = f"{credits:.4f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


# Every answer carries the quota headers, and their values change only when the quota
# moves: the last few parses are kept (parse_qs costs ~3 us a value, per answer).
@functools.lru_cache(maxsize=32)
def _percent_left(value: str) -> float | None:
    fields = urllib.parse.parse_qs(value[:1024])
    raw = fields.get("rem", [""])[0]
    try:
        percent = float(raw)
    except ValueError:
        return None
    return percent if math.isfinite(percent) else None


def estimate_cost(
    prices: object, *, input_bytes: int, output_cap: int | None, output_limit: int | None
) -> float | None:
    """A request's cost from its model's token prices (a ``TokenPrices``): input tokens as
    a quarter of the body's UTF-8 bytes, output tokens as the request's cap, else an eighth
    of the model's output limit. None when the prices or the output count are unknown (an
    output of 0 needs no output price: embeddings list an input price only)."""
    batch = getattr(prices, "batch_size", None)
    per_input = getattr(prices, "input", None)
    per_output = getattr(prices, "output", None)
    if not isinstance(batch, int) or batch <= 0 or per_input is None:
        return None
    output = (
        output_cap
        if output_cap is not None
        else (output_limit // 8 if output_limit is not None else None)
    )
    if output is None or output > _MOST_TOKENS or (output and per_output is None):
        return None  # past _MOST_TOKENS: no count to price, as for an unknown one
    cost = (input_bytes / 4 * float(per_input) + output * float(per_output or 0.0)) / batch
    return cost if math.isfinite(cost) and cost >= 0 else None


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one admitted request holds against the budget until its answer ends:
    ``credits`` (None: its model's cost is not known yet, so it is the model's one
    request in flight)."""

    model: str
    credits: float | None


@dataclass
class _Model:
    requests: int = 0
    credits: float = 0.0
    estimated: float = 0.0


@dataclass
class Spend:
    """The gateway's running totals since start, its budget and its quota warnings.

    ``warn`` receives each one-line notice (the budget reached, a quota running low); the
    gateway writes them where its access lines go.
    """

    max_credits: float | None = None
    warn: Callable[[str], None] = field(default=lambda _line: None, repr=False)
    requests: int = 0
    credits: float = 0.0
    reported: int = 0
    # Of ``credits``, what was counted at a reservation (no cost could be read).
    estimated: float = 0.0
    reserved: float = 0.0
    in_flight: int = 0
    _largest: dict[str, float] = field(default_factory=dict, repr=False)
    _unknown: set[str] = field(default_factory=set, repr=False)
    _models: dict[str, _Model] = field(default_factory=dict, repr=False)
    _warned: set[str] = field(default_factory=set, repr=False)
    # The quota headers last read: an answer usually carries the same as the one before.
    _last_quota: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    _told_budget: bool = False

    def __post_init__(self) -> None:
        budget = self.max_credits
        if budget is not None and (not math.isfinite(budget) or budget <= 0):
            raise ValueError("max_credits must be a positive number of AI credits")

    def exhausted(self) -> bool:
        """Whether the reported costs have reached the budget."""
        return self.max_credits is not None and self.credits >= self.max_credits

    def reservation(self, model: str, estimate: float | None) -> float | None:
        """What a request for ``model`` reserves: the larger of the largest cost the model
        reported since start and ``estimate`` (this request's own, from its prices), either
        when only one is known, else None (unknown). Taking the larger is what keeps a
        cheap first answer (Claude Code's probe) from making a burst of large requests
        look cheap."""
        largest = self._largest.get(model)
        if largest is None:
            return estimate
        return largest if estimate is None else max(largest, estimate)

    def admit(self, model: str, estimate: float | None) -> Reservation | None:
        """Admit one model request (see the module docstring), holding its reservation
        until :meth:`settle`; None: refused (:meth:`refusal_message` says why)."""
        budget = self.max_credits
        own = self.reservation(model, estimate)
        if budget is not None:
            fresh = self.credits < budget and self.in_flight == 0
            if own is None and model in self._unknown:
                return None
            if not fresh and self.credits + self.reserved + (own or 0.0) > budget:
                return None
        self.in_flight += 1
        if own is None:
            self._unknown.add(model)
        else:
            self.reserved += own
        return Reservation(model, own)

    def release(self, held: Reservation) -> None:
        """An admitted request that never went upstream (the daily budget refused it, or
        its client left first): its reservation is let go, and nothing is counted."""
        self.in_flight -= 1
        if held.credits is None:
            self._unknown.discard(held.model)
        else:
            self.reserved = max(self.reserved - held.credits, 0.0)

    def settle(
        self, held: Reservation, credits: float | None, *, unread: bool, estimated: bool = False
    ) -> None:
        """The admitted request ended: ``credits`` reported (None: none), or, ``estimated``,
        priced by the gateway; ``unread`` when its answer's cost could not be read (then its
        reservation counts as spent)."""
        self.in_flight -= 1
        if held.credits is None:
            self._unknown.discard(held.model)
        else:
            self.reserved = max(self.reserved - held.credits, 0.0)
        if credits is None and unread and held.credits is not None:
            self.record(held.model, held.credits, estimated=True)
        else:
            self.record(held.model, credits, estimated=estimated and credits is not None)

    def refusal_message(self) -> str:
        return (
            f"copilot-host gateway: the budget of {format_credits(self.max_credits or 0)} AI "
            f"credits set with --max-credits is used up ({format_credits(self.credits)} "
            "reported since start); restart copilot-host with a higher --max-credits to "
            "allow more"
        )

    def in_flight_message(self) -> str:
        return (
            f"copilot-host gateway: requests in flight may use the rest of the budget of "
            f"{format_credits(self.max_credits or 0)} AI credits set with --max-credits "
            f"({format_credits(self.credits)} spent, {format_credits(self.reserved)} "
            "reserved); retry when they have ended"
        )

    def record(self, model: str, credits: float | None, *, estimated: bool = False) -> None:
        """One relayed inference request and the cost its answer reported (None: none),
        or, ``estimated``, the reservation counted for it."""
        self.requests += 1
        entry = self._models.get(model)
        if entry is None:
            entry = self._models[model] = _Model()
        entry.requests += 1
        if credits is None:
            return
        if estimated:
            self.estimated += credits
            entry.estimated += credits
        else:
            self.reported += 1
            self._largest[model] = max(self._largest.get(model, 0.0), credits)
        self.credits += credits
        entry.credits += credits
        if self.exhausted() and not self._told_budget:
            self._told_budget = True
            self.warn(
                f"budget reached: {format_credits(self.credits)} of "
                f"{format_credits(self.max_credits or 0)} AI credits reported; further "
                "model requests are refused (budget_exhausted)"
            )

    def quota(self, headers: tuple[tuple[str, str], ...]) -> None:
        """Warn once per quota per start when a relayed quota header shows under 10% left."""
        if headers == self._last_quota:
            return  # read already: the same values say nothing new
        self._last_quota = headers
        for name, value in headers:
            lower = name.lower()
            if not lower.startswith(QUOTA_HEADER_PREFIXES) or lower in self._warned:
                continue
            left = _percent_left(value)
            if left is not None and left < LOW_QUOTA_PERCENT:
                self._warned.add(lower)
                which = lower.removeprefix("x-quota-snapshot-").removeprefix("x-usage-")
                self.warn(
                    f"quota {which} is running low: {left:.1f}% left "
                    "(`copilot-host usage` shows the details)"
                )

    def totals(self) -> str:
        """What the stop line says of spend: model requests and credits since start, and
        per model."""
        credits = (
            format_credits(self.credits) if self.reported or self.estimated else "none reported"
        )
        if self.estimated:
            credits += f" ({format_credits(self.estimated)} estimated)"
        line = f"{self.requests} model requests, credits {credits}"
        if self._models:
            parts = [
                f"{model} {entry.requests}"
                + (f"/{format_credits(entry.credits)}" if entry.credits else "")
                for model, entry in sorted(self._models.items())
            ]
            line += " (by model, requests/credits: " + ", ".join(parts) + ")"
        return line
