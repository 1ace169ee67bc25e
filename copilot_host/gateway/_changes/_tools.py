"""Responses tools as Copilot takes them: what Codex offers that first-party clients never send.

Codex offers ``namespace`` tools (``multi_agent_v1``, ``mcp__…``), ``custom`` (freeform)
tools such as ``apply_patch`` and ``exec``, a ``web_search`` tool, and, for models it knows,
an ``additional_tools`` input item; the service is reported to refuse each (docs/WIRE.md,
"Agents through the gateway"), and VS Code's Responses requests carry ``function`` tools
only. Each is one change, in the table's order:

* ``additional-tools``: an ``additional_tools`` item's tools join ``tools``; the item goes;
* ``namespaces``: namespace tools are flattened into their members, each named
  ``<namespace>__<name>`` (:func:`flat_names`),
  earlier turns' namespaced calls go by their flat name, and calls come back with the
  member's own ``name`` and ``namespace`` (:class:`NamespaceAnswers`);
* ``web-search``: ``web_search`` tools go;
* ``custom-tools``: a custom tool goes as a ``function`` tool of the same name with one
  required string ``input`` (its grammar, when given, added to the description); earlier
  turns' ``custom_tool_call``/``custom_tool_call_output`` items go as
  ``function_call``/``function_call_output``, and calls come back as
  ``custom_tool_call`` (:class:`CustomAnswers`).

The map from flat names back (:class:`ToolMap`) is built from each request's own tools:
the gateway keeps no state between requests.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring_ascii as _quoted
from typing import Any

from ._change import AnswerMapper, Change, RequestEdit
from ._tool_answers import CustomAnswers, NamespaceAnswers

__all__ = [
    "AdditionalTools",
    "CustomTools",
    "FlatTool",
    "Namespaces",
    "RemovedTools",
    "ToolMap",
    "WebSearch",
    "flat_names",
]

RESPONSES = frozenset({"responses"})
_NAME_OK = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NAME_BAD_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
_HASH = 8


@dataclass(frozen=True, slots=True)
class FlatTool:
    """One tool as it went upstream under a flat name: what the client called it."""

    name: str
    namespace: str | None
    custom: bool


@dataclass(slots=True)
class ToolMap:
    """Flat name -> the client's tool, for the tools whose calls are mapped back."""

    by_flat: dict[str, FlatTool] = field(default_factory=dict)
    # (namespace or None, name) -> flat name, to map earlier turns' calls forward.
    by_client: dict[tuple[str | None, str], str] = field(default_factory=dict)

    def add(self, flat: str, tool: FlatTool) -> None:
        self.by_flat[flat] = tool
        self.by_client[(tool.namespace, tool.name)] = flat


def _tool_map(edit: RequestEdit) -> ToolMap:
    if not isinstance(edit.tools, ToolMap):
        edit.tools = ToolMap()
    return edit.tools


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(tool: dict[str, Any]) -> str:
    name = tool.get("name")
    return name if isinstance(name, str) else ""


def _hashed(namespace: str | None, name: str, taken: set[str]) -> str:
    """A valid flat name for ``namespace``'s ``name`` that ``taken`` does not hold: a cut of
    the name and a hash of both, longer hashes until it is free, so the same tool always
    gets the same name among the same others."""
    base = _NAME_BAD_CHAR.sub("_", f"{namespace}__{name}" if namespace else name)
    seed = f"{namespace or ''}\0{name}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(seed).hexdigest()
    size = _HASH
    while True:
        flat = f"{base[: _MAX_NAME - size - 1]}_{digest[:size]}"
        if flat not in taken:
            return flat
        if size < len(digest):
            size = min(size * 2, len(digest))
        else:  # every length taken, by names chosen to: hash again
            digest = hashlib.sha256(digest.encode("ascii")).hexdigest()
            size = _HASH


def flat_names(members: list[tuple[str, str]], reserved: set[str]) -> dict[tuple[str, str], str]:
    """A flat name for each (namespace, member name), unique among every name that goes
    upstream (``reserved``: the top-level tools' names). A member is always
    ``<namespace>__<name>``, whatever else the request offers, so a thread whose tools are
    reordered or extended keeps its history's names (and the service its cached prefix);
    a name that is still shared, over 64 characters or outside ``[A-Za-z0-9_-]`` is
    hashed (:func:`_hashed`)."""
    candidates = {(ns, name): f"{ns}__{name}" for ns, name in members}
    shared = Counter(candidates.values())
    taken = set(reserved)
    flat: dict[tuple[str, str], str] = {}
    hashed: list[tuple[str, str]] = []
    for key, candidate in candidates.items():
        if shared[candidate] == 1 and candidate not in reserved and _NAME_OK.fullmatch(candidate):
            flat[key] = candidate
            taken.add(candidate)
        else:
            hashed.append(key)
    for ns, name in hashed:
        flat[(ns, name)] = chosen = _hashed(ns, name, taken)
        taken.add(chosen)
    return flat


