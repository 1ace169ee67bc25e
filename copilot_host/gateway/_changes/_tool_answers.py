"""Tool calls mapped back to the tools the client offered (the answer side of ``._tools``).

Codex resolves a ``function_call`` by the pair of its ``namespace`` and ``name``, and runs a
freeform tool only from a ``custom_tool_call`` with its ``input`` string (openai/codex
``codex-rs/core/src/tools/router.rs``, commit 05d99c83f0ddd1852a1aac4d86216cd9c8f497dd,
``build_tool_call``), as OpenAI's API returns them (the ``openai`` SDK 3.57.0 types
``ResponseCustomToolCall`` and ``ResponseFunctionToolCall``, both with ``namespace``).

:class:`CustomAnswers`: a ``function_call`` for a custom tool becomes a ``custom_tool_call``
(``input`` from its one argument; the same ``id``, ``call_id`` and ``status``), in whole
answers, in ``response.output_item.added/done`` and ``response.completed``; its argument
delta/done events become ``response.custom_tool_call_input.delta/done``, each delta
carrying the part of ``input`` decoded since the last (:class:`InputDecoder`, incremental:
each piece is read once however long the input grows). :class:`NamespaceAnswers`: a call of
a flattened member gets the member's own ``name`` and its ``namespace`` again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["CustomAnswers", "InputDecoder", "NamespaceAnswers", "custom_input"]

_CALLS = frozenset({"function_call", "custom_tool_call"})
_ITEM_EVENTS = frozenset({"response.output_item.added", "response.output_item.done"})
_ARGUMENT_EVENTS = frozenset(
    {"response.function_call_arguments.delta", "response.function_call_arguments.done"}
)


def _output_mapped(value: dict[str, Any], item: Any) -> dict[str, Any]:
    """``value`` (a response) with ``item`` applied to each output item, itself when none
    changed."""
    output = value.get("output")
    if not isinstance(output, list):
        return value
    mapped = [item(part) for part in output]
    if all(new is old for new, old in zip(mapped, output, strict=True)):
        return value
    return {**value, "output": mapped}


def _kind(value: dict[str, Any]) -> str | None:
    """A document's ``type`` when it is a string: any other value (a list, an object) is
    no type the gateway knows, and cannot be looked up in a set."""
    kind = value.get("type")
    return kind if isinstance(kind, str) else None


def _in_events(data: dict[str, Any], item: Any) -> dict[str, Any]:
    """An event with ``item`` applied where events carry output items."""
    if _kind(data) in _ITEM_EVENTS:
        found = data.get("item")
        mapped = item(found)
        return data if mapped is found else {**data, "item": mapped}
    response = data.get("response")
    if isinstance(response, dict):
        mapped_response = _output_mapped(response, item)
        if mapped_response is not response:
            return {**data, "response": mapped_response}
    return data


class NamespaceAnswers:
    """Calls of flattened namespace members, by their flat name, mapped back."""

    marker = b"_call"

    def __init__(self, by_flat: Mapping[str, Any]) -> None:
        self._by_flat = by_flat

    def item(self, item: object) -> object:
        if not isinstance(item, dict) or _kind(item) not in _CALLS:
            return item
        name = item.get("name")
        tool = self._by_flat.get(name) if isinstance(name, str) else None
        if tool is None:
            return item
        return {**item, "name": tool.name, "namespace": tool.namespace}

    def document(self, value: dict[str, Any]) -> dict[str, Any]:
        return _output_mapped(value, self.item)

    def event(self, data: dict[str, Any]) -> dict[str, Any]:
        return _in_events(data, self.item)


def custom_input(arguments: object) -> str:
    """The ``input`` of a custom tool's call from the function arguments it came as."""
    if not isinstance(arguments, str):
        return ""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    if isinstance(parsed, dict):
        value = parsed.get("input")
        return value if isinstance(value, str) else ("" if not parsed else arguments)
    return arguments


