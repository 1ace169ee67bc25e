"""Responses fields Copilot is reported to refuse: hosted tools and ``reasoning.context``.

docs/WIRE.md ("Shapes no tested agent sends yet") has each one's evidence:

* ``hosted-tools``: the tools OpenAI runs on its side (``image_generation``,
  ``local_shell``, ``file_search``, ``mcp``, ``code_interpreter``, ``computer_use_preview``)
  go, as ``web_search`` does (:mod:`._tools`): VS Code sends function tools only, and
  Copilot answered Codex's ``image_generation`` with "The requested tool image_generation
  is not supported."; a ``tool_choice`` for one goes with it (:mod:`._tool_choice`);
* ``reasoning-context``: Codex sets ``reasoning.context`` for its "Responses Lite" models
  only, with a header of OpenAI's own backend; no Copilot client sends it, and it goes.
"""

from __future__ import annotations

from ._change import Change, RequestEdit
from ._tools import RemovedTools

__all__ = ["HOSTED_TOOLS", "HostedTools", "ReasoningContext"]

RESPONSES = frozenset({"responses"})
HOSTED_TOOLS = frozenset(
    {
        "image_generation",
        "local_shell",
        "file_search",
        "mcp",
        "code_interpreter",
        "computer_use_preview",
    }
)


class HostedTools(RemovedTools):
    name = "hosted-tools"
    summary = (
        "Responses: the tools OpenAI hosts (image_generation, local_shell, file_search, mcp, "
        "code_interpreter, computer_use_preview) are removed"
    )
    evidence = "hosted-tools"
    check = "hosted_tools"
    agents = ("codex",)

    def names(self, kind: str) -> tuple[str, ...]:
        return (kind,) if kind in HOSTED_TOOLS else ()


class ReasoningContext(Change):
    name = "reasoning-context"
    apis = RESPONSES
    summary = "Responses: reasoning.context (Codex's Responses Lite) is removed"
    evidence = "reasoning-context"
    check = "reasoning_context"
    agents = ("codex",)

    def request(self, edit: RequestEdit) -> None:
        reasoning = edit.value.get("reasoning")
        if not isinstance(reasoning, dict) or "context" not in reasoning:
            return
        kept = {key: value for key, value in reasoning.items() if key != "context"}
        doc = edit.edit()
        if kept:
            doc["reasoning"] = kept
        else:
            del doc["reasoning"]
        edit.did(self.name)