class AdditionalTools(Change):
    name = "additional-tools"
    apis = RESPONSES
    summary = "Responses: an additional_tools input item's tools join tools"
    evidence = "additional-tools"
    check = "additional_tools"
    agents = ("codex",)

    def request(self, edit: RequestEdit) -> None:
        items = edit.value.get("input")
        if not isinstance(items, list):
            return
        extra: list[Any] = []
        kept: list[Any] = []
        for item in items:
            if isinstance(item, dict) and item.get("type") == "additional_tools":
                extra.extend(_list(item.get("tools")))
            else:
                kept.append(item)
        if len(kept) == len(items):
            return
        doc = edit.edit()
        doc["input"] = kept
        tools = [*_list(doc.get("tools")), *extra]
        if tools:
            doc["tools"] = tools
        edit.tools_changed = True
        edit.did(self.name)


class Namespaces(Change):
    name = "namespaces"
    apis = RESPONSES
    summary = (
        "Responses: namespace tools are flattened into their member tools, and calls are "
        "mapped back"
    )
    evidence = "namespaces"
    check = "namespace_tools"
    agents = ("codex",)

    def request(self, edit: RequestEdit) -> None:
        tools = edit.value.get("tools")
        if not isinstance(tools, list) or not any(
            isinstance(tool, dict) and tool.get("type") == "namespace" for tool in tools
        ):
            return
        reserved: set[str] = set()
        members: list[tuple[str, dict[str, Any]]] = []
        for tool in tools:
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "namespace":
                ns = _name(tool)
                members += [
                    (ns, member) for member in _list(tool.get("tools")) if isinstance(member, dict)
                ]
            elif (name := _name(tool)) != "":
                reserved.add(name)
        flats = flat_names([(ns, _name(member)) for ns, member in members], reserved)
        tool_map = _tool_map(edit)
        out: list[Any] = []
        for tool in tools:
            if isinstance(tool, dict) and tool.get("type") == "namespace":
                for member in _list(tool.get("tools")):
                    if isinstance(member, dict):
                        ns, name = _name(tool), _name(member)
                        flat = flats[(ns, name)]
                        out.append({**member, "name": flat})
                        tool_map.add(flat, FlatTool(name, ns, custom=False))
                continue
            out.append(tool)
        doc = edit.edit()
        if out:
            doc["tools"] = out
        else:
            del doc["tools"]
        items = doc.get("input")
        if isinstance(items, list) and any(
            isinstance(item, dict) and "namespace" in item for item in items
        ):
            doc["input"] = [_call_forward(item, tool_map) for item in items]
        choice = doc.get("tool_choice")
        if isinstance(choice, dict) and isinstance(choice.get("namespace"), str):
            chosen = tool_map.by_client.get((choice["namespace"], _name(choice)))
            if chosen is not None:
                doc["tool_choice"] = {"type": "function", "name": chosen}
        edit.tools_changed = True
        edit.did(self.name)

    def answer(self, edit: RequestEdit) -> AnswerMapper | None:
        tool_map = edit.tools
        if not isinstance(tool_map, ToolMap):
            return None
        namespaced = {
            flat: tool for flat, tool in tool_map.by_flat.items() if tool.namespace is not None
        }
        return NamespaceAnswers(namespaced) if namespaced else None


def _call_forward(item: object, tool_map: ToolMap) -> object:
    """An earlier turn's namespaced call, by the flat name its tool went up as."""
    if not isinstance(item, dict) or item.get("type") not in ("function_call", "custom_tool_call"):
        return item
    ns = item.get("namespace")
    if not isinstance(ns, str):
        return item
    mapped = {key: part for key, part in item.items() if key != "namespace"}
    mapped["name"] = tool_map.by_client.get((ns, _name(item)), _name(item))
    return mapped


class RemovedTools(Change):
    """A change that removes the Responses tools of some types (:meth:`names`), noting
    them for :mod:`._tool_choice`."""

    apis = RESPONSES

    def names(self, kind: str) -> tuple[str, ...]:
        """What a ``tool_choice`` may call a removed tool of type ``kind``; () keeps it."""
        raise NotImplementedError

    def request(self, edit: RequestEdit) -> None:
        tools = edit.value.get("tools")
        if not isinstance(tools, list):
            return
        kept = []
        for tool in tools:
            kind = tool.get("type") if isinstance(tool, dict) else None
            names = self.names(kind) if isinstance(kind, str) else ()
            if names:
                edit.removed.update(names)
            else:
                kept.append(tool)
        if len(kept) == len(tools):
            return
        doc = edit.edit()
        if kept:
            doc["tools"] = kept
        else:
            del doc["tools"]
        edit.tools_changed = True
        edit.did(self.name)