class CustomAnswers:
    """Calls of custom tools (by flat name) as ``custom_tool_call``; in a stream, their
    argument events as the custom tool's input events."""

    marker = b"function_call"

    def __init__(self, custom: frozenset[str]) -> None:
        self._custom = custom
        # Streams: item id -> the decoder of a custom call's input.
        self._decoders: dict[str, InputDecoder] = {}

    def item(self, item: object) -> object:
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return item
        name = item.get("name")
        if not isinstance(name, str) or name not in self._custom:
            return item
        out = {key: part for key, part in item.items() if key != "arguments"}
        out["type"] = "custom_tool_call"
        out["input"] = custom_input(item.get("arguments", ""))
        return out

    def document(self, value: dict[str, Any]) -> dict[str, Any]:
        return _output_mapped(value, self.item)

    def event(self, data: dict[str, Any]) -> dict[str, Any]:
        kind = _kind(data)
        if kind in _ARGUMENT_EVENTS:
            ident = data.get("item_id")
            decoder = self._decoders.get(ident) if isinstance(ident, str) else None
            if decoder is None:
                return data
            out = {key: part for key, part in data.items() if key not in ("delta", "arguments")}
            if kind == "response.function_call_arguments.delta":
                delta = data.get("delta")
                out["type"] = "response.custom_tool_call_input.delta"
                out["delta"] = decoder.feed(delta if isinstance(delta, str) else "")
            else:
                out["type"] = "response.custom_tool_call_input.done"
                out["input"] = custom_input(data.get("arguments"))
            return out
        mapped = _in_events(data, self.item)
        if kind == "response.output_item.added" and mapped is not data:
            item = mapped.get("item")
            ident = item.get("id") if isinstance(item, dict) else None
            if isinstance(ident, str):
                self._decoders[ident] = InputDecoder()
        return mapped


# The start of the one argument's value, and the longest run of whole characters and
# escapes after it.
_START = re.compile(r'\s*\{\s*"input"\s*:\s*"')
_WHOLE = re.compile(r'(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
# A high surrogate's escape, which the next piece may complete with its pair.
_HIGH = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
# What may start an escape the next piece completes, alone or after a high surrogate's.
_ESCAPE_START = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")
_PAIR_START = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\(?:u[0-9a-fA-F]{0,3})?)?")
# Bounds what is held while the start is not yet seen (whitespace and the key).
_MAX_HEAD = 4096


def _escape_at(text: str, at: int) -> bool:
    """Whether the backslash at ``at`` starts an escape (an odd run of backslashes ends
    there), rather than ending an escaped backslash."""
    run = 0
    while at - run >= 0 and text[at - run] == "\\":
        run += 1
    return run % 2 == 1


class InputDecoder:
    """The ``input`` string of a ``{"input": "..."}`` argument text that arrives in pieces,
    decoded as far as the pieces so far allow (an escape is never split, a surrogate pair
    never parted). Only the undecoded tail is kept between pieces, so a long input costs
    time in proportion to its length."""

    __slots__ = ("_closed", "_pending", "_started")

    def __init__(self) -> None:
        self._pending = ""
        self._started = False
        self._closed = False

    def feed(self, piece: str) -> str:
        if self._closed:
            return ""
        text = self._pending + piece
        if not self._started:
            match = _START.match(text)
            if match is None:
                # Not yet the whole head (or never one): hold a bounded head only.
                self._closed = len(text) >= _MAX_HEAD
                self._pending = "" if self._closed else text
                return ""
            self._started = True
            text = text[match.end() :]
        found = _WHOLE.match(text)
        end = found.end() if found is not None else 0
        rest = text[end:]
        if (
            (not rest or _ESCAPE_START.fullmatch(rest))
            and end >= 6
            and _HIGH.fullmatch(text, end - 6, end)
            and _escape_at(text, end - 6)
        ):
            end -= 6  # a high surrogate's escape waits for its pair's
            rest = text[end:]
        if rest.startswith('"'):
            self._closed = True
            rest = ""
        elif rest and not (_ESCAPE_START.fullmatch(rest) or _PAIR_START.fullmatch(rest)):
            self._closed = True  # not a JSON string: nothing after this is decoded
            rest = ""
        self._pending = rest
        if not end:
            return ""
        try:
            decoded = json.loads('"' + text[:end] + '"')
        except ValueError:
            self._closed = True
            return ""
        return decoded if isinstance(decoded, str) else ""
