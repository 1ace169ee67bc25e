"""Request shapes the Copilot API is reported to refuse, each rule as its own list.

Every rule here is named by a check of ``CHECKS`` (so ``Scenario(lenient=...)`` can switch
it off), judged by the body's JSON structure only, and answered with the status, body and
content type the captures show; docs/EMULATOR.md cites the capture or report behind each
and says which wordings are assumed. The gateway has its own lists; this module never
imports them (a test passing because both sides share one list would prove nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._answers import Answer, copilot_error, copilot_text
from ._betas import FIELD_BETAS, served_betas

__all__ = [
    "BILLING_HEADER_PREFIX",
    "OUTPUT_CAP_FIELDS",
    "REFUSED_RESPONSES_ITEMS",
    "REFUSED_RESPONSES_TOOLS",
    "SERVER_TOOL_PREFIXES",
    "Refusal",
    "messages_refusal",
    "output_cap_refusal",
    "responses_refusal",
]

# A ``system`` text block (or string) starting so: Claude Code's attribution block.
BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"

# Messages tool ``type`` prefixes of Anthropic's server-side tools, which Copilot does not run.
SERVER_TOOL_PREFIXES = ("web_search_", "web_fetch_", "code_execution_")

# Responses tool types Copilot refuses, with the check that names each.
REFUSED_RESPONSES_TOOLS: Mapping[str, str] = {
    "custom": "custom_tools",
    "namespace": "namespace_tools",
    "web_search": "web_search_tools",
}

# Responses input item types Copilot refuses, with the check that names each.
REFUSED_RESPONSES_ITEMS: Mapping[str, str] = {"additional_tools": "additional_tools"}

# Output-token fields per protocol, checked against the model's ``max_output_tokens``.
OUTPUT_CAP_FIELDS: Mapping[str, tuple[str, ...]] = {
    "chat": ("max_tokens", "max_completion_tokens"),
    "responses": ("max_output_tokens",),
    "messages": ("max_tokens",),
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """One rule a request broke: the check's name, what it was about, and the answer."""

    check: str
    detail: str
    answer: Answer


Strict = Callable[[str], bool]


def _message(text: str) -> Answer:
    """Copilot's Messages validation answer: ``{"message": ...}`` as compact JSON text, plain
    text like its other refusals (microsoft/vscode #305670, caozhiyuan/copilot-api #145)."""
    return copilot_text(400, json.dumps({"message": text}, separators=(",", ":")))


def _extra_input(path: str) -> Answer:
    """The answer for a field the service does not take (pydantic's words)."""
    return _message(f"{path}: Extra inputs are not permitted")


def _blocks(value: object) -> list[Mapping[str, Any]]:
    return [part for part in value if isinstance(part, Mapping)] if isinstance(value, list) else []


def _billing_header(payload: Mapping[str, Any]) -> bool:
    system = payload.get("system")
    if isinstance(system, str):
        return system.startswith(BILLING_HEADER_PREFIX)
    return any(
        block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and block["text"].startswith(BILLING_HEADER_PREFIX)
        for block in _blocks(system)
    )


def _unbetaed_fields(payload: Mapping[str, Any], served: frozenset[str]) -> Iterator[str]:
    """Paths (as the service names them) of fields sent without a served governing beta."""

    def allowed(name: str) -> bool:
        return bool(FIELD_BETAS[name] & served)

    thinking = payload.get("thinking")
    if isinstance(thinking, Mapping) and "display" in thinking and not allowed("thinking.display"):
        yield f"thinking.{thinking.get('type', 'enabled')}.display"
    if "context_management" in payload and not allowed("context_management"):
        yield "context_management"


def _system_message(payload: Mapping[str, Any]) -> int | None:
    for index, message in enumerate(_blocks(payload.get("messages"))):
        if message.get("role") == "system":
            return index
    return None


