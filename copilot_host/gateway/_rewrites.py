"""What the gateway changes in a request so that Copilot gets only shapes its own clients send.

Coding agents send the Copilot API shapes that VS Code and the Copilot CLI never send, and
that the service is reported to refuse (docs/WIRE.md, "Agents through the gateway", has the
evidence for each). Each change has one name in :data:`REWRITES`; the access line lists the
names applied to a request (``rewrote=billing-header,max_tokens``), never a body value, and
each is named once at DEBUG. A request none applies to goes upstream as the bytes the
client sent (the caller splices the model in); an edited one is encoded again.

Every rewrite can be turned off: ``create_app(rewrites=...)`` takes the names to apply, and
``COPILOT_HOST_REWRITES=-name,-name`` (read by ``serve`` and ``run``) removes names from
the full set (:func:`rewrites_from_environment`).

Messages: a ``system`` text block starting ``x-anthropic-billing-header:`` is removed;
fields whose beta is not forwarded are removed (:data:`._messages.FIELD_BETAS`); a
``role: "system"`` message inside ``messages`` is folded into a user turn; ``max_tokens``
is capped at the model's output limit (and a thinking budget kept below it); server tools
are removed, with a ``tool_choice`` naming one. A request that offered only server tools is
answered by the gateway itself (:func:`server_tools_answer`). Chat Completions: the output
caps. Responses: the output cap and the tool shapes of :mod:`._responses_tools`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import copilot_host as ch
from copilot_host._internal import clean

from ._messages import FIELD_BETAS
from ._responses_tools import ToolMap, rewrite_responses_tools

__all__ = [
    "REWRITES",
    "REWRITES_VARIABLE",
    "Rewritten",
    "check_rewrites",
    "rewrite_request",
    "rewrites_from_environment",
    "server_tools_answer",
]

_log = logging.getLogger("copilot_host.gateway")

REWRITES_VARIABLE = "COPILOT_HOST_REWRITES"

# Each rewrite the gateway makes, by the name the access line and COPILOT_HOST_REWRITES use.
REWRITES: Mapping[str, str] = MappingProxyType(
    {
        "billing-header": "Messages: a system text block starting x-anthropic-billing-header: "
        "is removed (a string system starting so loses that first line)",
        "beta-fields": "Messages: a body field whose beta is not forwarded is removed "
        "(thinking.display, context_management)",
        "system-message": 'Messages: a role "system" message inside messages is folded into '
        "the neighbouring user turn as a text block",
        "max_tokens": "Messages, Chat: max_tokens above the model's output limit is set to it",
        "max_completion_tokens": "Chat: max_completion_tokens above the output limit is set to it",
        "max_output_tokens": "Responses: max_output_tokens above the output limit is set to it",
        "thinking-budget": "Messages: thinking.budget_tokens not below a capped max_tokens is "
        "lowered to cap - 1 (at least 1024), or thinking is dropped",
        "server-tools": "Messages: web_search_*, web_fetch_*, code_execution_* tools are "
        "removed; a request that offered nothing else is answered by the gateway",
        "tool_choice": "Messages, Responses: a tool_choice naming a removed tool is dropped, "
        "and so is tool_choice when no tools are left",
        "namespaces": "Responses: namespace tools are flattened into their member tools, and "
        "calls are mapped back",
        "additional-tools": "Responses: an additional_tools input item's tools join tools",
        "web-search": "Responses: web_search tools are removed",
        "custom-tools": "Responses: a custom tool goes as a function tool with one string "
        "argument, and its calls come back as custom_tool_call",
        "count-tokens": "POST /v1/messages/count_tokens is answered by the gateway with a local "
        "estimate (off: 404 as before)",
    }
)
_ALL = frozenset(REWRITES)

_BILLING_PREFIX = "x-anthropic-billing-header:"
_SERVER_TOOL_PREFIXES = ("web_search_", "web_fetch_", "code_execution_")
# The least thinking budget the Messages API takes.
_MIN_THINKING = 1024

SERVER_TOOLS_TEXT = (
    "Web search and web fetch are not available through GitHub Copilot: the copilot-host "
    "gateway answered this request itself, without asking a model."
)


def check_rewrites(names: Iterable[str] | None) -> frozenset[str]:
    """The rewrites to apply: every one for None, else ``names`` (each from REWRITES; a
    ``ValueError`` names one that is not)."""
    if names is None:
        return _ALL
    if isinstance(names, str):
        raise TypeError("rewrites is a collection of names, not one string")
    chosen = frozenset(names)
    unknown = sorted(chosen - _ALL)
    if unknown:
        raise ValueError(
            f"unknown rewrite {clean(unknown[0], limit=60)!r}; the names are "
            + ", ".join(sorted(_ALL))
        )
    return chosen


def rewrites_from_environment(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The rewrites ``COPILOT_HOST_REWRITES`` leaves on: ``-name,-name`` turns those off;
    unset or empty, all are on. A ``ValueError`` (one line) for any other spelling."""
    value = (os.environ if environ is None else environ).get(REWRITES_VARIABLE, "").strip()
    off: set[str] = set()
    for part in value.split(","):
        item = part.strip()
        if not item:
            continue
        if not item.startswith("-") or item[1:] not in _ALL:
            raise ValueError(
                f"{REWRITES_VARIABLE} lists rewrites to turn off as -name,-name (names: "
                f"{', '.join(sorted(_ALL))}), not {clean(item, limit=60)!r}"
            )
        off.add(item[1:])
    return _ALL - off


