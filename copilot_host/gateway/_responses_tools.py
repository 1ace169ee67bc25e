"""Responses tools as Copilot takes them, and their calls mapped back as the client sent them.

Codex offers ``namespace`` tools (``multi_agent_v1``, ``mcp__…``), ``custom`` (freeform)
tools such as ``apply_patch`` and ``exec``, a ``web_search`` tool, and, for models it knows,
an ``additional_tools`` input item; the service is reported to refuse each (docs/WIRE.md,
"Agents through the gateway"), and neither VS Code nor the Copilot CLI sends them.

Forward (:func:`rewrite_responses_tools`): an ``additional_tools`` item's tools join
``tools`` and the item goes; ``namespace`` tools are flattened into their members; a
``custom`` tool becomes a ``function`` tool of the same name with one required string
property ``input`` (its grammar, when given, appended to the description); ``web_search``
tools go. Earlier turns' ``custom_tool_call``/``custom_tool_call_output`` items become
``function_call``/``function_call_output``, and a namespaced call its flat name.

A flat name is the member's own name unless two tools would share it, then
``<namespace>__<name>``; a name over 64 characters or outside ``[A-Za-z0-9_-]`` is cut and
given a short hash suffix. The map from flat names back is built from the request's own
tools each time (:class:`ToolMap`): the gateway keeps no state between requests.

Back (:class:`AnswerMapper`): a ``function_call`` for a custom tool becomes a
``custom_tool_call`` (``input`` from the argument; the same ``id``, ``call_id`` and
``status``), and one for a namespace member gets its own name and ``namespace`` again, as
OpenAI's API returns them (the ``openai`` SDK 3.57.0 types ``ResponseCustomToolCall`` and
``ResponseFunctionToolCall``, both with ``namespace``). In a stream the argument
delta/done events of a custom tool become ``response.custom_tool_call_input.delta/done``,
each delta carrying the part of ``input`` decoded so far.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._rewrites import Rewritten

__all__ = ["AnswerMapper", "FlatTool", "ToolMap", "rewrite_responses_tools"]

_NAME_OK = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NAME_BAD_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
_HASH = 8
# In every event or answer that holds something to map (an item's type, an event's name).
_CALL = b"function_call"


@dataclass(frozen=True, slots=True)
class FlatTool:
    """One tool as it went upstream: its flat name, and what the client called it."""

    name: str
    namespace: str | None
    custom: bool


@dataclass(slots=True)
class ToolMap:
    """Flat name -> the client's tool, for the tools whose calls must be mapped back."""

    by_flat: dict[str, FlatTool] = field(default_factory=dict)
    # (namespace or None, name) -> flat name, to map earlier turns' calls forward.
    by_client: dict[tuple[str | None, str], str] = field(default_factory=dict)

    @property
    def needed(self) -> bool:
        return any(tool.custom or tool.namespace is not None for tool in self.by_flat.values())


def _safe(name: str) -> str:
    if _NAME_OK.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    base = _NAME_BAD_CHAR.sub("_", name)[: _MAX_NAME - _HASH - 1]
    return f"{base}_{digest}"


def _as_function(tool: dict[str, Any]) -> dict[str, Any]:
    """A custom tool as a function tool taking its whole input as one string."""
    description = str(tool.get("description") or "")
    form = tool.get("format")
    if isinstance(form, dict) and form.get("type") == "grammar":
        syntax, definition = form.get("syntax"), form.get("definition")
        description += (
            f"\n\nThe input argument follows this {syntax} grammar:\n{definition}"
            if definition
            else ""
        )
    return {
        "type": "function",
        "name": tool.get("name"),
        "description": description.strip(),
        "parameters": {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The tool's input."}},
            "required": ["input"],
            "additionalProperties": False,
        },
        "strict": False,
    }


def _members(
    tools: list[Any], names: list[str]
) -> tuple[list[tuple[str | None, dict[str, Any]]], bool, bool, bool]:
    """Every tool with its namespace (None at top level), and whether a namespace, a
    custom tool or a web_search tool was seen."""
    out: list[tuple[str | None, dict[str, Any]]] = []
    namespace = custom = web = False
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type")
        if kind == "namespace" and "namespaces" in names:
            namespace = True
            ns = str(tool.get("name") or "")
            for member in tool.get("tools") or ():
                if isinstance(member, dict):
                    custom = custom or member.get("type") == "custom"
                    out.append((ns, member))
            continue
        if isinstance(kind, str) and kind.startswith("web_search") and "web-search" in names:
            web = True
            continue
        custom = custom or kind == "custom"
        out.append((None, tool))
    return out, namespace, custom, web


