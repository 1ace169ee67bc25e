"""``POST /v1/messages/count_tokens``, answered by the gateway: Copilot does not serve it.

Claude Code calls it for ``/context`` and its sub-agents (kaitranntt/ccs #232: they break
without it; reported); VS Code's agent host says "countTokens not supported by CAPI"
(microsoft/vscode ``src/vs/platform/agentHost/node/shared/copilotApiService.ts``). The
answer is ``{"input_tokens": N}`` for the body's ``system``, ``messages`` and ``tools``, from
a local estimate that errs high, since an undercount is the failure reported
(caozhiyuan/copilot-api PR #134): N is at least a quarter of their UTF-8 JSON length, and at
least one token per non-ASCII character plus a quarter of the ASCII bytes (a tokenizer
spends about a token per CJK character or emoji, where English runs about four bytes a
token). No tokenizer package is used: none matches Claude's, and an estimate that errs high
needs none.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["estimate_input_tokens"]

_COUNTED = ("system", "messages", "tools")


def estimate_input_tokens(value: dict[str, Any]) -> int:
    """The estimate for a count_tokens body (see the module docstring)."""
    parts = [value[key] for key in _COUNTED if key in value]
    # json.dumps spaces its separators: the longer spelling, so the estimate errs high.
    text = json.dumps(parts, ensure_ascii=False)
    utf8 = len(text.encode("utf-8", "surrogatepass"))
    ascii_bytes = sum(1 for char in text if char < "\x80") if not text.isascii() else len(text)
    non_ascii = len(text) - ascii_bytes
    by_bytes = -(-utf8 // 4)
    by_chars = non_ascii + -(-ascii_bytes // 4)
    return max(1, by_bytes, by_chars)
