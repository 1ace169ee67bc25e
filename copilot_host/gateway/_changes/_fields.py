"""Messages body fields Copilot is reported to refuse, or takes only with their beta.

docs/WIRE.md ("Shapes no tested agent sends yet") has each one's evidence:

* ``mcp-servers``: Anthropic's MCP connector (``mcp_servers``) runs remote MCP servers on
  the API's side; Copilot does not, and its beta is never forwarded. Removing it would
  remove tools the request depends on, so the gateway answers 400 itself, saying so;
* ``tool-search``: ``tool_search_tool_*`` server tools, ``defer_loading`` and
  ``tool_reference`` blocks are VS Code's tool search, which it sends with
  ``advanced-tool-use-2025-11-20``; without that beta they go (deferred tools load eagerly,
  a reference becomes a text block naming the tool);
* ``cache-control``: ``scope`` in a ``cache_control`` is refused everywhere it was tried
  and goes; ``ttl`` stays only with ``extended-cache-ttl-2025-04-11`` (what VS Code sends
  it with), else goes (the block is cached for the default five minutes);
* ``effort``: ``output_config.effort`` above ``high`` (``max``, ``xhigh``) is refused and
  is lowered to ``high``.

Every walk is one pass over the lists it reads and leaves anything of another type as the
client sent it.
"""

from __future__ import annotations

from typing import Any

from ._change import Change, LocalAnswer, RequestEdit

__all__ = ["MCP_SERVERS_TEXT", "CacheControl", "Effort", "McpServers", "ToolSearch"]

MESSAGES = frozenset({"messages"})
_TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"
_TTL_BETA = "extended-cache-ttl-2025-04-11"
_EFFORTS_ABOVE_HIGH = frozenset({"max", "xhigh"})

MCP_SERVERS_TEXT = (
    "copilot-host gateway: remote MCP servers (mcp_servers) are not available through "
    "GitHub Copilot; configure the MCP server in the agent instead"
)


class McpServers(Change):
    name = "mcp-servers"
    apis = MESSAGES
    summary = (
        "Messages: a request with mcp_servers (Anthropic's MCP connector) is answered 400 "
        "by the gateway, saying remote MCP servers are not available through Copilot"
    )
    evidence = "mcp-servers"
    check = "mcp_servers"
    agents = ()

    def request(self, edit: RequestEdit) -> None:
        if "mcp_servers" not in edit.value:
            return
        edit.did(self.name)
        edit.local = LocalAnswer(
            edit.api.errors.body(400, "mcp_servers_unavailable", MCP_SERVERS_TEXT), status=400
        )


def _is_search_tool(tool: object) -> bool:
    kind = tool.get("type") if isinstance(tool, dict) else None
    return isinstance(kind, str) and kind.startswith("tool_search_tool_")


def _without_references(content: object) -> tuple[object, bool]:
    """A message's content with each ``tool_reference`` block as a text block."""
    if not isinstance(content, list):
        return content, False
    out: list[Any] = []
    changed = False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_reference":
            name = block.get("tool_name")
            out.append({"type": "text", "text": f"Tool: {name if isinstance(name, str) else ''}"})
            changed = True
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            inner, inner_changed = _without_references(block.get("content"))
            out.append({**block, "content": inner} if inner_changed else block)
            changed = changed or inner_changed
        else:
            out.append(block)
    return out, changed


class ToolSearch(Change):
    name = "tool-search"
    apis = MESSAGES
    summary = (
        "Messages: without advanced-tool-use, tool_search_tool_* tools, defer_loading and "
        "tool_reference blocks are removed (deferred tools load eagerly)"
    )
    evidence = "tool-search"
    check = "tool_search"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        if _TOOL_SEARCH_BETA in edit.betas:
            return  # VS Code's tool search, with the beta it sends it with
        changed = False
        tools = edit.value.get("tools")
        if isinstance(tools, list):
            kept: list[Any] = []
            for tool in tools:
                if _is_search_tool(tool):
                    name = tool.get("name")
                    if isinstance(name, str):
                        edit.removed.add(name)
                    changed = edit.tools_changed = True
                elif isinstance(tool, dict) and "defer_loading" in tool:
                    kept.append({k: v for k, v in tool.items() if k != "defer_loading"})
                    changed = True
                else:
                    kept.append(tool)
            if changed:
                doc = edit.edit()
                if kept:
                    doc["tools"] = kept
                else:
                    del doc["tools"]
        messages = edit.value.get("messages")
        if isinstance(messages, list):
            out: list[Any] = []
            referenced = False
            for message in messages:
                content = message.get("content") if isinstance(message, dict) else None
                new, did = _without_references(content)
                out.append(
                    {**message, "content": new} if did and isinstance(message, dict) else message
                )
                referenced = referenced or did
            if referenced:
                edit.edit()["messages"] = out
                changed = True
        if changed:
            edit.did(self.name)


class _Marks:
    """Removes what Copilot refuses from every ``cache_control`` of one request."""

    def __init__(self, keep_ttl: bool) -> None:
        self.drop = frozenset({"scope"} if keep_ttl else {"scope", "ttl"})
        self.changed = False

    def mark(self, value: object) -> object:
        """A block (or tool) with its ``cache_control`` cleaned, the same object if clean."""
        if not isinstance(value, dict):
            return value
        control = value.get("cache_control")
        out = value
        if isinstance(control, dict) and not self.drop.isdisjoint(control):
            out = {
                **value,
                "cache_control": {k: v for k, v in control.items() if k not in self.drop},
            }
            self.changed = True
        inner = value.get("content")
        if isinstance(inner, list) and value.get("type") == "tool_result":
            cleaned = self.blocks(inner)
            if cleaned is not inner:
                out = {**out, "content": cleaned}
        return out

    def blocks(self, values: list[Any]) -> list[Any]:
        cleaned = [self.mark(value) for value in values]
        return values if all(a is b for a, b in zip(cleaned, values, strict=True)) else cleaned


class CacheControl(Change):
    name = "cache-control"
    apis = MESSAGES
    summary = (
        "Messages: scope is removed from every cache_control, and ttl too unless "
        "extended-cache-ttl is forwarded"
    )
    evidence = "cache-control"
    check = "cache_control"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        marks = _Marks(keep_ttl=_TTL_BETA in edit.betas)
        value = edit.value
        found: dict[str, Any] = {}
        top = marks.mark(value)
        if top is not value:
            found["cache_control"] = top["cache_control"]  # type: ignore[index]
        for key in ("system", "tools"):
            items = value.get(key)
            if isinstance(items, list):
                cleaned = marks.blocks(items)
                if cleaned is not items:
                    found[key] = cleaned
        messages = value.get("messages")
        if isinstance(messages, list):
            out: list[Any] = []
            for message in messages:
                content = message.get("content") if isinstance(message, dict) else None
                kept = marks.blocks(content) if isinstance(content, list) else content
                out.append(message if kept is content else {**message, "content": kept})
            if marks.changed:
                found["messages"] = out
        if marks.changed:
            edit.edit().update(found)
            edit.did(self.name)


class Effort(Change):
    name = "effort"
    apis = MESSAGES
    summary = "Messages: output_config.effort above high (max, xhigh) is lowered to high"
    evidence = "effort"
    check = "effort"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        config = edit.value.get("output_config")
        effort = config.get("effort") if isinstance(config, dict) else None
        if not isinstance(config, dict) or not isinstance(effort, str):
            return
        if effort not in _EFFORTS_ABOVE_HIGH:
            return
        edit.edit()["output_config"] = {**config, "effort": "high"}
        edit.did(self.name)