def messages_refusal(
    payload: Mapping[str, Any], headers: Mapping[str, str], strict: Strict
) -> Refusal | None:
    """The first body rule a Messages request breaks (betas and a string ``system`` are the
    server's older checks, made before these)."""
    if strict("billing_header") and _billing_header(payload):
        return Refusal(
            "billing_header",
            "system starts with x-anthropic-billing-header:",
            copilot_error(
                400,
                "x-anthropic-billing-header is a reserved keyword and may not be used in "
                "the system prompt.",
                "invalid_request_body",
            ),
        )
    served = served_betas(headers.get("anthropic-beta", ""))
    if strict("beta_fields"):
        for path in _unbetaed_fields(payload, served):
            return Refusal("beta_fields", f"{path} without its beta", _extra_input(path))
        index = _system_message(payload)
        if index is not None and not FIELD_BETAS["system_message"] & served:
            text = f"messages.{index}.role: Input should be 'user' or 'assistant'"
            return Refusal("beta_fields", f"messages.{index} has role system", _message(text))
    if strict("server_tools"):
        for tool in _blocks(payload.get("tools")):
            kind = tool.get("type")
            if isinstance(kind, str) and kind.startswith(SERVER_TOOL_PREFIXES):
                what = kind.rsplit("_", 1)[0].replace("_", " ")
                return Refusal(
                    "server_tools",
                    f"server tool {kind}",
                    # 100 bytes with the newline, as caozhiyuan/copilot-api #189 captured.
                    copilot_error(
                        400, f"The use of the {what} tool is not supported.", "unsupported_value"
                    ),
                )
    return None


def _tools_within(tools: object) -> Iterator[Mapping[str, Any]]:
    """Every tool of a list, with the members of namespace tools."""
    for tool in _blocks(tools):
        yield tool
        yield from _tools_within(tool.get("tools"))


def _invalid_value(kind: str, param: str) -> Answer:
    return copilot_error(
        400,
        f"Invalid value: '{kind}'",
        "unknown_parameter",
        param=param,
        type="invalid_request_error",
    )


def responses_refusal(payload: Mapping[str, Any], strict: Strict) -> Refusal | None:
    """The first tool rule a Responses request breaks."""
    items = _blocks(payload.get("input"))
    nested = [tool for item in items for tool in _tools_within(item.get("tools"))]
    for tool in (*_tools_within(payload.get("tools")), *nested):
        kind = tool.get("type")
        check = REFUSED_RESPONSES_TOOLS.get(kind) if isinstance(kind, str) else None
        if check is None or not strict(check):
            continue
        if kind == "web_search":
            # caozhiyuan/copilot-api #82: Codex's web_search tool on /responses.
            answer = copilot_error(
                400,
                "The use of the web search tool is not supported.",
                "unsupported_value",
                param="tools",
                type="invalid_request_error",
            )
        else:
            answer = _invalid_value(str(kind), "tools")
        return Refusal(check, f"{kind} tool", answer)
    for item in items:
        kind = item.get("type")
        check = REFUSED_RESPONSES_ITEMS.get(kind) if isinstance(kind, str) else None
        if check is not None and strict(check):
            return Refusal(check, f"{kind} input item", _invalid_value(str(kind), "input"))
    return None


def _number(limit: object) -> float | None:
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0:
        return None  # no usable limit listed (absent, 0, not a number): nothing to check
    return float(limit)


def output_cap_refusal(
    payload: Mapping[str, Any], protocol: str, model: str, limit: object
) -> Refusal | None:
    """An output-token field above the model's listed ``max_output_tokens``."""
    cap = _number(limit)
    if cap is None:
        return None
    for name in OUTPUT_CAP_FIELDS[protocol]:
        value = payload.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= cap:
            continue
        detail = f"{name} {value:g} > {cap:g} ({model})"
        if protocol == "messages":
            # Anthropic's words, passed through Copilot's Messages validation envelope.
            text = (
                f"{name}: {value:g} > {cap:g}, which is the maximum allowed number of output "
                f"tokens for {model}"
            )
            return Refusal("output_limit", detail, _message(text))
        return Refusal(
            "output_limit",
            detail,
            copilot_error(
                400,
                f"{name} is too large: {value:g}. This model supports at most {cap:g} "
                f"completion tokens, whereas you provided {value:g}.",
                "invalid_value",
                param=name,
                type="invalid_request_error",
            ),
        )
    return None
