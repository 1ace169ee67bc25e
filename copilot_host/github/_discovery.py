"""Step 4: discover the account's models on the vetted inference origin (sans-IO).

Real inventories drift: dozens of entries, new fields, limits sent as floats or zero,
models only another client can call (``ws:/responses``), completion models, models a policy
has not enabled yet. Each entry is therefore read on its own: a usable chat or embeddings
model becomes a :class:`ModelSpec`, anything else a :class:`SkippedModel` with a stable
reason, and only an answer that is not an inventory at all fails discovery. The core then
validates every entry (ids, names, credential material) before any of it reaches a catalog.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from .._api import ApiProtocol
from .._catalog._validate import MAX_MODELS
from .._errors import ModelValidationError, SessionError
from .._hosts import CopilotSession
from .._models import (
    Inventory,
    ModelBilling,
    ModelSpec,
    SkippedModel,
    TokenPrices,
)
from ._headers import EditorIdentity, copilot_headers, session_headers
from ._status import client_outdated_error, status_error
from ._urls import MODELS_PATH
from ._wire import LARGE_BODY, WireRequest, WireResponse, json_object, reads_response

__all__ = ["SETTINGS_URL", "build_models_request", "parse_models"]

WHAT = "Copilot model discovery"
# Where a person enables the models their plan offers but a policy has not switched on.
# The account's Copilot plan and settings. Individual plans have had no per-model switches
# since 2026-02-03 (GitHub's changelog "Simplified Copilot model enablement experience for
# individual users", cited by anomalyco/opencode #12739 and #13313): every model the plan
# includes is enabled; organizations' administrators still set model policies.
SETTINGS_URL = "https://github.com/settings/copilot"
# The endpoints copilot-host speaks, by the names the inventory uses. Anything else listed
# is another client's, and ignored, but for Copilot's own WebSocket transport of Responses
# ("ws:/responses"), which a route records beside its HTTP protocols (ModelSpec.websocket).
_MAX_ENDPOINTS = 32
_WEBSOCKET = "ws:/responses"
_MAX_WARNINGS = 8
# An embeddings entry's one protocol (``capabilities.type == "embeddings"``).
_EMBEDDINGS = frozenset({ApiProtocol.OPENAI_EMBEDDINGS})
# A warning's machine-readable code (``client_version_deprecated``): a plain identifier.
_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def build_models_request(
    session: CopilotSession, identity: EditorIdentity | Mapping[str, str]
) -> WireRequest:
    """Discovery under ``identity``: an editor (its chat headers) or a header set as a
    host's ``request_headers()`` gives it."""
    # The session's endpoint was vetted against the allowlist when its exchange was parsed
    # (parse_grant), the one place that check is made.
    given = copilot_headers(identity) if isinstance(identity, EditorIdentity) else identity
    headers = session_headers(session, given)
    return WireRequest(
        "GET",
        session.endpoint.url(MODELS_PATH),
        WHAT,
        tuple(headers.items()),
        limit=LARGE_BODY,
        retry=True,
    )


def _obj(obj: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _text(obj: Mapping[str, object], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) and value else None


def _limit(limits: Mapping[str, object], key: str) -> int | None:
    """A positive token count; a whole-number float counts, anything else is no limit."""
    value = limits.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            return None
        value = int(value)
    return value if value > 0 else None


def _protocols(item: Mapping[str, object]) -> frozenset[ApiProtocol] | None:
    """The chat protocols listed that we speak; None when the field is present but not a
    list. An entry without ``supported_endpoints`` predates the field: Chat Completions.
    (A chat entry listing ``/embeddings`` does not make it an embeddings model:
    ``capabilities.type`` decides that.)
    """
    listed = item.get("supported_endpoints")
    if listed is None:
        return frozenset({ApiProtocol.OPENAI_CHAT})
    if not isinstance(listed, list):
        return None
    found = (ApiProtocol.of_path(path) for path in listed[:_MAX_ENDPOINTS] if isinstance(path, str))
    return frozenset(protocol for protocol in found if protocol is not None and protocol.chat)


def _websocket(item: Mapping[str, object], protocols: frozenset[ApiProtocol]) -> bool:
    """Whether a served Responses model also lists Copilot's WebSocket transport."""
    listed = item.get("supported_endpoints")
    return (
        ApiProtocol.OPENAI_RESPONSES in protocols
        and isinstance(listed, list)
        and _WEBSOCKET in listed[:_MAX_ENDPOINTS]
    )


def _reasoning(supports: Mapping[str, object]) -> bool:
    efforts = supports.get("reasoning_effort")
    budget = supports.get("max_thinking_budget")
    return (
        (isinstance(efforts, list) and any(isinstance(e, str) for e in efforts))
        or (isinstance(budget, int) and not isinstance(budget, bool) and budget > 0)
        or supports.get("thinking") is True
        or supports.get("adaptive_thinking") is True
    )


def _warnings(item: Mapping[str, object]) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """``warning_message`` (one text) and ``warning_messages`` (texts, or objects with a
    ``message`` and a ``code``), and each one's code (None where it has none); the core
    makes the texts inert before anyone sees them."""
    found: dict[str, str | None] = {}
    single = _text(item, "warning_message")
    if single is not None:
        found[single] = None
    many = item.get("warning_messages")
    if isinstance(many, list):
        for entry in many[:_MAX_WARNINGS]:
            text = _text(entry, "message") if isinstance(entry, dict) else entry
            if not isinstance(text, str) or not text:
                continue
            code = entry.get("code") if isinstance(entry, dict) else None
            code = code if isinstance(code, str) and _CODE.fullmatch(code) else None
            if text not in found or (found[text] is None and code is not None):
                found[text] = code
    kept = list(found.items())[:_MAX_WARNINGS]
    return tuple(text for text, _ in kept), tuple(code for _, code in kept)


class _Malformed(Exception):
    """A billing field of the wrong shape: the billing is dropped, the model kept."""


def _price(tier: Mapping[str, object], key: str) -> float | None:
    value = tier.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 1e15  # room for a price in nano-AIU
    ):
        raise _Malformed(key)
    return float(value)