def rewrite_responses_tools(
    value: dict[str, Any], result: Rewritten, enabled: frozenset[str]
) -> None:
    """Apply the Responses tool rewrites of ``enabled`` to ``value`` (copied, not edited)."""
    tools = value.get("tools")
    items = value.get("input")
    extra: list[Any] = []
    had_additional = False
    if isinstance(items, list) and "additional-tools" in enabled:
        for item in items:
            if isinstance(item, dict) and item.get("type") == "additional_tools":
                had_additional = True
                extra.extend(item.get("tools") or ())
    all_tools = [*(tools if isinstance(tools, list) else ()), *extra]
    if not all_tools and not had_additional and not _has_custom_items(items):
        return
    names: list[str] = [n for n in ("namespaces", "web-search", "custom-tools") if n in enabled]
    members, namespaced, custom, web = _members(all_tools, names)
    if not (
        namespaced or web or had_additional or (custom and "custom-tools" in enabled)
    ) and not _has_custom_items(items):
        return
    doc = result.value if result.value is not None else dict(value)
    result.value = doc
    # Flat names: a member's own unless another tool has it too.
    counts: dict[str, int] = {}
    for _ns, tool in members:
        name = str(tool.get("name") or "")
        counts[name] = counts.get(name, 0) + 1
    tool_map = ToolMap()
    out_tools: list[Any] = []
    for ns, tool in members:
        name = str(tool.get("name") or "")
        is_custom = tool.get("type") == "custom" and "custom-tools" in enabled
        flat = name if ns is None or counts[name] == 1 else f"{ns}__{name}"
        flat = _safe(flat) if ns is not None or is_custom else flat
        sent = _as_function(tool) if is_custom else dict(tool)
        if ns is not None or is_custom:
            sent["name"] = flat
            tool_map.by_flat[flat] = FlatTool(name, ns, is_custom)
            tool_map.by_client[(ns, name)] = flat
        out_tools.append(sent)
    if out_tools:
        doc["tools"] = out_tools
    elif "tools" in doc:
        del doc["tools"]
    if had_additional:
        result.names.append("additional-tools")
    if namespaced:
        result.names.append("namespaces")
    if web:
        result.names.append("web-search")
    if isinstance(items, list):
        doc["input"] = _map_items(items, tool_map, enabled)
    if "custom-tools" in enabled and (
        any(tool.custom for tool in tool_map.by_flat.values()) or _has_custom_items(items)
    ):
        result.names.append("custom-tools")
    _tool_choice(doc, tool_map, result, enabled)
    result.tools = tool_map if tool_map.needed else None


def _has_custom_items(items: object) -> bool:
    return isinstance(items, list) and any(
        isinstance(item, dict)
        and item.get("type") in ("custom_tool_call", "custom_tool_call_output")
        for item in items
    )


def _map_items(items: list[Any], tool_map: ToolMap, enabled: frozenset[str]) -> list[Any]:
    custom = "custom-tools" in enabled
    out: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            out.append(item)
            continue
        kind = item.get("type")
        if kind == "additional_tools" and "additional-tools" in enabled:
            continue
        if kind in ("function_call", "custom_tool_call") and (kind == "function_call" or custom):
            ns = item.get("namespace")
            name = str(item.get("name") or "")
            flat = tool_map.by_client.get((ns if isinstance(ns, str) else None, name), name)
            mapped = {key: part for key, part in item.items() if key != "namespace"}
            mapped["name"] = flat
            if kind == "custom_tool_call":
                mapped["type"] = "function_call"
                mapped["arguments"] = json.dumps({"input": mapped.pop("input", "")})
            out.append(mapped)
            continue
        if kind == "custom_tool_call_output" and custom:
            out.append({**item, "type": "function_call_output"})
            continue
        out.append(item)
    return out


def _tool_choice(
    doc: dict[str, Any], tool_map: ToolMap, result: Rewritten, enabled: frozenset[str]
) -> None:
    choice = doc.get("tool_choice")
    if not isinstance(choice, dict) or "tool_choice" not in enabled:
        if choice is not None and "tools" not in doc and "tool_choice" in enabled:
            del doc["tool_choice"]
            result.names.append("tool_choice")
        return
    kind = choice.get("type")
    if kind in ("web_search", "web_search_preview") or "tools" not in doc:
        del doc["tool_choice"]
        result.names.append("tool_choice")
    elif kind in ("function", "custom") and isinstance(choice.get("name"), str):
        ns = choice.get("namespace")
        flat = tool_map.by_client.get((ns if isinstance(ns, str) else None, choice["name"]))
        if flat is not None:
            doc["tool_choice"] = {"type": "function", "name": flat}


# -- answers mapped back -----------------------------------------------------------------


def _custom_input(arguments: object) -> str:
    if not isinstance(arguments, str):
        return ""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(parsed, dict):
        value = parsed.get("input")
        return value if isinstance(value, str) else ("" if not parsed else arguments)
    return arguments