@dataclass(slots=True)
class Rewritten:
    """What the rewrites made of one request: the names applied, the edited document (None
    when nothing changed), whether the gateway answers it itself, and the tool map for
    mapping a Responses answer back."""

    names: list[str] = field(default_factory=list)
    value: dict[str, Any] | None = None
    answer_locally: bool = False
    tools: ToolMap | None = None


def rewrite_request(
    protocol: ch.ApiProtocol,
    value: dict[str, Any],
    *,
    max_output: int | None,
    betas: frozenset[str],
    enabled: frozenset[str],
) -> Rewritten:
    """The rewrites of ``enabled`` that apply to ``value`` (never edited in place)."""
    result = Rewritten()
    if not enabled:
        return result
    if protocol is ch.ApiProtocol.ANTHROPIC_MESSAGES:
        _messages(value, result, max_output, betas, enabled)
    elif protocol is ch.ApiProtocol.OPENAI_RESPONSES:
        _cap(value, "max_output_tokens", max_output, result, enabled)
        rewrite_responses_tools(result.value or value, result, enabled)
    else:
        _cap(value, "max_tokens", max_output, result, enabled)
        _cap(result.value or value, "max_completion_tokens", max_output, result, enabled)
    if result.names and _log.isEnabledFor(logging.DEBUG):
        for name in result.names:
            _log.debug("rewrote %s: %s", name, REWRITES[name])
    return result


def _edit(value: dict[str, Any], result: Rewritten) -> dict[str, Any]:
    """The document to edit: a shallow copy of the client's, made once."""
    if result.value is None:
        result.value = dict(value)
    return result.value


def _cap(
    value: dict[str, Any],
    key: str,
    limit: int | None,
    result: Rewritten,
    enabled: frozenset[str],
) -> bool:
    asked = value.get(key)
    if (
        limit is None
        or key not in enabled
        or not isinstance(asked, int)
        or isinstance(asked, bool)
        or asked <= limit
    ):
        return False
    _edit(value, result)[key] = limit
    result.names.append(key)
    return True


def _messages(
    value: dict[str, Any],
    result: Rewritten,
    max_output: int | None,
    betas: frozenset[str],
    enabled: frozenset[str],
) -> None:
    if "billing-header" in enabled:
        _billing_header(value, result)
    if "beta-fields" in enabled:
        _beta_fields(value, result, betas)
    if "system-message" in enabled:
        _system_messages(result.value or value, result, betas)
    doc = result.value or value
    if _cap(doc, "max_tokens", max_output, result, enabled) and "thinking-budget" in enabled:
        _thinking_budget(_edit(doc, result), result)
    if "server-tools" in enabled:
        _server_tools(result.value or value, result, enabled)


def _billing_header(value: dict[str, Any], result: Rewritten) -> None:
    system = value.get("system")
    # What ``system`` keeps without the header: the rest of a string, or the other blocks.
    kept: str | list[Any]
    if isinstance(system, str):
        if not system.startswith(_BILLING_PREFIX):
            return
        kept = system.partition("\n")[2]
    elif isinstance(system, list) and system:
        kept = [block for block in system if not _is_billing(block)]
        if len(kept) == len(system):
            return
    else:
        return
    doc = _edit(value, result)
    if kept:
        doc["system"] = kept
    else:
        del doc["system"]
    result.names.append("billing-header")


def _is_billing(block: object) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and block["text"].startswith(_BILLING_PREFIX)
    )


