"""Model requests: the handlers of the three protocols' paths and of ``count_tokens``, the
rules a request is held to, and what each answer costs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._accounts import Logins, copilot_gate
from ._answers import (
    Answer,
    copilot_error,
    copilot_text,
    json_answer,
    model_not_supported,
    refused,
)
from ._auto import session_model
from ._betas import unserved_betas
from ._catalog import Catalog
from ._costs import estimate_tokens, price_cost
from ._protocols import PROTOCOL_PATHS, has_image, read_request, reply
from ._quota import Quota
from ._record import RecordedRequest
from ._rules import Refusal, messages_refusal, output_cap_refusal, responses_refusal
from ._state import EmulatorState, Handler, editor_version

__all__ = ["answer_model", "count_tokens", "gated_body", "model_not_supported", "noting_model"]


def _enforced(refusal: Refusal) -> Answer:
    return refused(refusal.check, refusal.detail, refusal.answer)


class _Serial:
    """How many model answers were served: each answer's id carries its number."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state
        self._count = 0

    def next(self) -> int:
        with self._state.lock:
            self._count += 1
            return self._count


def count_tokens(state: EmulatorState, request: RecordedRequest) -> Answer:
    """Copilot does not serve Anthropic's token count (its router answers 404); lenient,
    an estimate in the API's shape, for tests of a client that needs one."""
    if state.scenario.strict("count_tokens"):
        return refused("count_tokens", request.path, copilot_text(404, "404 page not found"))
    gate = copilot_gate(state, request)
    if gate is not None:
        return gate
    return json_answer(200, {"input_tokens": max(1, len(request.body) // 4)})


def noting_model(answer: Handler, name: str) -> Handler:
    """The handler named ``name`` that gives ``answer``'s answer, noting the model the
    request named and that model's listed limits."""

    def handler(state: EmulatorState, request: RecordedRequest) -> Answer:
        answered = answer(state, request)
        try:
            model = json.loads(request.body or b"{}").get("model")
        except (ValueError, RecursionError, AttributeError):
            model = None
        if not isinstance(model, str):
            return answered
        limits = state.part(Catalog).limits.get(model, {})
        notes = (("model", model), ("limits", MappingProxyType(limits)), *answered.notes)
        return dataclasses.replace(answered, notes=notes)

    handler.__name__ = handler.__qualname__ = name
    return handler


def answer_model(protocol: str) -> Handler:
    """The handler of ``protocol``'s path (a key of ``PROTOCOL_PATHS``): the model request's
    answer, noting the model it named and that model's limits."""
    return noting_model(
        lambda state, request: _inference(state, request, protocol), f"answer_{protocol}"
    )


def gated_body(state: EmulatorState, request: RecordedRequest) -> dict[str, Any] | Answer:
    """A model request's body, once it passed every Copilot request's checks and is a JSON
    object; the refusal otherwise."""
    refusal = copilot_gate(state, request)
    if refusal is not None:
        return refusal
    try:
        payload = json.loads(request.body or b"{}")
    except (ValueError, RecursionError):  # deeply nested JSON is no request either
        payload = None
    if not isinstance(payload, dict):
        return copilot_error(400, "the request body is not a JSON object", "invalid_request_body")
    return payload


def _inference(state: EmulatorState, request: RecordedRequest, protocol: str) -> Answer:
    s = state.scenario
    payload = gated_body(state, request)
    if isinstance(payload, Answer):
        return payload
    catalog, quota = state.part(Catalog), state.part(Quota)
    model = payload.get("model")
    # A request of an Auto session: its model must be the session's (any plan).
    discount = session_model(state, request, model)
    if isinstance(discount, Answer):
        return discount
    picked = _auto_only(state, model, protocol) if s.auto_only_plan and discount is None else None
    if isinstance(picked, Answer):
        return picked
    if picked is not None:
        model = picked
    paths = catalog.served.get(model) if isinstance(model, str) else None
    if not isinstance(model, str) or paths is None:
        return refused("model", f"{model!r} not served", model_not_supported())
    refused_to_client = _client_refusal(state, request, model)
    if refused_to_client is not None:
        return refused_to_client
    floor = s.inventory.min_editor_version.get(model)
    if floor is not None and editor_version(
        request.headers.get("editor-version", "")
    ) < editor_version(floor):
        # Checked before the endpoint: the service answers this on any path.
        return copilot_error(
            400,
            f"model {model} is not supported in this VS Code version. "
            f"Please update it to version {floor} or newer",
            "model_not_supported_in_version",
        )
    path = PROTOCOL_PATHS[protocol]
    if s.strict("model_endpoint") and path not in paths:
        return refused(
            "model_endpoint",
            f"{model} on {path}",
            copilot_error(400, _wrong_endpoint(model, protocol), "unsupported_api_for_model"),
        )
    if s.strict("vision_header") and has_image(payload, protocol) and not request.vision:
        return refused(
            "vision_header",
            "image input without Copilot-Vision-Request",
            copilot_error(
                400, "missing required Copilot-Vision-Request header for vision requests", ""
            ),
        )
    if protocol in s.usage.quota_exceeded_on or quota.exhausted():
        return quota.exceeded()
    limited = quota.rate_limited()
    if limited is not None:
        return limited
    refusal = _body_gate(state, request, payload, protocol, model)
    if refusal is not None:
        return refusal
    input_tokens, spent = _cost(state, request, model)
    if discount:
        spent *= 1.0 - discount
    serial = state.part(_Serial).next()
    # Credits are used by what each answer costs; request quotas by one a request.
    quota.charge(spent)
    replies = s.replies
    exchange = read_request(
        payload, protocol, model, serial, replies.tool_script, default_calls=replies.tool_calls
    )
    exchange = dataclasses.replace(exchange, input_tokens=input_tokens)
    cost = round(spent * 1e9)
    whole, events = reply(exchange, replies.stream_events, int(state.now()), cost)
    headers = quota.headers()
    if exchange.stream:
        stream = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))
        answer = Answer(200, (*stream, *headers), events=events)
    else:
        answer = json_answer(200, whole, *headers)
    if picked is not None:
        # The record names the model Auto picked, as the answer does.
        limits = MappingProxyType(catalog.limits.get(picked, {}))
        answer = dataclasses.replace(answer, notes=(("model", picked), ("limits", limits)))
    return answer


def _cost(state: EmulatorState, request: RecordedRequest, model: str) -> tuple[int, float]:
    """(the prompt's tokens as the answer reports them, the answer's cost in credits)."""
    s = state.scenario
    usage = s.usage
    if usage.cost_model != "prices":
        return 1, usage.request_cost
    # Tokens x the inventory's prices; a model listing none costs the flat amount.
    tokens = estimate_tokens(request.body)
    billing = state.part(Catalog).billing.get(model)
    priced = price_cost(billing, tokens, s.replies.stream_events, state.now())
    return tokens, usage.request_cost if priced is None else priced


def _auto_only(state: EmulatorState, model: object, protocol: str) -> Answer | str | None:
    """On an Auto-only plan: the refusal of a named model, or the model Auto serves a
    Chat request without one (the chat default when it serves Chat Completions, else the
    first model that does; diegosouzapw/OmniRoute #12000: 200, naming it)."""
    if model is not None or protocol != "chat":
        detail = "a named model on an Auto-only plan" if model else "no model"
        return refused("auto_only", detail, model_not_supported())
    served = state.part(Catalog).served
    chat = [m for m, paths in served.items() if "/chat/completions" in paths]
    for item in state.scenario.inventory.models:
        if item.get("is_chat_default") is True and item.get("id") in chat:
            return str(item["id"])
    return chat[0] if chat else None


def _body_gate(
    state: EmulatorState,
    request: RecordedRequest,
    payload: Mapping[str, Any],
    protocol: str,
    model: str,
) -> Answer | None:
    """What the API layer refuses of a body before answering (docs/EMULATOR.md has the
    evidence for each rule): on Messages, betas it does not serve, a string ``system``
    and the rules of ``_rules``; on Responses, the tool shapes it does not take; on every
    protocol, an output cap above the model's limit."""
    s = state.scenario
    if protocol == "messages":
        unserved = unserved_betas(request.headers.get("anthropic-beta", ""))
        if s.strict("anthropic_beta") and unserved:
            return refused(
                "anthropic_beta",
                ", ".join(unserved),
                copilot_error(
                    400,
                    f"unsupported beta header(s): {', '.join(unserved)}",
                    "invalid_request_error",
                    type="invalid_request_error",
                ),
            )
        if s.strict("system_text") and isinstance(payload.get("system"), str):
            return refused(
                "system_text",
                "system is a string",
                copilot_error(
                    400,
                    "system: Input should be a valid list",
                    "invalid_request_error",
                    type="invalid_request_error",
                ),
            )
        rule = messages_refusal(payload, request.headers, s.strict)
    elif protocol == "responses":
        rule = responses_refusal(payload, s.strict)
    else:
        rule = None
    if rule is None and s.strict("output_limit"):
        limit = state.part(Catalog).limits.get(model, {}).get("max_output_tokens")
        rule = output_cap_refusal(payload, protocol, model, limit)
    return None if rule is None else _enforced(rule)


def _client_refusal(state: EmulatorState, request: RecordedRequest, model: str) -> Answer | None:
    """A model the account has that is not served to this client: to its
    ``Copilot-Integration-Id`` (an organisation's policy), or to its OAuth app."""
    integration = request.headers.get("copilot-integration-id", "").strip()
    unserved = state.scenario.inventory.unserved_models.get(integration)
    if unserved is not None and (model in unserved or "*" in unserved):
        # An organisation whose policy lists a model to this client but does not serve
        # it to it: the same answer as for a model the account does not have.
        return refused("model", f"{model} not served to this client", model_not_supported())
    return _integrator_refusal(state, request, model)


def _integrator_refusal(
    state: EmulatorState, request: RecordedRequest, model: str
) -> Answer | None:
    """A model the login's OAuth app (its integrator) is not served: 400
    ``model_not_available_for_integrator`` naming the integrator and the models it is
    served, in the inventory's order (``Inventory.integrator_models``; None: every model)."""
    allowed = state.scenario.inventory.integrator_models
    if allowed is None or model in allowed:
        return None
    integrator = state.part(Logins).integrator(request)
    listed = [m["id"] for m in state.scenario.inventory.models if m.get("id") in allowed]
    return refused(
        "model",
        f"{model} not served to integrator {integrator}",
        copilot_error(
            400,
            f'The requested model is not available for integrator "{integrator}". '
            f"Available models: [{' '.join(str(m) for m in listed)}]. "
            "Verify the correct Copilot-Integration-Id header is being sent.",
            "model_not_available_for_integrator",
            param="model",
            type="invalid_request_error",
        ),
    )


def _wrong_endpoint(model: str, protocol: str) -> str:
    """The service's words for a model asked on a path its entry does not list."""
    if protocol == "chat":
        return f'model "{model}" is not accessible via the /chat/completions endpoint'
    if protocol == "responses":
        return f"model {model} is not supported via Responses API."
    return "no model endpoints available given user constraints"
