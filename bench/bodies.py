"""The request bodies coding agents really send, built to size for the benchmarks.

* :func:`claude_turn`: a Claude Code turn on ``/v1/messages`` as 2.1.332 sends one
  (docs/WIRE.md, "Captured from the agents"): a long conversation of text and tool use,
  60 tools with JSON schemas, a billing block first in ``system``, a ``role: "system"``
  message to fold, ``max_tokens: 128000`` above the served model's output limit, adaptive
  thinking with ``display`` and ``context_management`` under betas the service does not
  serve. Every Messages change of the table has work to do on it.
* :func:`codex_turn`: a Codex CLI turn on ``/v1/responses`` (0.171.0): a developer
  message, a long history of function calls and outputs and of ``apply_patch`` custom-tool
  calls, function tools, the ``multi_agent_v1`` namespace, a custom tool with a Lark
  grammar and a ``web_search`` tool.

Sizes are approximate (the JSON text's bytes); the shapes, not the words, are what the
changes see.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BETAS", "claude_turn", "codex_turn", "encoded"]

# What Claude Code 2.1.332 sends in anthropic-beta (captured).
BETAS = (
    "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,"
    "per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,"
    "thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24"
)
_GRAMMAR = 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF\n'
_PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
_WORDS = "the function reads the file and returns the lines that match the pattern "


def _schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": f"Where tool {n} looks. " + _WORDS},
            "pattern": {"type": "string", "description": "What to match."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
            "options": {
                "type": "object",
                "properties": {"case": {"type": "boolean"}, "glob": {"type": "string"}},
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }


def claude_turn(size: int = 400_000, model: str = "claude-opus-5") -> dict[str, Any]:
    tools = [
        {"name": f"Tool{n}", "description": _WORDS * 3, "input_schema": _schema(n)}
        for n in range(60)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>" + _WORDS * 8}]},
        {"role": "system", "content": [{"type": "text", "text": "# Environment\n" + _WORDS}]},
    ]
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": 128_000,
        "stream": True,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.abc;"},
            {
                "type": "text",
                "text": "You are Claude Code. " * 200,
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "tools": tools,
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "medium"},
        "metadata": {"user_id": '{"device_id": "d", "session_id": "s"}'},
        "messages": messages,
    }
    turn = 0
    while len(json.dumps(body)) < size:
        turn += 1
        ident = f"toolu_{turn:06d}"
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look. " + _WORDS * 4},
                    {
                        "type": "tool_use",
                        "id": ident,
                        "name": f"Tool{turn % 60}",
                        "input": {"path": f"src/file{turn}.py", "pattern": "def "},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": ident, "content": _WORDS * 12},
                ],
            },
        ]
    messages.append({"role": "user", "content": "Now fix the failing test."})
    return body


def codex_turn(size: int = 300_000, model: str = "gpt-5.5") -> dict[str, Any]:
    function = [
        {
            "type": "function",
            "name": name,
            "description": _WORDS * 2,
            "parameters": _schema(n),
            "strict": False,
        }
        for n, name in enumerate(("exec_command", "write_stdin", "view_image", "update_plan"))
    ]
    members = [
        {"type": "function", "name": name, "description": _WORDS, "parameters": _schema(n)}
        for n, name in enumerate(
            ("spawn_agent", "send_input", "wait_agent", "close_agent", "resume_agent")
        )
    ]
    tools: list[dict[str, Any]] = [
        *function,
        {"type": "namespace", "name": "multi_agent_v1", "description": "agents", "tools": members},
        {
            "type": "custom",
            "name": "apply_patch",
            "description": "Use the apply_patch tool to edit files.",
            "format": {
                "type": "grammar",
                "syntax": "lark",
                "definition": _GRAMMAR * 6,
            },
        },
        {"type": "web_search", "external_web_access": False},
    ]
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": _WORDS * 60}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
    ]
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "input": items,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "thread-1",
        "text": {"verbosity": "low"},
    }
    turn = 0
    while len(json.dumps(body)) < size:
        turn += 1
        call = f"call_{turn:06d}"
        if turn % 3:
            items += [
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": f"grep -n def src/file{turn}.py"}),
                    "call_id": call,
                },
                {"type": "function_call_output", "call_id": call, "output": _WORDS * 10},
            ]
        else:
            items += [
                {
                    "type": "custom_tool_call",
                    "name": "apply_patch",
                    "input": _PATCH,
                    "call_id": call,
                },
                {"type": "custom_tool_call_output", "call_id": call, "output": "Done."},
            ]
    items.append(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}
    )
    return body


def encoded(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()
