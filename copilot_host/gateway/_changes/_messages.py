"""The changes to Anthropic Messages requests: what Claude Code sends that Copilot refuses.

docs/WIRE.md ("Agents through the gateway") has each one's evidence. Every walk here is one
pass over the lists it reads, and reads only fields of the types it expects: anything else
is left as the client sent it (for the service to answer as it does).
"""

from __future__ import annotations

from typing import Any

from ._betas import FIELD_BETAS
from ._change import Change, LocalAnswer, RequestEdit

__all__ = [
    "SERVER_TOOLS_TEXT",
    "BetaFields",
    "BillingHeader",
    "ServerTools",
    "SystemMessages",
    "ThinkingBudget",
]

MESSAGES = frozenset({"messages"})
_BILLING_PREFIX = "x-anthropic-billing-header:"
_SERVER_TOOL_PREFIXES = ("web_search_", "web_fetch_", "code_execution_")
# The least thinking budget the Messages API takes.
_MIN_THINKING = 1024

SERVER_TOOLS_TEXT = (
    "Web search and web fetch are not available through GitHub Copilot: the copilot-host "
    "gateway answered this request itself, without asking a model."
)


class BillingHeader(Change):
    name = "billing-header"
    apis = MESSAGES
    summary = (
        "Messages: a system text block starting x-anthropic-billing-header: is removed "
        "(a string system starting so loses that first line)"
    )
    evidence = "billing-header"
    check = "billing_header"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        system = edit.value.get("system")
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
        doc = edit.edit()
        if kept:
            doc["system"] = kept
        else:
            del doc["system"]
        edit.did(self.name)


def _is_billing(block: object) -> bool:
    if not isinstance(block, dict) or block.get("type") != "text":
        return False
    text = block.get("text")
    return isinstance(text, str) and text.startswith(_BILLING_PREFIX)


class BetaFields(Change):
    name = "beta-fields"
    apis = MESSAGES
    summary = (
        "Messages: a body field whose beta is not forwarded is removed "
        "(thinking.display, context_management)"
    )
    evidence = "beta-fields"
    check = "beta_fields"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        value, betas = edit.value, edit.betas
        removed = False
        thinking = value.get("thinking")
        if (
            isinstance(thinking, dict)
            and "display" in thinking
            and not FIELD_BETAS["thinking.display"][0] & betas
        ):
            edit.edit()["thinking"] = {
                key: item for key, item in thinking.items() if key != "display"
            }
            removed = True
        if "context_management" in value and not FIELD_BETAS["context_management"][0] & betas:
            del edit.edit()["context_management"]
            removed = True
        if removed:
            edit.did(self.name)


def _text_blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        return []
    blocks = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                blocks.append({"type": "text", "text": text})
    return blocks


def _as_blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


class SystemMessages(Change):
    name = "system-message"
    apis = MESSAGES
    summary = (
        'Messages: a role "system" message inside messages is folded into the '
        "neighbouring user turn as a text block"
    )
    evidence = "system-message"
    check = "beta_fields"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        """Each ``role: "system"`` message joins the nearest user message before it as
        trailing text blocks (the nearest after it, as leading blocks, when none comes
        before): one pass, each user message rebuilt at most once."""
        if FIELD_BETAS["system_message"][0] & edit.betas:
            return  # a served beta that allows it (none is today)
        messages = edit.value.get("messages")
        if not isinstance(messages, list) or not any(
            isinstance(message, dict) and message.get("role") == "system" for message in messages
        ):
            return
        out: list[Any] = []
        # Index in ``out`` of the last user message, and the blocks each user message
        # (by index) gains at its end.
        last_user: int | None = None
        trailing: dict[int, list[dict[str, Any]]] = {}
        leading: list[dict[str, Any]] = []  # system text with no user message before it
        leads: int | None = None  # the user message that takes ``leading`` first
        folded = False
        for message in messages:
            role = message.get("role") if isinstance(message, dict) else None
            if role == "system":
                folded = True
                blocks = _text_blocks(message.get("content"))
                if last_user is None:
                    leading.extend(blocks)
                else:
                    trailing.setdefault(last_user, []).extend(blocks)
                continue
            if role == "user":
                last_user = len(out)
                if leads is None and leading:
                    leads = last_user
            out.append(message)
        if not folded:
            return
        for index in {*trailing, *(() if leads is None else (leads,))}:
            joined = dict(out[index])
            head = leading if index == leads else []
            joined["content"] = [
                *head,
                *_as_blocks(joined.get("content")),
                *trailing.get(index, ()),
            ]
            out[index] = joined
        if leading and leads is None:
            out.append({"role": "user", "content": leading})
        edit.edit()["messages"] = out
        edit.did(self.name)


class ThinkingBudget(Change):
    name = "thinking-budget"
    apis = MESSAGES
    summary = (
        "Messages: thinking.budget_tokens not below a capped max_tokens is lowered to "
        "cap - 1 (at least 1024), or thinking is dropped"
    )
    evidence = "thinking-budget"
    check = (
        "none: Anthropic's Messages API refuses budget_tokens not below max_tokens (its "
        "documentation of extended thinking)"
    )
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        if "max_tokens" not in edit.applied:
            return  # only after this request's output cap was lowered
        doc = edit.value
        thinking, cap = doc.get("thinking"), doc.get("max_tokens")
        if not isinstance(thinking, dict) or not isinstance(cap, int):
            return
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < cap:
            return
        if cap - 1 >= _MIN_THINKING:
            edit.edit()["thinking"] = {**thinking, "budget_tokens": cap - 1}
        else:
            del edit.edit()["thinking"]
        edit.did(self.name)


def _server_tool(tool: object) -> bool:
    if not isinstance(tool, dict):
        return False
    kind = tool.get("type")
    return isinstance(kind, str) and kind.startswith(_SERVER_TOOL_PREFIXES)


class ServerTools(Change):
    name = "server-tools"
    apis = MESSAGES
    summary = (
        "Messages: web_search_*, web_fetch_*, code_execution_* tools are removed; a "
        "request that offered nothing else is answered by the gateway"
    )
    evidence = "server-tools"
    check = "server_tools"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        tools = edit.value.get("tools")
        if not isinstance(tools, list):
            return
        kept = [tool for tool in tools if not _server_tool(tool)]
        if len(kept) == len(tools):
            return
        for tool in tools:
            if _server_tool(tool):
                name = tool.get("name")
                if isinstance(name, str):
                    edit.removed.add(name)
        doc = edit.edit()
        edit.did(self.name)
        edit.tools_changed = True
        if kept:
            doc["tools"] = kept
            return
        del doc["tools"]
        stream = doc.get("stream") is True
        edit.local = LocalAnswer(
            edit.api.text_answer(
                edit.asked or edit.route.model_id,
                SERVER_TOOLS_TEXT,
                ident=f"msg_copilot_host_{edit.serial}",
                stream=stream,
            ),
            stream=stream,
        )
