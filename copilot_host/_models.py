"""What a model is, free of credentials: its spec, its token prices and billing, an Auto pool,
an inventory and the entries it skipped.

Plain values every layer may name (the host protocol's ``inventory()`` returns them, the
errors carry skipped entries, the catalog makes routes of them), so they sit below the
catalog and the sessions; :class:`~copilot_host._catalog._specs.ModelRoute`, which holds a
route's ``auth``, is the catalog's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ._api import ApiProtocol

__all__ = [
    "AutoPool",
    "Inventory",
    "ModelBilling",
    "ModelSpec",
    "SkippedModel",
    "TokenPrices",
]


# AI credits per unit of each price unit copilot-host knows (github/copilot-sdk
# docs/features/usage-and-billing.md: nano-AI units, a billionth of an AI credit).
_TO_CREDITS = {"ai_credits": 1.0, "nano_aiu": 1e-9}


@dataclass(frozen=True, slots=True)
class TokenPrices:
    """A model's token prices as the inventory gives them: AI credits per ``batch_size``
    tokens (VS Code's ``IChatEndpointTokenPricing`` shows them per million tokens; one
    AI credit is one US cent). Each price is None when the inventory does not list it.

    ``context_max`` is the largest prompt billed at these prices (``max_prompt_tokens``
    is its newer name; both kept as listed); ``long_context`` the dearer tier for larger
    prompts, when listed. ``cache`` is the older name of ``cache_read`` (cached input);
    ``cache_write`` and ``cache_write_1h`` price cache creation (the 1-hour kind apart).
    ``unit`` is the unit the inventory names for the prices (``"ai_credits"``,
    ``"nano_aiu"``), None when it names none (every inventory seen so far: AI credits).
    A price in ``nano_aiu`` is converted to AI credits (10^9 nano-AIU each) by
    :meth:`per_million`; one in a unit copilot-host does not know is kept as listed and
    has no per-million figure.
    """

    batch_size: int
    input: float | None = None
    output: float | None = None
    cache: float | None = None
    context_max: int | None = None
    long_context: TokenPrices | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    cache_write_1h: float | None = None
    max_prompt_tokens: int | None = None
    unit: str | None = None

    def per_million(self, price: float | None) -> float | None:
        """``price`` (one of this tier's) in AI credits per million tokens."""
        if price is None:
            return None
        scale = _TO_CREDITS.get(self.unit) if self.unit is not None else 1.0
        if scale is None:
            return None
        return price * scale * 1_000_000 / self.batch_size

    def discounted(self, fraction: float) -> TokenPrices:
        """These prices less ``fraction`` of each (Copilot Auto's ``discounted_costs``)."""
        keep = 1.0 - fraction

        def less(price: float | None) -> float | None:
            return None if price is None else price * keep

        long_context = self.long_context
        return replace(
            self,
            input=less(self.input),
            output=less(self.output),
            cache=less(self.cache),
            cache_read=less(self.cache_read),
            cache_write=less(self.cache_write),
            cache_write_1h=less(self.cache_write_1h),
            long_context=None if long_context is None else long_context.discounted(fraction),
        )

    def document(self) -> dict[str, object]:
        """The JSON form ``models --json`` and the gateway's ``/v1/models`` show: the
        prices as listed and, beside them, per million tokens."""
        long_context = self.long_context
        return {
            "batch_size": self.batch_size,
            "input": self.input,
            "output": self.output,
            "cache": self.cache,
            "context_max": self.context_max,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cache_write_1h": self.cache_write_1h,
            "max_prompt_tokens": self.max_prompt_tokens,
            "unit": self.unit,
            "input_per_million": self.per_million(self.input),
            "output_per_million": self.per_million(self.output),
            "cache_per_million": self.per_million(self.cache),
            "cache_read_per_million": self.per_million(self.cache_read),
            "cache_write_per_million": self.per_million(self.cache_write),
            "cache_write_1h_per_million": self.per_million(self.cache_write_1h),
            "long_context": None if long_context is None else long_context.document(),
        }


@dataclass(frozen=True, slots=True)
class ModelBilling:
    """What a model costs: ``premium`` and ``multiplier`` (the legacy request-billed
    plans' charge per request) and ``prices`` (token prices, usage-billed plans), each
    None when the inventory does not say. ``promo_discount_percent`` and
    ``promo_ends_at`` (ISO 8601 UTC, None for an open-ended promotion) describe a
    promotion the inventory lists for the model (github/copilot-sdk ``ModelBillingPromo``)."""

    premium: bool | None = None
    multiplier: float | None = None
    prices: TokenPrices | None = None
    promo_discount_percent: float | None = None
    promo_ends_at: str | None = None

    def discounted(self, fraction: float) -> ModelBilling:
        """This billing less ``fraction`` of its token prices and its multiplier: what a
        model costs when Copilot Auto picked it with a discount (``discounted_costs``; VS
        Code shows Auto's picks at multiplier x (1 - discount))."""
        if not fraction:
            return self
        multiplier = self.multiplier
        return replace(
            self,
            multiplier=None if multiplier is None else round(multiplier * (1.0 - fraction), 6),
            prices=None if self.prices is None else self.prices.discounted(fraction),
        )

    def document(self) -> dict[str, object]:
        """The JSON form ``models --json`` and the gateway's ``/v1/models`` show."""
        return {
            "premium": self.premium,
            "multiplier": self.multiplier,
            "prices": None if self.prices is None else self.prices.document(),
            "promo": None
            if self.promo_discount_percent is None
            else {"discount_percent": self.promo_discount_percent, "ends_at": self.promo_ends_at},
        }


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What the inventory says about one model: display data only, never credentials.

    ``protocol`` is the one a route uses; ``protocols`` every protocol the model speaks that
    copilot-host speaks too (it always contains ``protocol``: left out, it is added).
    ``warnings`` are the service's notes on the model (a preview, a retirement date), made
    inert for a terminal when the model is registered; ``warning_codes`` holds each note's
    machine-readable code (``client_version_deprecated``, say), None where it had none,
    always as long as ``warnings``. ``billing`` is what the model costs, None when the
    inventory does not say. ``max_prompt_tokens`` is the largest prompt the service takes
    (the inventory's ``capabilities.limits.max_prompt_tokens``; often below
    ``context_window``), None when not listed. ``chat_default`` is the inventory's
    ``is_chat_default``: the model the service's own clients pick when none is named.
    ``auto`` is set on Copilot Auto's route only (``github-copilot/auto``): the models
    Auto may pick from (:class:`AutoPool`); its limits are the pool's smallest.

    An embeddings model (``protocol`` is ``ApiProtocol.OPENAI_EMBEDDINGS``, its only one)
    carries ``max_inputs``, the most inputs one request may embed (the inventory's
    ``capabilities.limits.max_inputs``, None when not listed), and ``dimensions``, whether
    it takes a ``dimensions`` field (``capabilities.supports.dimensions``).

    ``websocket`` says the inventory also lists ``ws:/responses``: the model serves
    Responses over Copilot's own WebSocket (``wss://{api}/responses``) besides HTTP. It
    never changes ``protocol`` (a model listing only ``ws:/responses`` is skipped: every
    client of a route speaks HTTP).
    """

    model_id: str
    display_name: str
    protocol: ApiProtocol
    context_window: int | None = None
    max_output_tokens: int | None = None
    input_modalities: tuple[str, ...] = ("text",)
    supports_reasoning: bool = False
    picker_enabled: bool = True
    protocols: frozenset[ApiProtocol] = field(default=frozenset())
    warnings: tuple[str, ...] = ()
    warning_codes: tuple[str | None, ...] = ()
    billing: ModelBilling | None = None
    max_prompt_tokens: int | None = None
    chat_default: bool = False
    max_inputs: int | None = None
    dimensions: bool = False
    websocket: bool = False
    auto: AutoPool | None = None

    def discounted(self, fraction: float) -> ModelSpec:
        """This model as Copilot Auto serves it with a discount of ``fraction``: its
        billing lowered (:meth:`ModelBilling.discounted`)."""
        billing = self.billing
        if not fraction or billing is None:
            return self
        return replace(self, billing=billing.discounted(fraction))

    def __post_init__(self) -> None:
        warnings, codes = self.warnings, self.warning_codes
        if isinstance(warnings, tuple) and isinstance(codes, tuple) and len(codes) != len(warnings):
            # Aligned by construction: a code per note, None where none was given.
            aligned = (codes + (None,) * len(warnings))[: len(warnings)]
            object.__setattr__(self, "warning_codes", aligned)
        protocol, protocols = self.protocol, self.protocols
        if (
            isinstance(protocol, ApiProtocol)
            and isinstance(protocols, frozenset)
            and protocol not in protocols
        ):
            object.__setattr__(self, "protocols", protocols | {protocol})


@dataclass(frozen=True, slots=True)
class AutoPool:
    """What Copilot Auto's route (``github-copilot/auto``) may pick from.

    ``models`` are the ids of Auto's pool in its order of preference, as the service's
    Auto session listed them at registration (empty when that session could not be read:
    ``known`` is then False, and each request asks again). ``discounts`` is the fraction
    off each one's price when Auto picks it (``discounted_costs``), as ``(id, fraction)``
    pairs. ``only`` is True when the plan can use only Auto (Copilot Free and Student):
    its named models are then not registered. ``inventory`` holds every model of the
    account's inventory, the specs a pick is read from (Auto may pick a model outside the
    pool it listed at registration); docs/WIRE.md, "Copilot Auto".
    """

    models: tuple[str, ...] = ()
    discounts: tuple[tuple[str, float], ...] = ()
    only: bool = False
    known: bool = True
    inventory: tuple[ModelSpec, ...] = field(default=(), repr=False)

    def discount(self, model_id: str) -> float:
        """The fraction off ``model_id``'s price when Auto picks it (0.0 for none)."""
        for listed, fraction in self.discounts:
            if listed == model_id:
                return fraction
        return 0.0

    def document(self) -> dict[str, object]:
        """The JSON form (``models --json``, ``usage --json``, the gateway's ``/v1/models``):
        ``{"pool": [ids], "discounts": {id: fraction}}``, and whether the plan can use only
        Auto and whether the pool was read."""
        return {
            "pool": list(self.models),
            "discounts": dict(self.discounts),
            "only": self.only,
            "known": self.known,
        }


@dataclass(frozen=True, slots=True)
class SkippedModel:
    """An inventory entry that is not a usable model, and why; never fatal on its own.

    ``reason`` is a stable code: ``not_chat``, ``no_supported_protocol``,
    ``policy_not_enabled``, ``malformed``, ``invalid_id``, ``duplicate_id``,
    ``credential_like`` or ``auto_only`` (a plan that can use only Copilot Auto: the model
    is reachable through ``github-copilot/auto`` only). ``model_id`` and ``display_name``
    are made safe for display at registration (``model_id`` is ``""`` when the entry had no
    usable id); ``message`` says what it means and, where a person can act, what to do.
    """

    model_id: str
    reason: str
    message: str = ""
    display_name: str = ""


@dataclass(frozen=True, slots=True)
class Inventory:
    """What a host's ``inventory()`` may return: the usable models and the skipped entries.

    A host that skips nothing may return a plain sequence of :class:`ModelSpec` instead.
    """

    models: Sequence[ModelSpec]
    skipped: Sequence[SkippedModel] = ()