def _tier(value: Mapping[str, object], batch_size: int, unit: str | None) -> TokenPrices:
    # github/copilot-sdk python/copilot/generated/rpc.py, ModelBillingTokenPrices: the
    # cache read/write and 1-hour cache-write prices and max_prompt_tokens beside the
    # older cache_price and context_max.
    write_1h = _price(value, "cache_write_1h_price")
    return TokenPrices(
        batch_size=batch_size,
        input=_price(value, "input_price"),
        output=_price(value, "output_price"),
        cache=_price(value, "cache_price"),
        context_max=_limit(value, "context_max"),
        cache_read=_price(value, "cache_read_price"),
        cache_write=_price(value, "cache_write_price"),
        cache_write_1h=write_1h if write_1h is not None else _price(value, "cache_write1h_price"),
        max_prompt_tokens=_limit(value, "max_prompt_tokens"),
        unit=unit,
    )


_UNIT = re.compile(r"[a-z][a-z0-9_]{0,31}")
_PROMO_END = re.compile(r"\d{4}-\d{2}-\d{2}T[0-9:.]{2,18}(?:Z|[+-]\d{2}:\d{2})")


def _unit(listed: Mapping[str, object]) -> str | None:
    """The price unit the inventory names (``unit``, or ``price_unit``), None if none."""
    for key in ("unit", "price_unit"):
        value = listed.get(key)
        if value is not None:
            if not isinstance(value, str) or not _UNIT.fullmatch(value):
                raise _Malformed(key)
            return value
    return None


def _promo(billing: Mapping[str, object]) -> tuple[float | None, str | None]:
    """``promo {discount_percent, ends_at}``; a malformed one is no promotion."""
    promo = billing.get("promo")
    if not isinstance(promo, dict):
        return None, None
    discount = promo.get("discount_percent")
    ends = promo.get("ends_at")
    if (
        isinstance(discount, bool)
        or not isinstance(discount, int | float)
        or not 0 <= discount <= 100
        or (ends is not None and not (isinstance(ends, str) and _PROMO_END.fullmatch(ends)))
    ):
        return None, None
    return float(discount), ends


def _billing(item: Mapping[str, object]) -> ModelBilling | None:
    """``billing``: ``is_premium``, ``multiplier`` and ``token_prices`` (AI credits per
    ``batch_size`` tokens, a ``default`` tier and maybe a ``long_context`` one; docs/WIRE.md,
    "Billing"). Anything malformed in it drops the billing, never the model."""
    billing = item.get("billing")
    if not isinstance(billing, dict):
        return None
    premium = billing.get("is_premium")
    multiplier = billing.get("multiplier")
    if premium is not None and not isinstance(premium, bool):
        return None
    if multiplier is not None and (
        isinstance(multiplier, bool)
        or not isinstance(multiplier, int | float)
        or not math.isfinite(multiplier)
        or not 0 <= multiplier <= 1e6
    ):
        return None
    prices: TokenPrices | None = None
    listed = billing.get("token_prices")
    if listed is not None:
        if not isinstance(listed, dict):
            return None
        batch_size = _limit(listed, "batch_size")
        default = listed.get("default")
        if batch_size is None or not isinstance(default, dict):
            return None
        long_context = listed.get("long_context")
        if long_context is not None and not isinstance(long_context, dict):
            return None
        try:
            unit = _unit(listed)
            prices = replace(
                _tier(default, batch_size, unit),
                long_context=None
                if long_context is None
                else _tier(long_context, batch_size, unit),
            )
        except _Malformed:
            return None
    discount, ends = _promo(billing)
    if premium is None and multiplier is None and prices is None and discount is None:
        return None
    return ModelBilling(
        premium=premium,
        multiplier=float(multiplier) if multiplier is not None else None,
        prices=prices,
        promo_discount_percent=discount,
        promo_ends_at=ends,
    )


