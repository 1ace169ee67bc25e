"""A ``tool_choice`` that names no tool left: dropped (Messages and Responses).

When a change removed tools (server tools on Messages, ``web_search`` on Responses), a
``tool_choice`` naming one of them, or any ``tool_choice`` when no tools are left, would
name a tool the request no longer offers, which both APIs refuse. A choice naming a tool
that went upstream under a flat name is mapped by the change that renamed it
(:mod:`._tools`).
"""

from __future__ import annotations

from ._change import Change, RequestEdit

__all__ = ["ToolChoice"]


class ToolChoice(Change):
    name = "tool_choice"
    apis = frozenset({"messages", "responses"})
    summary = (
        "Messages, Responses: a tool_choice naming a removed tool is dropped, and so is "
        "tool_choice when no tools are left"
    )
    evidence = "tool_choice"
    check = (
        "none: Anthropic's and OpenAI's APIs refuse a tool_choice naming a tool the "
        "request does not offer"
    )
    agents = ("claude-code", "codex")

    def request(self, edit: RequestEdit) -> None:
        if not edit.tools_changed:
            return
        value = edit.value
        choice = value.get("tool_choice")
        if choice is None:
            return
        drop = "tools" not in value
        if not drop and isinstance(choice, dict):
            for key in ("name", "type"):
                named = choice.get(key)
                if isinstance(named, str) and named in edit.removed:
                    drop = True
        if drop:
            del edit.edit()["tool_choice"]
            edit.did(self.name)