def _beta_fields(value: dict[str, Any], result: Rewritten, betas: frozenset[str]) -> None:
    removed = False
    thinking = value.get("thinking")
    if (
        isinstance(thinking, dict)
        and "display" in thinking
        and not FIELD_BETAS["thinking.display"][0] & betas
    ):
        kept = {key: item for key, item in thinking.items() if key != "display"}
        _edit(value, result)["thinking"] = kept
        removed = True
    if "context_management" in value and not FIELD_BETAS["context_management"][0] & betas:
        del _edit(value, result)["context_management"]
        removed = True
    if removed:
        result.names.append("beta-fields")


def _text_blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [
            {"type": "text", "text": block["text"]}
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
    return []


def _as_blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _system_messages(value: dict[str, Any], result: Rewritten, betas: frozenset[str]) -> None:
    """Each ``role: "system"`` message joins the nearest user message before it as trailing
    text blocks (the nearest after it, as leading blocks, when none comes before)."""
    messages = value.get("messages")
    if FIELD_BETAS["system_message"][0] & betas:
        return  # a served beta that allows it (none is today)
    if not isinstance(messages, list) or not any(
        isinstance(message, dict) and message.get("role") == "system" for message in messages
    ):
        return
    out: list[Any] = []
    waiting: list[dict[str, Any]] = []  # system text with no user message before it yet
    for original in messages:
        message = original
        if isinstance(message, dict) and message.get("role") == "system":
            blocks = _text_blocks(message.get("content"))
            target = next(
                (
                    index
                    for index in range(len(out) - 1, -1, -1)
                    if isinstance(out[index], dict) and out[index].get("role") == "user"
                ),
                None,
            )
            if target is None:
                waiting.extend(blocks)
            else:
                joined = dict(out[target])
                joined["content"] = [*_as_blocks(joined.get("content")), *blocks]
                out[target] = joined
            continue
        if waiting and isinstance(message, dict) and message.get("role") == "user":
            message = dict(message)
            message["content"] = [*waiting, *_as_blocks(message.get("content"))]
            waiting = []
        out.append(message)
    if waiting:
        out.append({"role": "user", "content": waiting})
    _edit(value, result)["messages"] = out
    result.names.append("system-message")


def _thinking_budget(doc: dict[str, Any], result: Rewritten) -> None:
    thinking = doc.get("thinking")
    cap = doc.get("max_tokens")
    if not isinstance(thinking, dict) or not isinstance(cap, int):
        return
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < cap:
        return
    if cap - 1 >= _MIN_THINKING:
        doc["thinking"] = {**thinking, "budget_tokens": cap - 1}
    else:
        del doc["thinking"]
    result.names.append("thinking-budget")


def _server_tools(value: dict[str, Any], result: Rewritten, enabled: frozenset[str]) -> None:
    tools = value.get("tools")
    if not isinstance(tools, list):
        return
    kept = [
        tool
        for tool in tools
        if not (
            isinstance(tool, dict) and str(tool.get("type", "")).startswith(_SERVER_TOOL_PREFIXES)
        )
    ]
    if len(kept) == len(tools):
        return
    removed = {
        tool.get("name")
        for tool in tools
        if isinstance(tool, dict) and str(tool.get("type", "")).startswith(_SERVER_TOOL_PREFIXES)
    }
    doc = _edit(value, result)
    result.names.append("server-tools")
    if not kept:
        del doc["tools"]
        result.answer_locally = True
    else:
        doc["tools"] = kept
    choice = doc.get("tool_choice")
    if choice is not None and "tool_choice" in enabled:
        named = choice.get("name") if isinstance(choice, dict) else None
        if not kept or (named is not None and named in removed):
            del doc["tool_choice"]
            result.names.append("tool_choice")


# -- the gateway's own answer to a request that offered only server tools ------------------


def server_tools_answer(model: str, *, stream: bool, serial: str) -> bytes:
    """A Messages answer whose one text block says why (:data:`SERVER_TOOLS_TEXT`): the JSON
    document, or, for ``stream``, the event sequence the Messages API sends."""
    ident = f"msg_copilot_host_{serial}"
    head = {"id": ident, "type": "message", "role": "assistant", "model": model}
    usage = {"input_tokens": 0, "output_tokens": 0}
    if not stream:
        whole = {
            **head,
            "content": [{"type": "text", "text": SERVER_TOOLS_TEXT}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        return json.dumps(whole).encode()
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **head,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": SERVER_TOOLS_TEXT},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 0},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(
        f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode() for kind, data in events
    )
