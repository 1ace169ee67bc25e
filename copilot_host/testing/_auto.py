"""Copilot Auto: its two session calls, and what a model request of an Auto session may do.

The pool call (``POST /models/session``) answers the models a client may pick from; the
routing call (``POST /auto``) the one model the service chose for a prompt. Each issues a
session token that model requests carry as ``Copilot-Session-Token``. docs/EMULATOR.md
("Copilot Auto") lists each rule, where it was read, and which rest on an open question
("assumed").
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from ._accounts import copilot_gate
from ._answers import Answer, copilot_error, copilot_text, json_answer, model_not_supported, refused
from ._catalog import Catalog
from ._record import RecordedRequest
from ._state import EmulatorState

__all__ = ["AutoBook", "auto_pool", "auto_route", "session_model"]

# What a discount is where the scenario names none, on plans that may name models too: VS
# Code's example value (WIRE-ROUND5's AutoModeAPIResponse, "e.g. 0.1"); assumed.
_DEFAULT_DISCOUNT = 0.1
# The fields of a /models entry the routing call leaves unset ("volatile fields ... are left
# unset": VS Code's AutoV2Response comment).
_VOLATILE = frozenset({"warning_message", "warning_messages", "policy", "model_picker_enabled"})


@dataclass(frozen=True, slots=True)
class _Held:
    models: tuple[str, ...]
    expires_at: int
    discounts: Mapping[str, float]


class AutoBook:
    """The Auto sessions the emulator issued (``state.part(AutoBook)``), by token."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state
        self._held: dict[str, _Held] = {}

    def issue(
        self, models: tuple[str, ...], lifetime: int, discounts: Mapping[str, float]
    ) -> tuple[str, int]:
        """A new session's token and its ``expires_at`` (UNIX seconds)."""
        token = f"ast_{secrets.token_hex(24)}"
        expires_at = int(self._state.now()) + lifetime
        with self._state.lock:
            self._held[token] = _Held(models, expires_at, dict(discounts))
        return token, expires_at

    def tokens(self) -> tuple[str, ...]:
        """Every token issued, in order."""
        with self._state.lock:
            return tuple(self._held)

    def held(self, token: str) -> _Held | None:
        with self._state.lock:
            return self._held.get(token)


def _pool(state: EmulatorState) -> tuple[str, ...]:
    """The ids the pool call lists: the scenario's, else the chat default first and then,
    for each API, the first model the inventory serves on it."""
    auto = state.scenario.auto
    served = state.part(Catalog).served
    if auto.pool is not None:
        return auto.pool
    pool: list[str] = [
        str(item["id"])
        for item in state.scenario.inventory.models
        if item.get("is_chat_default") is True and item.get("id") in served
    ][:1]
    for path in ("/chat/completions", "/responses", "/v1/messages"):
        first = next((m for m, paths in served.items() if path in paths), None)
        if first is not None and first not in pool:
            pool.append(first)
    return tuple(pool)


def _discounts(state: EmulatorState, pool: tuple[str, ...]) -> Mapping[str, float]:
    s = state.scenario
    if s.auto.discounts is not None:
        return s.auto.discounts
    return {} if s.auto_only_plan else dict.fromkeys(pool, _DEFAULT_DISCOUNT)


def _body(request: RecordedRequest) -> dict[str, object] | None:
    try:
        value = json.loads(request.body or b"")
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def auto_pool(state: EmulatorState, request: RecordedRequest) -> Answer:
    """``POST /models/session``: a session whose models the client picks from."""
    gate = copilot_gate(state, request)
    if gate is not None:
        return gate
    s = state.scenario
    if "pool" in s.auto.gated:
        # Gated off (peers report 404 to clients it is not served to); Go's router words.
        return copilot_text(404, "404 page not found")
    body = _body(request)
    if body is None or not isinstance(body.get("auto_mode"), dict):
        return copilot_error(400, "auto_mode is required", "invalid_request_body")
    pool = _pool(state)
    discounts = _discounts(state, pool)
    token, expires_at = state.part(AutoBook).issue(pool, s.auto.pool_lifetime, discounts)
    return json_answer(
        200,
        {
            "available_models": list(pool),
            "expires_at": expires_at,
            "discounted_costs": dict(discounts),
            "session_token": token,
        },
    )


def auto_route(state: EmulatorState, request: RecordedRequest) -> Answer:
    """``POST /auto``: a session for the one model the service chose for the prompt."""
    gate = copilot_gate(state, request)
    if gate is not None:
        return gate
    s = state.scenario
    if "route" in s.auto.gated:
        return json_answer(404, {"error": "auto_not_enabled"})
    body = _body(request)
    if body is None or not isinstance(body.get("prompt"), str):
        # "there is no prompt-free variant" (VS Code's autoV2Fetcher.ts); the answer is assumed.
        return json_answer(400, {"error": "invalid_request"})
    pool = _pool(state)
    chosen = s.auto.selects or _vision_first(state, pool, body.get("has_image") is True)
    if chosen is None:
        return json_answer(503, {"error": "no_model_available"})
    entry = next(
        (dict(item) for item in s.inventory.models if item.get("id") == chosen), {"id": chosen}
    )
    discounts = {k: v for k, v in _discounts(state, pool).items() if k == chosen}
    token, expires_at = state.part(AutoBook).issue((chosen,), s.auto.route_lifetime, discounts)
    return json_answer(
        200,
        {
            "session_token": token,
            "expires_at": expires_at,
            "selected_model": {k: v for k, v in entry.items() if k not in _VOLATILE},
            "discounted_costs": discounts,
        },
    )


def _vision_first(state: EmulatorState, pool: tuple[str, ...], vision: bool) -> str | None:
    """The routing call's choice: the pool's first model, its first that takes images when
    the request has one (the server "pre-filters to vision models")."""
    if not vision:
        return pool[0] if pool else None
    for item in state.scenario.inventory.models:
        capabilities = item.get("capabilities")
        supports = capabilities.get("supports") if isinstance(capabilities, Mapping) else None
        if item.get("id") in pool and isinstance(supports, Mapping) and supports.get("vision"):
            return str(item["id"])
    return pool[0] if pool else None


def session_model(
    state: EmulatorState, request: RecordedRequest, model: object
) -> Answer | float | None:
    """What a model request's ``Copilot-Session-Token`` allows: None without one; the
    discount on ``model`` when the session is current and lists it; else the refusal
    (both answers assumed: no source shows them)."""
    token = request.headers.get("copilot-session-token")
    if token is None:
        return None
    held = state.part(AutoBook).held(token.strip())
    if held is None or state.now() >= held.expires_at:
        return refused(
            "auto_session",
            "an expired or unknown Auto session",
            copilot_error(400, "The Auto session token is expired or invalid.", "invalid_session"),
        )
    if not isinstance(model, str) or model not in held.models:
        return refused(
            "auto_session", f"{model!r} is not in the Auto session", model_not_supported()
        )
    return held.discounts.get(model, 0.0)