class WebSearch(RemovedTools):
    name = "web-search"
    summary = "Responses: web_search tools are removed"
    evidence = "web-search"
    check = "web_search_tools"
    agents = ("codex",)

    def names(self, kind: str) -> tuple[str, ...]:
        return (kind, "web_search", "web_search_preview") if kind.startswith("web_search") else ()


def _as_function(tool: dict[str, Any], name: str) -> dict[str, Any]:
    """A custom tool as a function tool taking its whole input as one string."""
    description = tool.get("description")
    text = description if isinstance(description, str) else ""
    form = tool.get("format")
    if isinstance(form, dict) and form.get("type") == "grammar":
        syntax, definition = form.get("syntax"), form.get("definition")
        if isinstance(definition, str) and definition:
            shown = syntax if isinstance(syntax, str) else ""
            text += f"\n\nThe input argument follows this {shown} grammar:\n{definition}"
    return {
        "type": "function",
        "name": name,
        "description": text.strip(),
        "parameters": {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The tool's input."}},
            "required": ["input"],
            "additionalProperties": False,
        },
        "strict": False,
    }


class CustomTools(Change):
    name = "custom-tools"
    apis = RESPONSES
    summary = (
        "Responses: a custom tool goes as a function tool with one string argument, and "
        "its calls come back as custom_tool_call"
    )
    evidence = "custom-tools"
    check = "custom_tools"
    agents = ("codex",)

    def request(self, edit: RequestEdit) -> None:
        tools = edit.value.get("tools")
        items = edit.value.get("input")
        offered = isinstance(tools, list) and any(
            isinstance(tool, dict) and tool.get("type") == "custom" for tool in tools
        )
        earlier = isinstance(items, list) and any(
            isinstance(item, dict)
            and item.get("type") in ("custom_tool_call", "custom_tool_call_output")
            for item in items
        )
        if not (offered or earlier):
            return
        doc = edit.edit()
        tool_map = _tool_map(edit)
        if offered:
            assert isinstance(tools, list)
            taken = {_name(tool) for tool in tools if isinstance(tool, dict)}
            out: list[Any] = []
            for tool in tools:
                if isinstance(tool, dict) and tool.get("type") == "custom":
                    flat = _name(tool)
                    known = tool_map.by_flat.get(flat)
                    if known is None:  # a top-level tool: its own name when it is valid
                        if not _NAME_OK.fullmatch(flat):
                            taken.discard(flat)
                            flat = _hashed(None, _name(tool), taken)
                            taken.add(flat)
                        known = FlatTool(_name(tool), None, custom=True)
                    tool_map.add(flat, replace(known, custom=True))
                    out.append(_as_function(tool, flat))
                else:
                    out.append(tool)
            doc["tools"] = out
            choice = doc.get("tool_choice")
            if isinstance(choice, dict) and choice.get("type") == "custom":
                flat_choice = tool_map.by_client.get((None, _name(choice)))
                if flat_choice is not None:
                    doc["tool_choice"] = {"type": "function", "name": flat_choice}
        if isinstance(items, list):
            doc["input"] = [_custom_forward(item, tool_map) for item in _list(doc.get("input"))]
        edit.did(self.name)

    def answer(self, edit: RequestEdit) -> AnswerMapper | None:
        tool_map = edit.tools
        if not isinstance(tool_map, ToolMap):
            return None
        custom = frozenset(flat for flat, tool in tool_map.by_flat.items() if tool.custom)
        return CustomAnswers(custom) if custom else None


def _custom_forward(item: object, tool_map: ToolMap) -> object:
    if not isinstance(item, dict):
        return item
    kind = item.get("type")
    if kind == "custom_tool_call":
        mapped = {key: part for key, part in item.items() if key not in ("input", "namespace")}
        mapped["type"] = "function_call"
        name = _name(item)
        mapped["name"] = tool_map.by_client.get((None, name), name)
        given = item.get("input")
        # What json.dumps({"input": given}) writes, without building the dict.
        mapped["arguments"] = '{"input": ' + _quoted(given if isinstance(given, str) else "") + "}"
        return mapped
    if kind == "custom_tool_call_output":
        return {**item, "type": "function_call_output"}
    return item