class AnswerMapper:
    """Maps one answer's items back to the client's tools (whole, or event by event)."""

    def __init__(self, tool_map: ToolMap) -> None:
        self._map = tool_map
        # Streams: item id -> the decoder of a custom call's input.
        self._custom: dict[str, _InputDecoder] = {}

    def item(self, item: object) -> object:
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return item
        tool = self._map.by_flat.get(str(item.get("name")))
        if tool is None:
            return item
        out = dict(item)
        out["name"] = tool.name
        if tool.namespace is not None:
            out["namespace"] = tool.namespace
        if tool.custom:
            out["type"] = "custom_tool_call"
            out["input"] = _custom_input(out.pop("arguments", ""))
        return out

    def response(self, response: object) -> object:
        if isinstance(response, dict) and isinstance(response.get("output"), list):
            return {**response, "output": [self.item(item) for item in response["output"]]}
        return response

    def whole(self, body: bytes) -> bytes:
        if _CALL not in body:
            return body  # nothing to map: not parsed
        try:
            document = json.loads(body)
        except ValueError:
            return body
        mapped = self.response(document)
        return body if mapped is document else json.dumps(mapped, ensure_ascii=False).encode()

    def event(self, data: dict[str, Any]) -> dict[str, Any]:
        kind = data.get("type")
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = data.get("item")
            mapped = self.item(item)
            if mapped is item:
                return data
            if isinstance(mapped, dict) and mapped.get("type") == "custom_tool_call":
                ident = str(mapped.get("id") or "")
                if kind.endswith("added"):
                    self._custom[ident] = _InputDecoder()
            return {**data, "item": mapped}
        if kind in (
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
        ):
            decoder = self._custom.get(str(data.get("item_id") or ""))
            if decoder is None:
                return data
            out = {key: part for key, part in data.items() if key not in ("delta", "arguments")}
            if kind.endswith("delta"):
                out["type"] = "response.custom_tool_call_input.delta"
                out["delta"] = decoder.feed(str(data.get("delta") or ""))
            else:
                out["type"] = "response.custom_tool_call_input.done"
                out["input"] = _custom_input(data.get("arguments"))
            return out
        if isinstance(data.get("response"), dict):
            mapped_response = self.response(data["response"])
            if mapped_response is not data["response"]:
                return {**data, "response": mapped_response}
        return data

    def events(self, block: bytes) -> bytes:
        """Complete events (``block`` ends at an event's end) with their data mapped."""
        out: list[bytes] = []
        changed = False
        for event in re.split(rb"(?<=\n\n)|(?<=\r\n\r\n)", block):
            if not event:
                continue
            if _CALL not in event:
                # Only a function call (its item, its argument events, an envelope holding
                # it) is mapped: text deltas go on unparsed.
                out.append(event)
                continue
            lines = event.splitlines(keepends=True)
            data_at = next((i for i, line in enumerate(lines) if line.startswith(b"data:")), None)
            if data_at is None:
                out.append(event)
                continue
            raw = lines[data_at][5:].strip()
            try:
                data = json.loads(raw)
            except ValueError:
                out.append(event)
                continue
            if not isinstance(data, dict):
                out.append(event)
                continue
            mapped = self.event(data)
            if mapped is data:
                out.append(event)
                continue
            changed = True
            kind = str(mapped.get("type"))
            rebuilt: list[bytes] = []
            for i, line in enumerate(lines):
                if i == data_at:
                    rebuilt.append(
                        b"data: " + json.dumps(mapped, ensure_ascii=False).encode() + b"\n"
                    )
                elif line.startswith(b"event:"):
                    rebuilt.append(b"event: " + kind.encode() + b"\n")
                else:
                    rebuilt.append(line)
            out.append(b"".join(rebuilt))
        return b"".join(out) if changed else block


class _InputDecoder:
    """The ``input`` string of a ``{"input": "..."}`` argument text that arrives in pieces,
    decoded as far as the pieces so far allow (an escape is never split)."""

    _START = re.compile(r'\{\s*"input"\s*:\s*"')

    def __init__(self) -> None:
        self._raw = ""
        self._start: int | None = None
        self._done = 0  # raw characters of the value already decoded
        self._closed = False

    def feed(self, piece: str) -> str:
        self._raw += piece
        if self._closed:
            return ""
        if self._start is None:
            match = self._START.match(self._raw)
            if match is None:
                return ""
            self._start = match.end()
        value = self._raw[self._start :]
        end = self._safe_end(value)
        chunk = value[self._done : end]
        self._done = end
        if not chunk:
            return ""
        try:
            decoded = json.loads('"' + chunk + '"')
        except ValueError:
            return ""
        return decoded if isinstance(decoded, str) else ""

    def _safe_end(self, value: str) -> int:
        at = self._done
        while at < len(value):
            char = value[at]
            if char == '"':
                self._closed = True
                return at
            if char == "\\":
                if at + 1 >= len(value):
                    return at
                if value[at + 1] == "u":
                    if at + 6 > len(value):
                        return at
                    code = int(value[at + 2 : at + 6], 16) if _hex(value[at + 2 : at + 6]) else 0
                    if 0xD800 <= code <= 0xDBFF:
                        if at + 12 > len(value):
                            return at
                        at += 12
                        continue
                    at += 6
                    continue
                at += 2
                continue
            at += 1
        return at


def _hex(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)