def _policy_message(state: str) -> str:
    if state == "disabled":
        return (
            "disabled by a Copilot policy: an organization's plan has the models its "
            "administrator enables (ask them), an individual plan those it includes "
            f"(plan and settings: {SETTINGS_URL})"
        )
    return (
        f"not enabled (policy {state!r}): individual plans get every model they include "
        "(no per-model switch since 2026-02-03), so it is not in the plan or awaits its "
        f"terms in a Copilot chat client (plan and settings: {SETTINGS_URL})"
    )


def _entry(item: object) -> ModelSpec | SkippedModel:
    if not isinstance(item, dict):
        return SkippedModel("", "malformed", "the entry is not a JSON object")
    raw_id = item.get("id")
    if not isinstance(raw_id, str) or not raw_id:
        return SkippedModel("", "malformed", "the entry has no string id")
    model_id = raw_id
    name = _text(item, "name") or model_id
    capabilities = _obj(item, "capabilities")
    kind = capabilities.get("type")
    protocols: frozenset[ApiProtocol] | None
    if kind == "embeddings":
        # The type decides, whatever supported_endpoints says (embeddings entries list none).
        protocols = _EMBEDDINGS
    elif kind != "chat":
        what = f"a {kind!r} model" if isinstance(kind, str) else "a model of no stated type"
        return SkippedModel(model_id, "not_chat", f"{what}, not a chat model", name)
    else:
        protocols = _protocols(item)
    if protocols is None:
        return SkippedModel(model_id, "malformed", "its 'supported_endpoints' is not a list", name)
    embeds = protocols is _EMBEDDINGS
    protocol = ApiProtocol.OPENAI_EMBEDDINGS if embeds else ApiProtocol.preferred(protocols)
    if protocol is None:
        return SkippedModel(
            model_id,
            "no_supported_protocol",
            "it is served only on endpoints copilot-host does not speak",
            name,
        )
    state = _obj(item, "policy").get("state")
    if state is not None and state != "enabled":
        shown = state if isinstance(state, str) else "unknown"
        return SkippedModel(model_id, "policy_not_enabled", _policy_message(shown), name)
    limits = _obj(capabilities, "limits")
    supports = _obj(capabilities, "supports")
    picker = item.get("model_picker_enabled")
    warnings, codes = _warnings(item)
    return ModelSpec(
        model_id=model_id,
        display_name=name,
        protocol=protocol,
        context_window=_limit(limits, "max_context_window_tokens"),
        max_output_tokens=_limit(limits, "max_output_tokens"),
        input_modalities=("text", "image") if supports.get("vision") is True else ("text",),
        supports_reasoning=_reasoning(supports),
        picker_enabled=picker if isinstance(picker, bool) else True,
        protocols=protocols,
        warnings=warnings,
        warning_codes=codes,
        billing=_billing(item),
        max_prompt_tokens=_limit(limits, "max_prompt_tokens"),
        chat_default=item.get("is_chat_default") is True,
        max_inputs=_limit(limits, "max_inputs"),
        dimensions=supports.get("dimensions") is True,
        websocket=_websocket(item, protocols),
    )


@reads_response
def parse_models(response: WireResponse, identities: Sequence[str] = ()) -> Inventory:
    """Every entry in the server's order: usable chat models and skipped entries.

    Only an answer that is not an inventory (not JSON, no ``data`` list, too many entries)
    raises; whatever is wrong with one entry skips that entry. ``identities`` are the
    ``Copilot-Integration-Id`` values discovery presented, named in a refusal by policy.
    """
    if response.status == 401:
        raise SessionError(
            "the Copilot API did not accept the session token for model discovery; "
            "try again (a fresh session will be requested)",
            code="session_expired",
            retryable=True,
        )
    outdated = client_outdated_error(response, WHAT)
    if outdated is not None:
        raise outdated
    if response.status != 200:
        raise status_error(response, WHAT, identities)
    body = json_object(response, WHAT)
    data = body.get("data")
    if not isinstance(data, list):
        raise ModelValidationError(f"{WHAT} answered without a 'data' list of models")
    if len(data) > MAX_MODELS:
        raise ModelValidationError(f"{WHAT} listed {len(data)} models; at most {MAX_MODELS}")
    models: list[ModelSpec] = []
    skipped: list[SkippedModel] = []
    for item in data:
        entry = _entry(item)
        if isinstance(entry, ModelSpec):
            models.append(entry)
        else:
            skipped.append(entry)
    return Inventory(tuple(models), tuple(skipped))
