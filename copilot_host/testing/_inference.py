"""Model requests: the three protocols' answers, the rules they are held to, and what
each costs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._answers import (
    Answer,
    copilot_error,
    copilot_text,
    json_answer,
    refused,
)
from ._betas import unserved_betas
from ._catalog import InventoryState
from ._costs import estimate_tokens, price_cost
from ._protocols import PROTOCOL_PATHS, has_image, read_request, reply
from ._record import RecordedRequest
from ._rules import Refusal, messages_refusal, output_cap_refusal, responses_refusal
from ._scenario import Scenario
from ._state import editor_version

__all__ = ["Inference"]


def _enforced(refusal: Refusal) -> Answer:
    return refused(refusal.check, refusal.detail, refusal.answer)


class Inference(InventoryState):
    """Model requests, counted by a serial that names each answer."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self._serial = 0

    def _count_tokens(self, request: RecordedRequest) -> Answer:
        """Copilot does not serve Anthropic's token count (its router answers 404); lenient,
        an estimate in the API's shape, for tests of a client that needs one."""
        if self.scenario.strict("count_tokens"):
            return refused("count_tokens", request.path, copilot_text(404, "404 page not found"))
        gate = self._copilot_gate(request)
        if gate is not None:
            return gate
        return json_answer(200, {"input_tokens": max(1, len(request.body) // 4)})

    def _model_request(self, request: RecordedRequest, protocol: str) -> Answer:
        """A model request's answer, noting the model it named and that model's limits."""
        answer = self._inference(request, protocol)
        try:
            model = json.loads(request.body or b"{}").get("model")
        except (ValueError, RecursionError, AttributeError):
            model = None
        if not isinstance(model, str):
            return answer
        limits = self._limits.get(model, {})
        return dataclasses.replace(
            answer, notes=(("model", model), ("limits", MappingProxyType(limits)), *answer.notes)
        )

    def _inference(self, request: RecordedRequest, protocol: str) -> Answer:
        s = self.scenario
        refusal = self._copilot_gate(request)
        if refusal is not None:
            return refusal
        try:
            payload = json.loads(request.body or b"{}")
        except (ValueError, RecursionError):  # deeply nested JSON is no request either
            payload = None
        if not isinstance(payload, dict):
            return copilot_error(
                400, "the request body is not a JSON object", "invalid_request_body"
            )
        model = payload.get("model")
        picked = self._auto_only(model, protocol) if s.auto_only_plan else None
        if isinstance(picked, Answer):
            return picked
        if picked is not None:
            model = picked
        paths = self._served.get(model) if isinstance(model, str) else None
        if not isinstance(model, str) or paths is None:
            return refused("model", f"{model!r} not served", _model_not_supported())
        unserved = s.unserved_models.get(request.headers.get("copilot-integration-id", "").strip())
        if unserved is not None and (model in unserved or "*" in unserved):
            # An organisation whose policy lists a model to this client but does not serve
            # it to it: the same answer as for a model the account does not have.
            return refused("model", f"{model} not served to this client", _model_not_supported())
        floor = s.min_editor_version.get(model)
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
        if protocol in s.quota_exceeded_on or self._exhausted():
            return self._quota_exceeded()
        limited = self._rate_limited()
        if limited is not None:
            return limited
        refusal = self._body_gate(request, payload, protocol, model)
        if refusal is not None:
            return refusal
        input_tokens, spent = self._cost(request, model)
        with self.lock:
            self._serial += 1
            serial = self._serial
        # Credits are used by what each answer costs; request quotas by one a request.
        self._charge(spent)
        exchange = read_request(
            payload, protocol, model, serial, s.tool_script, default_calls=s.tool_calls
        )
        exchange = dataclasses.replace(exchange, input_tokens=input_tokens)
        cost = round(spent * 1e9)
        whole, events = reply(exchange, s.stream_events, int(self.now()), cost)
        quota = self._quota_headers()
        if exchange.stream:
            headers = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))
            answer = Answer(200, (*headers, *quota), events=events)
        else:
            answer = json_answer(200, whole, *quota)
        if picked is not None:
            # The record names the model Auto picked, as the answer does.
            limits = MappingProxyType(self._limits.get(picked, {}))
            answer = dataclasses.replace(answer, notes=(("model", picked), ("limits", limits)))
        return answer

    def _cost(self, request: RecordedRequest, model: str) -> tuple[int, float]:
        """(the prompt's tokens as the answer reports them, the answer's cost in credits)."""
        s = self.scenario
        if s.cost_model != "prices":
            return 1, s.request_cost
        # Tokens x the inventory's prices; a model listing none costs the flat amount.
        tokens = estimate_tokens(request.body)
        priced = price_cost(self._billing.get(model), tokens, s.stream_events, self.now())
        return tokens, s.request_cost if priced is None else priced

    def _auto_only(self, model: object, protocol: str) -> Answer | str | None:
        """On an Auto-only plan: the refusal of a named model, or the model Auto serves a
        Chat request without one (the chat default when it serves Chat Completions, else the
        first model that does; diegosouzapw/OmniRoute #12000: 200, naming it)."""
        if model is not None or protocol != "chat":
            detail = "a named model on an Auto-only plan" if model else "no model"
            return refused("auto_only", detail, _model_not_supported())
        chat = [m for m, paths in self._served.items() if "/chat/completions" in paths]
        for item in self.scenario.models:
            if item.get("is_chat_default") is True and item.get("id") in chat:
                return str(item["id"])
        return chat[0] if chat else None

    def _body_gate(
        self, request: RecordedRequest, payload: Mapping[str, Any], protocol: str, model: str
    ) -> Answer | None:
        """What the API layer refuses of a body before answering (docs/EMULATOR.md has the
        evidence for each rule): on Messages, betas it does not serve, a string ``system``
        and the rules of ``_rules``; on Responses, the tool shapes it does not take; on every
        protocol, an output cap above the model's limit."""
        s = self.scenario
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
            limit = self._limits.get(model, {}).get("max_output_tokens")
            rule = output_cap_refusal(payload, protocol, model, limit)
        return None if rule is None else _enforced(rule)


def _model_not_supported() -> Answer:
    """The service's 400 for a model it does not serve this request (138 bytes)."""
    return copilot_error(
        400,
        "The requested model is not supported.",
        "model_not_supported",
        param="model",
        type="invalid_request_error",
    )


def _wrong_endpoint(model: str, protocol: str) -> str:
    """The service's words for a model asked on a path its entry does not list."""
    if protocol == "chat":
        return f'model "{model}" is not accessible via the /chat/completions endpoint'
    if protocol == "responses":
        return f"model {model} is not supported via Responses API."
    return "no model endpoints available given user constraints"
