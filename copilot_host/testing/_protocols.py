"""The three model protocols the Copilot API speaks: what a request asks, what comes back.

Each protocol is read by its JSON structure only (never by a substring of the body): where
its input lives, whether it carries an image, whether the last input item is the person's
turn or a tool result, which tools it offers. Answers — whole or as a Server-Sent Events
stream — follow the shapes the official ``openai`` and ``anthropic`` SDKs parse.

The reply text is ``echo: <the last user text>``; a stream cuts it into ``stream_events``
text deltas (padded with dots when shorter than that), and the whole answer carries the same
text. When the request offers tools and the last input item is the person's, the answer is
a call of the first tool with ``{}`` as its arguments; after a tool result it is text again.
A scripted scenario (``Scenario(replies=Replies(tool_script=(ToolCall(...), ...)))``)
answers instead with its ``N``-th call while the request carries ``N`` tool results (``N``
counted from 0), when the request offers a tool of that name, and with text once every
scripted call has its result.

Written apart from the library's own reading of bodies (``copilot_host._sessions._inspect``) and its
constants, on purpose: the emulator models the service, and a check sharing the library's
code would agree with the library's mistakes instead of catching them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["PROTOCOL_PATHS", "Exchange", "ToolCall", "has_image", "read_request", "reply"]

# Endpoint name -> the path the inventory's ``supported_endpoints`` lists for it.
PROTOCOL_PATHS = {
    "chat": "/chat/completions",
    "responses": "/responses",
    "messages": "/v1/messages",
}


@dataclass(frozen=True)
class ToolCall:
    """A tool call the emulated model makes: the tool's ``name`` and its ``arguments`` (a
    JSON object), sent as each protocol sends a call (see ``Replies.tool_script``)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a tool call names its tool")
        if not isinstance(self.arguments, Mapping):
            raise TypeError("a tool call's arguments are a mapping (a JSON object)")
        try:
            text = json.dumps(dict(self.arguments), separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a tool call's arguments must be JSON: {exc}") from None
        # Frozen from here: the arguments as sent, and a copy no caller can change.
        object.__setattr__(self, "arguments", MappingProxyType(json.loads(text)))

    @property
    def arguments_json(self) -> str:
        """The arguments as the wire carries them (Chat and Responses send a JSON string)."""
        return json.dumps(dict(self.arguments), separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Exchange:
    """One model request as the emulator understood it."""

    protocol: str  # "chat", "responses" or "messages"
    model: str
    stream: bool
    prompt: str  # the last user text, for the echo
    tool: ToolCall | None  # the call to make, when the answer is a tool call
    serial: int
    input_tokens: int = 1  # what the answer's usage reports as the prompt's tokens


def _parts(content: object) -> list[Mapping[str, Any]]:
    if isinstance(content, list):
        return [part for part in content if isinstance(part, Mapping)]
    return []


def _text_of(content: object, *kinds: str) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", "")) for part in _parts(content) if part.get("type") in kinds
    )


def _items(payload: Mapping[str, Any], protocol: str) -> list[Mapping[str, Any]]:
    key = "input" if protocol == "responses" else "messages"
    value = payload.get(key)
    if protocol == "responses" and isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def has_image(payload: Mapping[str, Any], protocol: str) -> bool:
    """Whether the input carries an image content part (the service's vision trigger).

    Chat: an ``image_url`` part in any message's content. Responses: an ``input_image`` item,
    or part in a message's content or in a ``function_call_output``'s output list. Anthropic: an
    ``image`` block in a message, or inside a ``tool_result`` block's content.
    """
    for item in _items(payload, protocol):
        if protocol == "chat":
            parts = _parts(item.get("content"))
            if any(part.get("type") == "image_url" for part in parts):
                return True
        elif protocol == "responses":
            # An input item may itself be an image part, as well as hold them.
            parts = [item, *_parts(item.get("content")), *_parts(item.get("output"))]
            if any(part.get("type") == "input_image" for part in parts):
                return True
        else:
            for block in _parts(item.get("content")):
                if block.get("type") == "image":
                    return True
                if block.get("type") == "tool_result" and any(
                    inner.get("type") == "image" for inner in _parts(block.get("content"))
                ):
                    return True
    return False


def _last_turn(items: Sequence[Mapping[str, Any]], protocol: str) -> str:
    """``"user"`` when the last input item is the person's, ``"tool"`` after a tool result,
    ``"assistant"`` otherwise (system and developer items are skipped)."""
    for item in reversed(items):
        role = item.get("role")
        kind = item.get("type")
        if role in ("system", "developer"):
            continue
        if protocol == "responses" and kind in _RESPONSES_RESULTS:
            return "tool"
        if protocol == "responses" and kind == "function_call":
            return "assistant"
        if role == "tool":
            return "tool"
        if protocol == "messages" and role == "user":
            blocks = _parts(item.get("content"))
            return "tool" if any(b.get("type") == "tool_result" for b in blocks) else "user"
        return "user" if role == "user" else "assistant"
    return "user"


_RESPONSES_RESULTS = ("function_call_output", "custom_tool_call_output")


def _offered(payload: Mapping[str, Any], protocol: str) -> list[str]:
    """The names of the tools the request offers, in its order."""
    tools = payload.get("tools")
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        if protocol == "chat":
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else None
        else:
            name = tool.get("name")
        if isinstance(name, str) and name:
            names.append(name)
    return names


def _results(items: Sequence[Mapping[str, Any]], protocol: str) -> int:
    """How many tool results the input carries."""
    if protocol == "chat":
        return sum(item.get("role") == "tool" for item in items)
    if protocol == "responses":
        return sum(item.get("type") in _RESPONSES_RESULTS for item in items)
    return sum(
        block.get("type") == "tool_result"
        for item in items
        if item.get("role") == "user"
        for block in _parts(item.get("content"))
    )


def _call(
    payload: Mapping[str, Any],
    protocol: str,
    items: Sequence[Mapping[str, Any]],
    script: Sequence[ToolCall],
    default: bool,
) -> ToolCall | None:
    turn = _last_turn(items, protocol)
    offered = _offered(payload, protocol)
    if script:
        done = _results(items, protocol)
        if turn in ("user", "tool") and done < len(script) and script[done].name in offered:
            return script[done]
        return None
    if default and turn == "user" and offered:
        return ToolCall(offered[0])
    return None


def read_request(
    payload: Mapping[str, Any],
    protocol: str,
    model: str,
    serial: int,
    script: Sequence[ToolCall] = (),
    *,
    default_calls: bool = True,
) -> Exchange:
    """What a request asks. ``script`` is the scenario's tool script; ``default_calls``
    whether an unscripted request that offers tools gets a call of its first tool."""
    items = _items(payload, protocol)
    kinds = {"chat": ("text",), "responses": ("input_text",), "messages": ("text",)}[protocol]
    prompt = ""
    for item in reversed(items):
        # The person's last words: an Anthropic tool result is a user turn without text.
        if item.get("role") == "user" and (prompt := _text_of(item.get("content"), *kinds)):
            break
    tool = _call(payload, protocol, items, script, default_calls)
    return Exchange(protocol, model, payload.get("stream") is True, prompt, tool, serial)


# -- answers ---------------------------------------------------------------------------------


def reply_text(exchange: Exchange, pieces: int) -> str:
    text = f"echo: {exchange.prompt}"
    return text + "." * max(0, pieces - len(text))


def _cut(text: str, pieces: int) -> list[str]:
    size, extra = divmod(len(text), pieces)
    cuts, at = [], 0
    for index in range(pieces):
        step = size + (1 if index < extra else 0)
        cuts.append(text[at : at + step])
        at += step
    return cuts


def _sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def reply(
    exchange: Exchange, pieces: int, created: int, cost_nano_aiu: int | None = None
) -> tuple[Any, tuple[bytes, ...]]:
    """The whole answer's JSON value, and the SSE events a streamed answer sends instead.

    ``cost_nano_aiu`` is the request's cost as the service reports it since usage-based
    billing: ``copilot_usage.total_nano_aiu`` at the top of a Chat Completions answer (and
    its last chunk), of a Responses answer (and the ``response`` of its completed event),
    and in an Anthropic answer's ``usage`` (and its ``message_delta``'s).
    """
    text = reply_text(exchange, pieces)
    deltas = _cut(text, pieces)
    build = {"chat": _chat, "responses": _responses, "messages": _messages}[exchange.protocol]
    cost = None if cost_nano_aiu is None else {"total_nano_aiu": cost_nano_aiu}
    return build(exchange, text, deltas, created, cost)


_FILTERS = {
    name: {"filtered": False, "severity": "safe"}
    for name in ("hate", "self_harm", "sexual", "violence")
}
_PROMPT_FILTER = {
    "choices": [],
    "created": 0,
    "id": "",
    "model": "",
    "object": "",
    "prompt_filter_results": [{"content_filter_results": _FILTERS, "prompt_index": 0}],
}


def _argument_deltas(call: ToolCall) -> list[str]:
    """A call's JSON arguments cut into the deltas a stream carries (two, or one)."""
    text = call.arguments_json
    return _cut(text, 2) if len(text) > 1 else [text]


def _usage_chat(prompt: int, output: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
    }


def _chat(
    ex: Exchange, text: str, deltas: list[str], created: int, cost: Mapping[str, int] | None
) -> tuple[Any, tuple[bytes, ...]]:
    ident = f"chatcmpl-emu-{ex.serial}"
    head = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": ex.model}
    call_id = f"call_emu_{ex.serial}"
    if ex.tool is not None:
        function = {"name": ex.tool.name, "arguments": ex.tool.arguments_json}
        call = {"id": call_id, "type": "function", "function": function}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
        first: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": ex.tool.name, "arguments": ""},
                }
            ],
        }
        bodies: list[dict[str, Any]] = [
            {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}
            for a in _argument_deltas(ex.tool)
        ]
    else:
        message = {"role": "assistant", "content": text}
        finish = "stop"
        first = {"role": "assistant", "content": ""}
        bodies = [{"content": piece} for piece in deltas]
    whole = {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": ex.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage_chat(ex.input_tokens, len(deltas)),
    }
    billed: dict[str, Any] = {} if cost is None else {"copilot_usage": dict(cost)}
    whole.update(billed)

    def chunk(delta: Mapping[str, Any], reason: str | None, **more: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": reason}
        return _sse({**head, "choices": [choice], **more})

    # Copilot opens a chat stream with a chunk that has no choices and no id, only the
    # prompt's content-filter results (Azure's); clients must skip it.
    events = [_sse(_PROMPT_FILTER), chunk(first, None)]
    events += [chunk(body, None) for body in bodies]
    events.append(chunk({}, finish, usage=_usage_chat(ex.input_tokens, len(deltas)), **billed))
    events.append(b"data: [DONE]\n\n")
    return whole, tuple(events)


def _responses(
    ex: Exchange, text: str, deltas: list[str], created: int, cost: Mapping[str, int] | None
) -> tuple[Any, tuple[bytes, ...]]:
    ident = f"resp_emu_{ex.serial}"
    usage = {
        "input_tokens": ex.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": len(deltas),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": ex.input_tokens + len(deltas),
    }

    def envelope(status: str, output: list[Any], with_usage: bool) -> dict[str, Any]:
        billed = {"copilot_usage": dict(cost)} if with_usage and cost is not None else {}
        return {
            **billed,
            "id": ident,
            "object": "response",
            "created_at": created,
            "status": status,
            "model": ex.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage if with_usage else None,
        }

    events: list[bytes] = []
    sequence = 0

    def emit(kind: str, **data: Any) -> None:
        nonlocal sequence
        events.append(_sse({"type": kind, "sequence_number": sequence, **data}, kind))
        sequence += 1

    emit("response.created", response=envelope("in_progress", [], False))
    emit("response.in_progress", response=envelope("in_progress", [], False))
    if ex.tool is not None:
        item_id = f"fc_emu_{ex.serial}"
        item: dict[str, Any] = {
            "type": "function_call",
            "id": item_id,
            "call_id": f"call_emu_{ex.serial}",
            "name": ex.tool.name,
            "arguments": ex.tool.arguments_json,
            "status": "completed",
        }
        emit(
            "response.output_item.added",
            output_index=0,
            item={**item, "arguments": "", "status": "in_progress"},
        )
        for piece in _argument_deltas(ex.tool):
            emit(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=0,
                delta=piece,
            )
        emit(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=0,
            arguments=ex.tool.arguments_json,
        )
    else:
        item_id = f"msg_emu_{ex.serial}"
        part: dict[str, Any] = {"type": "output_text", "text": text, "annotations": []}
        item = {
            "type": "message",
            "id": item_id,
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
        emit(
            "response.output_item.added",
            output_index=0,
            item={**item, "status": "in_progress", "content": []},
        )
        place = {"item_id": item_id, "output_index": 0, "content_index": 0}
        emit("response.content_part.added", **place, part={**part, "text": ""})
        for piece in deltas:
            emit("response.output_text.delta", **place, delta=piece, logprobs=[])
        emit("response.output_text.done", **place, text=text, logprobs=[])
        emit("response.content_part.done", **place, part=part)
    emit("response.output_item.done", output_index=0, item=item)
    whole = envelope("completed", [item], True)
    emit("response.completed", response=whole)
    return whole, tuple(events)


def _messages(
    ex: Exchange, text: str, deltas: list[str], created: int, cost: Mapping[str, int] | None
) -> tuple[Any, tuple[bytes, ...]]:
    ident = f"msg_emu_{ex.serial}"
    head = {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": ex.model,
        "stop_sequence": None,
    }
    if ex.tool is not None:
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_emu_{ex.serial}",
            "name": ex.tool.name,
            "input": dict(ex.tool.arguments),
        }
        # The block opens with empty input; the arguments follow as partial JSON.
        start: dict[str, Any] = {**block, "input": {}}
        pieces = [
            {"type": "input_json_delta", "partial_json": a} for a in _argument_deltas(ex.tool)
        ]
        stop = "tool_use"
    else:
        block = {"type": "text", "text": text}
        start = {"type": "text", "text": ""}
        pieces = [{"type": "text_delta", "text": piece} for piece in deltas]
        stop = "end_turn"
    billed: dict[str, Any] = {} if cost is None else {"copilot_usage": dict(cost)}
    whole = {
        **head,
        "content": [block],
        "stop_reason": stop,
        "usage": {"input_tokens": ex.input_tokens, "output_tokens": len(deltas), **billed},
    }
    events = [
        _sse(
            {
                "type": "message_start",
                "message": {
                    **head,
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": ex.input_tokens, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        _sse(
            {"type": "content_block_start", "index": 0, "content_block": start},
            "content_block_start",
        ),
    ]
    events += [
        _sse({"type": "content_block_delta", "index": 0, "delta": piece}, "content_block_delta")
        for piece in pieces
    ]
    events.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": len(deltas), **billed},
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return whole, tuple(events)
