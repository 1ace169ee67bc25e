"""Model inventories shaped like the Copilot API's ``GET /models`` answer.

``minimal_models()`` is small and tidy; ``realistic_models()`` is what a real account sees:
dozens of entries, many without ``supported_endpoints``, odd names, odd limits, policy
states other than enabled, a duplicate id, an id with ``/``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "NANO_AIU_PER_CREDIT",
    "PRICE_UNITS",
    "chat_model",
    "embeddings_model",
    "inventory_of",
    "minimal_models",
    "realistic_models",
    "token_billing",
]


def chat_model(
    model_id: str,
    *,
    name: str | None = None,
    endpoints: Sequence[str] | None = ("/chat/completions",),
    kind: str = "chat",
    vision: bool = False,
    reasoning: bool = False,
    picker: bool = True,
    policy: str | None = "enabled",
    context_window: float | None = 128_000,
    max_output_tokens: float | None = 16_384,
    max_prompt_tokens: float | None = None,
    chat_default: bool | None = None,
    billing: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """One inventory entry shaped like the Copilot API's ``GET /models`` items.

    ``endpoints=None`` leaves ``supported_endpoints`` out, as the service does for older
    models (it then serves them on ``/chat/completions`` only). ``max_prompt_tokens`` adds
    ``capabilities.limits.max_prompt_tokens`` and ``chat_default`` the entry's
    ``is_chat_default`` (both absent unless given). ``billing`` is the entry's ``billing``
    object as given (see :func:`token_billing`).
    """
    supports: dict[str, object] = {"streaming": True, "tool_calls": True}
    if vision:
        supports["vision"] = True
    if reasoning:
        supports["reasoning_effort"] = ["low", "medium", "high"]
    limits: dict[str, object] = {}
    if context_window is not None:
        limits["max_context_window_tokens"] = context_window
    if max_output_tokens is not None:
        limits["max_output_tokens"] = max_output_tokens
    if max_prompt_tokens is not None:
        limits["max_prompt_tokens"] = max_prompt_tokens
    item: dict[str, object] = {
        "id": model_id,
        "name": name if name is not None else model_id,
        "object": "model",
        "vendor": "emulated",
        "version": model_id,
        "preview": False,
        "model_picker_enabled": picker,
        "capabilities": {
            "type": kind,
            "family": model_id,
            "object": "model_capabilities",
            "limits": limits,
            "supports": supports,
        },
    }
    if chat_default is not None:
        item["is_chat_default"] = chat_default
    if policy is not None:
        item["policy"] = {"state": policy, "terms": "emulated terms"}
    if endpoints is not None:
        item["supported_endpoints"] = list(endpoints)
    if billing is not None:
        item["billing"] = dict(billing)
    return item


def embeddings_model(
    model_id: str,
    *,
    name: str | None = None,
    max_inputs: int | None = 512,
    dimensions: bool = True,
    family: str | None = None,
    policy: str | None = None,
    input_price: float | None = None,
) -> dict[str, object]:
    """One embeddings entry as real inventories list them (docs/EMULATOR.md,
    "Embeddings"): ``capabilities.type`` ``embeddings``, no ``supported_endpoints``, not in
    the picker, ``limits.max_inputs`` (left out for None) and ``supports.dimensions``
    (left out for False), the ``cl100k_base`` tokenizer, ``billing`` premium with
    multiplier 1 (a real 2026 dump) and, given an ``input_price``, ``token_prices`` whose
    default tier holds that price only (AI credits per million tokens: an embeddings answer
    has no output to price). The emulator serves it on ``/embeddings`` only."""
    item = chat_model(
        model_id,
        name=name,
        endpoints=None,
        kind="embeddings",
        picker=False,
        policy=policy,
        context_window=None,
        max_output_tokens=None,
    )
    item["vendor"] = "Azure OpenAI"
    item["capabilities"] = {
        "type": "embeddings",
        "family": family or model_id,
        "object": "model_capabilities",
        "tokenizer": "cl100k_base",
        "limits": {} if max_inputs is None else {"max_inputs": max_inputs},
        "supports": {"dimensions": True} if dimensions else {},
    }
    billing: dict[str, object] = {"is_premium": True, "multiplier": 1}
    if input_price is not None:
        billing["token_prices"] = {"batch_size": 1_000_000, "default": {"input_price": input_price}}
    item["billing"] = billing
    return item


# One AI credit is 10^9 nano-AIU, the unit model answers report their cost in.
NANO_AIU_PER_CREDIT = 1_000_000_000
PRICE_UNITS = frozenset({"ai_credits", "nano_aiu"})


def token_billing(
    input_price: float,
    output_price: float,
    cache_price: float | None = None,
    *,
    premium: bool = True,
    multiplier: float = 1,
    context_max: int | None = None,
    long_context: tuple[float, float, float, int] | None = None,
    cache_read_price: float | None = None,
    cache_write_price: float | None = None,
    cache_write1_h_price: float | None = None,
    max_prompt_tokens: int | None = None,
    promo: Mapping[str, object] | None = None,
    unit: str | None = None,
) -> dict[str, object]:
    """A ``billing`` object as usage-billed inventories carry it: ``token_prices`` in AI
    credits per ``batch_size`` (a million) tokens, a ``default`` tier and, when given as
    (input, output, cache, context_max), a ``long_context`` one.

    The Copilot SDK's catalogue types (github/copilot-sdk ``python/copilot/generated/
    rpc.py``, ``ModelBilling``, ``ModelBillingTokenPrices``, ``ModelBillingPromo``) name the
    newer fields given here: ``cache_read_price`` (``cache_price`` is its deprecated
    name), ``cache_write_price``, ``cache_write1_h_price``, ``max_prompt_tokens``
    (``context_max``'s successor) and a ``promo`` (``discount_percent``, ``ends_at``, ``id``,
    ``message``). ``unit="nano_aiu"`` states every price in nano-AIU (credits x 10^9) and
    says so in ``token_prices.price_unit``; ``unit="ai_credits"`` names the default unit
    (docs/EMULATOR.md: the field's name is the emulator's assumption).
    """
    if unit is not None and unit not in PRICE_UNITS:
        raise ValueError(f"unit is one of {sorted(PRICE_UNITS)}")
    scale = NANO_AIU_PER_CREDIT if unit == "nano_aiu" else 1

    def tier(**given: float | None) -> dict[str, object]:
        counts = ("context_max", "max_prompt_tokens")
        return {
            name: value if name in counts else value * scale
            for name, value in given.items()
            if value is not None
        }

    default = tier(
        input_price=input_price,
        output_price=output_price,
        cache_price=cache_price,
        cache_read_price=cache_read_price,
        cache_write_price=cache_write_price,
        cache_write1_h_price=cache_write1_h_price,
        context_max=context_max,
        max_prompt_tokens=max_prompt_tokens,
    )
    prices: dict[str, object] = {"batch_size": 1_000_000, "default": default}
    if unit is not None:
        prices["price_unit"] = unit
    if long_context is not None:
        li, lo, lc, lmax = long_context
        prices["long_context"] = tier(
            input_price=li, output_price=lo, cache_price=lc, context_max=lmax
        )
    billing: dict[str, object] = {
        "is_premium": premium,
        "multiplier": multiplier,
        "token_prices": prices,
    }
    if promo is not None:
        billing["promo"] = dict(promo)
    return billing


def minimal_models() -> tuple[dict[str, object], ...]:
    """A small inventory covering each eligibility rule of model discovery (the emulator's
    default before 0.2.0; the default is now :func:`realistic_models`)."""
    return (
        chat_model(
            "gpt-4.1", name="GPT-4.1", vision=True, max_prompt_tokens=128_000, chat_default=True
        ),
        chat_model(
            "gpt-5-mini",
            name="GPT-5 mini",
            endpoints=("/chat/completions", "/responses"),
            reasoning=True,
            billing=token_billing(25, 200, 2.5, premium=False, multiplier=0),
        ),
        chat_model("claude-sonnet-4", name="Claude Sonnet 4", endpoints=None, picker=False),
        # An embeddings model (registered only when asked), a disabled policy, an
        # Anthropic-only route.
        embeddings_model("text-embedding-3-small", name="Embedding V3 small", input_price=2),
        chat_model("o3-disabled", name="o3 (disabled)", policy="disabled"),
        chat_model("claude-messages-only", endpoints=("/v1/messages",)),
    )


def inventory_of(count: int, *, responses_every: int = 3) -> tuple[dict[str, object], ...]:
    """``count`` eligible models (every ``responses_every``-th one speaks Responses)."""
    return tuple(
        chat_model(
            f"emu-model-{index:05d}",
            name=f"Emulated model {index}",
            endpoints=("/responses",) if index % responses_every == 0 else ("/chat/completions",),
        )
        for index in range(count)
    )


# -- a real account's inventory ------------------------------------------------------------

# Since usage-based billing (mid 2026) every entry of a real answer carries this text.
BILLING_WARNING = (
    "Your billing plan has changed to usage-based billing and model multipliers no longer "
    "apply. Please update your client to the latest version to see the new billing "
    "information."
)
_MESSAGES = ("/v1/messages", "/chat/completions")
_RESPONSES = ("/responses", "ws:/responses")
_VISION_LIMITS = {
    "max_prompt_image_size": 3_145_728,
    "max_prompt_images": 1,
    "supported_media_types": ["image/jpeg", "image/png", "image/webp", "image/gif"],
}


# Limits that many real entries share: (context window, prompt, output) in tokens.
_CLAUDE_1M: dict[str, Any] = {"window": 1_000_000, "prompt": 936_000, "output": 64_000}
_GPT_1M: dict[str, Any] = {"window": 1_050_000, "prompt": 922_000, "output": 128_000}
_GPT_400K: dict[str, Any] = {"window": 400_000, "prompt": 272_000, "output": 128_000}


def _real(
    model_id: str,
    name: str,
    vendor: str,
    endpoints: Sequence[str] | None,
    *,
    kind: str = "chat",
    family: str | None = None,
    window: object = 128_000,
    prompt: object = 128_000,
    output: object = 16_384,
    vision: bool = False,
    reasoning: Sequence[str] = (),
    picker: bool = True,
    category: str | None = "versatile",
    policy: str | None = "enabled",
    premium: bool = False,
    preview: bool = False,
    **extra: Any,
) -> dict[str, object]:
    supports: dict[str, object] = {"streaming": True}
    limits: dict[str, object] = {}
    if kind == "chat":
        supports.update(tool_calls=True, parallel_tool_calls=True, structured_outputs=True)
        limits.update(max_context_window_tokens=window, max_prompt_tokens=prompt)
        limits["max_output_tokens"] = output
    if vision:
        supports["vision"] = True
        limits["vision"] = dict(_VISION_LIMITS)
    if reasoning:
        supports["reasoning_effort"] = list(reasoning)
    item: dict[str, object] = {
        "id": model_id,
        "name": name,
        "object": "model",
        "vendor": vendor,
        "version": model_id,
        "preview": preview,
        "model_picker_enabled": picker,
        "is_chat_default": False,
        "is_chat_fallback": False,
        "billing": _billing(vendor, premium, prompt),
        "capabilities": {
            "type": kind,
            "family": family or model_id,
            "object": "model_capabilities",
            "tokenizer": "o200k_base",
            "limits": limits,
            "supports": supports,
        },
        "warning_message": BILLING_WARNING,
    }
    if category is not None and picker:
        item["model_picker_category"] = category
    if policy is not None:
        item["policy"] = {"state": policy, "terms": f"Enable access to {name}."}
    if endpoints is not None:
        item["supported_endpoints"] = list(endpoints)
    item.update(extra)
    return item


def _billing(vendor: str, premium: bool, prompt: object) -> dict[str, object]:
    """An entry's default prices: Anthropic's models list cache reads and writes (and the
    one-hour write) beside the deprecated ``cache_price``, as the SDK's catalogue types
    carry them; every tier names its prompt budget (``max_prompt_tokens``)."""
    budget = int(prompt) if isinstance(prompt, (int, float)) and prompt else None
    if vendor == "Anthropic":
        return token_billing(
            500 if premium else 100,
            2500 if premium else 500,
            50 if premium else 10,
            premium=premium,
            multiplier=1 if premium else 0.33,
            cache_read_price=50 if premium else 10,
            cache_write_price=625 if premium else 125,
            cache_write1_h_price=1000 if premium else 200,
            max_prompt_tokens=budget,
        )
    if premium:
        return token_billing(500, 2500, 50, multiplier=1, max_prompt_tokens=budget)
    return token_billing(40, 160, 10, premium=False, multiplier=0, max_prompt_tokens=budget)


def realistic_models() -> tuple[dict[str, object], ...]:
    """An inventory as a real individual account receives it (45 entries).

    Modelled on real ``GET /models`` answers of 2025-2026. Besides ordinary Claude (Messages
    and Chat), Gemini (Chat), GPT-5 (Responses and ``ws:/responses``) and legacy GPT-4
    (no ``supported_endpoints`` at all) entries, it holds the odd ones a client must survive:

    * ``gpt-5.3-codex-ws``: only ``ws:/responses``, a protocol no HTTP client speaks.
    * ``claude-opus-5``: ``/v1/messages`` only.
    * ``text-embedding-*`` (type ``embeddings``) and ``gpt-41-copilot`` (type ``completion``).
    * policy states ``disabled`` (``o3``) and ``unconfigured`` (``gemini-3.1-pro-preview``);
      no ``policy`` at all (``grok-4.5``, ``gpt-5.3-codex``).
    * ``warning_message`` on every entry (the usage-billing notice) and a
      ``warning_messages`` list on ``gpt-5.6-terra``.
    * billing fields (``billing.is_premium``, ``multiplier``, ``restricted_to``).
    * limits of ``0`` (``trajectory-compaction`` output), a whole float
      (``grok-4.6``: ``500000.0``) and a fractional float (``grok-4.5``: ``64000.5``).
    * names with an apostrophe (``Raptor's Edge (Preview)``) and an en dash
      (``Claude Opus 4.8 \u2013 1M context``).
    * ``gpt-4o`` listed twice (two versions under one id).
    * ``byok/phi-4``: an enterprise bring-your-own-key id containing ``/``.
    """
    return (
        _real(
            "claude-opus-4.6",
            "Claude Opus 4.6",
            "Anthropic",
            _MESSAGES,
            premium=True,
            **_CLAUDE_1M,
            vision=True,
            category="powerful",
        ),
        _real(
            "claude-opus-4.7",
            "Claude Opus 4.7",
            "Anthropic",
            _MESSAGES,
            premium=True,
            **_CLAUDE_1M,
            vision=True,
            category="powerful",
        ),
        _real(
            "claude-opus-4.8",
            "Claude Opus 4.8 \u2013 1M context",
            "Anthropic",
            _MESSAGES,
            premium=True,
            billing=token_billing(
                500,
                2500,
                50,
                multiplier=3,
                context_max=200_000,
                long_context=(1000, 3750, 100, 1_000_000),
            ),
            **_CLAUDE_1M,
            vision=True,
            category="powerful",
        ),
        _real(
            "claude-opus-5",
            "Claude Opus 5",
            "Anthropic",
            ("/v1/messages",),
            premium=True,
            **_CLAUDE_1M,
            vision=True,
            category="powerful",
            reasoning=("low", "medium", "high", "max"),
        ),
        _real(
            "claude-sonnet-4.6",
            "Claude Sonnet 4.6",
            "Anthropic",
            ("/chat/completions", "/v1/messages"),
            premium=True,
            **_CLAUDE_1M,
            vision=True,
        ),
        _real(
            "claude-sonnet-5",
            "Claude Sonnet 5",
            "Anthropic",
            _MESSAGES,
            premium=True,
            **_CLAUDE_1M,
            vision=True,
        ),
        _real(
            "claude-haiku-4.5",
            "Claude Haiku 4.5",
            "Anthropic",
            ("/chat/completions", "/v1/messages"),
            window=200_000,
            prompt=136_000,
            output=64_000,
            vision=True,
            category="lightweight",
        ),
        _real(
            "gemini-3.1-pro-preview",
            "Gemini 3.1 Pro (Preview)",
            "Google",
            ("/chat/completions",),
            preview=True,
            policy="unconfigured",
            **_CLAUDE_1M,
            vision=True,
            category="powerful",
        ),
        _real(
            "gemini-3.5-flash",
            "Gemini 3.5 Flash",
            "Google",
            ("/chat/completions",),
            **_CLAUDE_1M,
            vision=True,
            category="lightweight",
        ),
        _real(
            "gemini-3.6-flash",
            "Gemini 3.6 Flash",
            "Google",
            ("/chat/completions",),
            **_CLAUDE_1M,
        ),
        _real(
            "gemini-3.7-flash",
            "Gemini 3.7 Flash",
            "Google",
            ("/chat/completions",),
            **_CLAUDE_1M,
        ),
        _real(
            "gpt-5.3-codex",
            "GPT-5.3-Codex",
            "OpenAI",
            _RESPONSES,
            policy=None,
            **_GPT_400K,
            reasoning=("low", "medium", "high", "xhigh"),
        ),
        _real(
            "gpt-5.3-codex-ws",
            "GPT-5.3-Codex (WebSocket)",
            "OpenAI",
            ("ws:/responses",),
            **_GPT_400K,
            picker=False,
        ),
        _real(
            "gpt-5.4-mini",
            "GPT-5.4 mini",
            "OpenAI",
            _RESPONSES,
            **_GPT_400K,
            reasoning=("minimal", "low", "medium", "high"),
            category="lightweight",
        ),
        _real(
            "gpt-5.4",
            "GPT-5.4",
            "OpenAI",
            ("/responses", "/chat/completions", "ws:/responses"),
            premium=True,
            **_GPT_1M,
            vision=True,
            reasoning=("none", "low", "medium", "high", "xhigh"),
        ),
        _real(
            "gpt-5.5",
            "GPT-5.5",
            "OpenAI",
            _RESPONSES,
            premium=True,
            **_GPT_1M,
            vision=True,
            reasoning=("low", "medium", "high"),
        ),
        _real(
            "gpt-5.6-luna",
            "GPT-5.6 Luna",
            "OpenAI",
            _RESPONSES,
            premium=True,
            **_GPT_1M,
            billing=token_billing(
                500,
                2500,
                50,
                cache_read_price=50,
                max_prompt_tokens=922_000,
                promo={
                    "id": "gpt-5.6-luna-launch",
                    "discount_percent": 25,
                    "ends_at": "2027-03-01T00:00:00Z",
                    "message": "GPT-5.6 Luna is 25% off while it is new.",
                },
            ),
        ),
        _real(
            "gpt-5.6-sol",
            "GPT-5.6 Sol",
            "OpenAI",
            _RESPONSES,
            premium=True,
            **_GPT_1M,
        ),
        _real(
            "gpt-5.6-terra",
            "GPT-5.6 Terra",
            "OpenAI",
            _RESPONSES,
            premium=True,
            **_GPT_1M,
            warning_messages=[
                {"code": "usage_billing", "message": BILLING_WARNING},
                {"code": "preview_terms", "message": "This model is in public preview."},
            ],
        ),
        _real(
            "grok-4.5",
            "Grok 4.5",
            "xAI",
            ("/responses",),
            policy=None,
            window=500_000,
            prompt=372_000,
            output=64_000.5,
        ),
        _real(
            "grok-4.6",
            "Grok 4.6",
            "xAI",
            ("/responses",),
            policy=None,
            window=500_000.0,
            prompt=372_000,
            output=128_000,
        ),
        _real(
            "mai-code-1-flash-picker",
            "Raptor's Edge (Preview)",
            "Microsoft",
            ("/responses",),
            family="oswe-vscode-modelD",
            preview=True,
        ),
        _real(
            "trajectory-compaction",
            "Trajectory compaction",
            "Fireworks",
            ("/chat/completions",),
            preview=True,
            picker=False,
            output=0,
        ),
        _real(
            "gpt-5-mini",
            "GPT-5 mini",
            "Azure OpenAI",
            ("/chat/completions", "/responses", "ws:/responses"),
            window=264_000,
            prompt=128_000,
            output=64_000,
            vision=True,
            reasoning=("minimal", "low", "medium", "high"),
            category="lightweight",
            billing={
                **token_billing(
                    25,
                    200,
                    2.5,
                    premium=False,
                    multiplier=0,
                    context_max=264_000,
                    cache_read_price=2.5,
                    max_prompt_tokens=128_000,
                ),
                "restricted_to": ["free", "pro", "pro_plus", "business", "enterprise"],
            },
            # The chat default of 2026 inventories: a 0x model that serves Chat Completions.
            is_chat_default=True,
        ),
        _real(
            "o3",
            "o3",
            "Azure OpenAI",
            ("/chat/completions", "/responses"),
            policy="disabled",
            premium=True,
            reasoning=("low", "medium", "high"),
        ),
        # Legacy entries: no supported_endpoints (served on /chat/completions), not in the
        # picker. gpt-4o appears twice: two versions answer to the same id.
        *(
            _real(
                legacy,
                legacy.replace("gpt", "GPT"),
                "Azure OpenAI",
                None,
                picker=False,
                category=None,
                # What VS Code falls back to when no other model is available.
                is_chat_fallback=legacy == "gpt-4.1",
            )
            for legacy in (
                "gpt-4o-mini-2024-07-18",
                "gpt-4o-2024-11-20",
                "gpt-4o-2024-08-06",
                "gpt-4o-2024-05-13",
                "gpt-4-o-preview",
                "gpt-4o",
                "gpt-4o-mini",
                "gpt-4.1",
                "gpt-4.1-2025-04-14",
                "gpt-4",
                "gpt-4-0613",
                "gpt-4-0125-preview",
                "gpt-3.5-turbo",
                "gpt-3.5-turbo-0613",
            )
        ),
        _real(
            "gpt-4o",
            "GPT-4o (2024-11-20)",
            "Azure OpenAI",
            None,
            picker=False,
            category=None,
            version="gpt-4o-2024-11-20",
        ),
        _real(
            "gpt-41-copilot",
            "GPT-4.1 Copilot",
            "Azure OpenAI",
            None,
            kind="completion",
            picker=False,
            category=None,
        ),
        # The three embeddings entries of real dumps (docs/EMULATOR.md, "Embeddings"):
        # ada-002 takes no dimensions, the inference variant lists no limits. Only
        # text-embedding-3-small lists a price here (an example: OpenAI's list price).
        *(
            {**entry, "warning_message": BILLING_WARNING}
            for entry in (
                embeddings_model(
                    "text-embedding-3-small",
                    name="Embedding V3 small",
                    input_price=2,
                ),
                embeddings_model(
                    "text-embedding-3-small-inference",
                    name="Embedding V3 small (Inference)",
                    family="text-embedding-3-small",
                    max_inputs=None,
                ),
                embeddings_model(
                    "text-embedding-ada-002",
                    name="Embedding V2 Ada",
                    dimensions=False,
                ),
            )
        ),
        _real(
            "byok/phi-4",
            "Phi-4 (your key)",
            "Microsoft",
            ("/chat/completions",),
            custom_model={"key_name": "phi", "owner_name": "octo-org"},
        ),
    )
