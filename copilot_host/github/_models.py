"""Step 4: discover the account's models on the vetted inference origin (sans-IO).

Eligibility and protocol follow DESIGN.md exactly; every other field is optional and
type-checked. One malformed item fails the whole inventory, so a catalog is never built
from part of an answer.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._errors import ModelValidationError, SessionError
from .._model import ApiProtocol, ModelSpec
from .._origin import default_allowlist
from .._seam import CopilotSession
from .._validate import MAX_MODELS
from ._headers import EditorIdentity, copilot_headers
from ._status import status_error
from ._urls import MODELS_PATH
from ._wire import LARGE_BODY, WireRequest, WireResponse, json_object

__all__ = ["build_models_request", "parse_models"]

WHAT = "Copilot model discovery"
_CHAT = "/chat/completions"
_RESPONSES = "/responses"
_MAX_ENDPOINTS = 32
_MAX_TEXT = 256


def build_models_request(session: CopilotSession, editor: EditorIdentity) -> WireRequest:
    # Checked again here, not only at the exchange: a session built by other code must not
    # carry its token to an origin off the list.
    endpoint = default_allowlist().check(session.endpoint)
    headers = copilot_headers(editor)
    headers["Accept"] = "application/json"
    headers["Authorization"] = f"Bearer {session.token.reveal()}"
    return WireRequest(
        "GET",
        endpoint.url(MODELS_PATH),
        WHAT,
        tuple(headers.items()),
        limit=LARGE_BODY,
        retry=True,
    )


class _Bad(Exception):
    """A field failed its type check; turned into ModelValidationError with the item index."""


def _opt(obj: Mapping[str, object], key: str, kind: type | tuple[type, ...]) -> object:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and kind is not bool:
        raise _Bad(f"field {key!r} has the wrong type")
    if not isinstance(value, kind):
        raise _Bad(f"field {key!r} has the wrong type")
    if isinstance(value, str) and len(value) > _MAX_TEXT:
        raise _Bad(f"field {key!r} is too long")
    return value


def _obj(obj: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = _opt(obj, key, dict)
    return value if isinstance(value, dict) else {}


def _limit(limits: Mapping[str, object], key: str) -> int | None:
    value = _opt(limits, key, int)
    if value is None:
        return None
    if not isinstance(value, int) or not 0 < value <= 100_000_000:
        raise _Bad(f"limit {key!r} is out of range")
    return value


def _endpoints(item: Mapping[str, object]) -> tuple[str, ...] | None:
    value = _opt(item, "supported_endpoints", list)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > _MAX_ENDPOINTS:
        raise _Bad("field 'supported_endpoints' is too long")
    if not all(isinstance(e, str) and len(e) <= _MAX_TEXT for e in value):
        raise _Bad("field 'supported_endpoints' lists something that is not a path")
    return tuple(value)


def _protocol(endpoints: tuple[str, ...] | None) -> ApiProtocol | None:
    if endpoints is None:
        return ApiProtocol.OPENAI_CHAT
    if _RESPONSES in endpoints:
        return ApiProtocol.OPENAI_RESPONSES
    if _CHAT in endpoints:
        return ApiProtocol.OPENAI_CHAT
    return None  # only other protocols (e.g. /v1/messages): not a route we can serve


def _reasoning(supports: Mapping[str, object]) -> bool:
    efforts = _opt(supports, "reasoning_effort", list)
    if isinstance(efforts, list) and not all(isinstance(e, str) for e in efforts):
        raise _Bad("field 'reasoning_effort' lists something that is not a name")
    budget = _opt(supports, "max_thinking_budget", int)
    thinking = _opt(supports, "thinking", bool)
    adaptive = _opt(supports, "adaptive_thinking", bool)
    return bool(efforts) or (isinstance(budget, int) and budget > 0) or bool(thinking or adaptive)


def _item(item: object) -> ModelSpec | None:
    """One inventory entry: a spec, ``None`` when not eligible, or ``_Bad``."""
    if not isinstance(item, dict):
        raise _Bad("an entry is not an object")
    model_id = _opt(item, "id", str)
    if not isinstance(model_id, str) or not model_id:
        raise _Bad("an entry has no string 'id'")
    name = _opt(item, "name", str)
    picker = _opt(item, "model_picker_enabled", bool)
    capabilities = _obj(item, "capabilities")
    kind = _opt(capabilities, "type", str)
    limits = _obj(capabilities, "limits")
    supports = _obj(capabilities, "supports")
    context_window = _limit(limits, "max_context_window_tokens")
    max_output = _limit(limits, "max_output_tokens")
    vision = _opt(supports, "vision", bool)
    reasoning = _reasoning(supports)
    state = _opt(_obj(item, "policy"), "state", str)
    protocol = _protocol(_endpoints(item))
    if kind != "chat" or state not in (None, "enabled") or protocol is None:
        return None
    return ModelSpec(
        model_id=model_id,
        display_name=name if isinstance(name, str) and name else model_id,
        protocol=protocol,
        context_window=context_window,
        max_output_tokens=max_output,
        input_modalities=("text", "image") if vision else ("text",),
        supports_reasoning=reasoning,
        picker_enabled=picker if isinstance(picker, bool) else True,
    )


def parse_models(response: WireResponse) -> tuple[ModelSpec, ...]:
    """The eligible models, in the server's order; any malformed entry fails them all."""
    if response.status == 401:
        raise SessionError(
            "the Copilot API did not accept the session token for model discovery; "
            "try again (a fresh session will be requested)",
            code="session_expired",
            retryable=True,
        )
    if response.status != 200:
        raise status_error(response, WHAT)
    body = json_object(response, WHAT)
    data = body.get("data")
    if not isinstance(data, list):
        raise ModelValidationError(f"{WHAT} answered without a 'data' list of models")
    if len(data) > MAX_MODELS:
        raise ModelValidationError(f"{WHAT} listed {len(data)} models; at most {MAX_MODELS}")
    specs: list[ModelSpec] = []
    for index, item in enumerate(data):
        try:
            spec = _item(item)
        except _Bad as bad:
            raise ModelValidationError(
                f"{WHAT}: model #{index} is malformed ({bad}); nothing was registered"
            ) from None
        if spec is not None:
            specs.append(spec)
    return tuple(specs)
