"""More request shapes the Copilot API is reported to refuse, or assumed to (docs/EMULATOR.md
says which): the newer agent fields, each rule named by a check of ``CHECKS``.

Judged by the body's JSON structure only, as :mod:`._rules`; the gateway has its own lists,
and this module never imports them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ._answers import Answer, copilot_error, copilot_text
from ._rules import Refusal, Strict

__all__ = ["HOSTED_TOOL_TYPES", "REASONING_PREFIXES", "more_refusals"]

# Responses tools OpenAI runs on its side; Copilot refused Codex's image_generation with
# this answer (caozhiyuan/copilot-api #206); the same answer for the others is assumed.
HOSTED_TOOL_TYPES = frozenset(
    {
        "image_generation",
        "local_shell",
        "file_search",
        "mcp",
        "code_interpreter",
        "computer_use_preview",
    }
)
# The model families reported to refuse temperature, top_p and Chat's max_tokens.
REASONING_PREFIXES = ("gpt-5", "o1", "o3", "o4")
_TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"
_TTL_BETA = "extended-cache-ttl-2025-04-11"
_EFFORTS = frozenset({"low", "medium", "high"})


def _extra(path: str) -> Answer:
    return copilot_text(
        400,
        json.dumps({"message": f"{path}: Extra inputs are not permitted"}, separators=(",", ":")),
    )


def _dicts(value: object) -> list[tuple[int, Mapping[str, Any]]]:
    if not isinstance(value, list):
        return []
    return [(index, item) for index, item in enumerate(value) if isinstance(item, Mapping)]


def _marked(payload: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, cache_control) of every cache_control of a Messages body."""
    if isinstance(payload.get("cache_control"), Mapping):
        yield "cache_control", payload["cache_control"]
    for key in ("system", "tools"):
        for index, block in _dicts(payload.get(key)):
            if isinstance(block.get("cache_control"), Mapping):
                yield f"{key}.{index}.cache_control", block["cache_control"]
    for at, message in _dicts(payload.get("messages")):
        for index, block in _dicts(message.get("content")):
            if isinstance(block.get("cache_control"), Mapping):
                yield f"messages.{at}.content.{index}.cache_control", block["cache_control"]


def _messages(payload: Mapping[str, Any], served: frozenset[str], strict: Strict) -> Refusal | None:
    if strict("mcp_servers") and "mcp_servers" in payload:
        return Refusal("mcp_servers", "mcp_servers", _extra("mcp_servers"))
    if strict("tool_search") and _TOOL_SEARCH_BETA not in served:
        for index, tool in _dicts(payload.get("tools")):
            kind = tool.get("type")
            if isinstance(kind, str) and kind.startswith("tool_search_tool_"):
                return Refusal("tool_search", f"{kind} tool", _extra(f"tools.{index}"))
            if "defer_loading" in tool:
                return Refusal(
                    "tool_search", "defer_loading", _extra(f"tools.{index}.defer_loading")
                )
        for at, message in _dicts(payload.get("messages")):
            for index, block in _dicts(message.get("content")):
                inner = _dicts(block.get("content")) if block.get("type") == "tool_result" else []
                for where, found in [(f"messages.{at}.content.{index}", block)] + [
                    (f"messages.{at}.content.{index}.content.{i}", b) for i, b in inner
                ]:
                    if found.get("type") == "tool_reference":
                        return Refusal("tool_search", "tool_reference block", _extra(where))
    if strict("cache_control"):
        for path, control in _marked(payload):
            kind = control.get("type", "ephemeral")
            if "scope" in control:
                # caozhiyuan/copilot-api #143: "system.1.cache_control.ephemeral.scope: ...".
                return Refusal("cache_control", f"{path}.scope", _extra(f"{path}.{kind}.scope"))
            if "ttl" in control and _TTL_BETA not in served:
                return Refusal("cache_control", f"{path}.ttl", _extra(f"{path}.{kind}.ttl"))
    config = payload.get("output_config")
    effort = config.get("effort") if isinstance(config, Mapping) else None
    if strict("effort") and isinstance(effort, str) and effort not in _EFFORTS:
        text = "output_config.effort: Input should be 'low', 'medium' or 'high'"
        answer = copilot_text(400, json.dumps({"message": text}, separators=(",", ":")))
        return Refusal("effort", f"effort {effort}", answer)
    return None


def _unsupported(name: str, hint: str = "") -> Answer:
    message = f"Unsupported parameter: '{name}' is not supported with this model.{hint}"
    return copilot_error(400, message, "invalid_request_body")


def _openai(
    payload: Mapping[str, Any], protocol: str, model: str, strict: Strict
) -> Refusal | None:
    if protocol == "responses":
        for _index, tool in _dicts(payload.get("tools")):
            kind = tool.get("type")
            if strict("hosted_tools") and isinstance(kind, str) and kind in HOSTED_TOOL_TYPES:
                answer = copilot_error(
                    400,
                    f"The requested tool {kind} is not supported.",
                    "unsupported_value",
                    param="tools",
                    type="invalid_request_error",
                )
                return Refusal("hosted_tools", f"{kind} tool", answer)
        reasoning = payload.get("reasoning")
        if (
            strict("reasoning_context")
            and isinstance(reasoning, Mapping)
            and "context" in reasoning
        ):
            answer = copilot_error(
                400, "Unknown parameter: 'reasoning.context'.", "invalid_request_body"
            )
            return Refusal("reasoning_context", "reasoning.context", answer)
    if strict("sampling") and model.startswith(REASONING_PREFIXES):
        for name in ("temperature", "top_p"):
            value = payload.get(name)
            if name in payload and (value != 1 or isinstance(value, bool)):
                return Refusal("sampling", f"{name} for {model}", _unsupported(name))
        if protocol == "chat" and "max_tokens" in payload:
            hint = " Use 'max_completion_tokens' instead."
            return Refusal("sampling", f"max_tokens for {model}", _unsupported("max_tokens", hint))
    return None


def more_refusals(
    payload: Mapping[str, Any], protocol: str, model: str, served: frozenset[str], strict: Strict
) -> Refusal | None:
    """The first of this module's rules a request breaks (``served``: the served betas the
    request names)."""
    if protocol == "messages":
        return _messages(payload, served, strict)
    return _openai(payload, protocol, model, strict)
