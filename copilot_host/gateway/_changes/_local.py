"""The answers the gateway gives itself: ``POST /v1/messages/count_tokens``.

Copilot does not serve count_tokens: VS Code's agent host says "countTokens not supported
by CAPI" (microsoft/vscode ``src/vs/platform/agentHost/node/shared/copilotApiService.ts``);
Claude Code calls it for ``/context`` and its sub-agents (kaitranntt/ccs #232: they break
without it; reported). The answer is ``{"input_tokens": N}`` for the body's ``system``,
``messages`` and ``tools``, from a local estimate that errs high, since an undercount is
the failure reported (caozhiyuan/copilot-api PR #134): N is at least a quarter of their
UTF-8 JSON length, and at least one token per non-ASCII character plus a quarter of the
ASCII bytes (a tokenizer spends about a token per CJK character or emoji, where English runs
about four bytes a token). No tokenizer package is used: none matches Claude's, and an
estimate that errs high needs none. (The server-tools answer is in :mod:`._messages`.)
"""

from __future__ import annotations

import json
from typing import Any

from ._change import Change, LocalAnswer, RequestEdit

__all__ = ["COUNT_TOKENS", "CountTokens", "estimate_input_tokens"]

COUNT_TOKENS = "/v1/messages/count_tokens"


def estimate_input_tokens(value: dict[str, Any], fields: tuple[str, ...]) -> int:
    """The estimate for the ``fields`` of a body (see the module docstring)."""
    parts = [value[key] for key in fields if key in value]
    # json.dumps spaces its separators: the longer spelling, so the estimate errs high.
    text = json.dumps(parts, ensure_ascii=False)
    utf8 = len(text.encode("utf-8", "surrogatepass"))
    # The ASCII characters, counted in C: a loop over 30 MB of text took seconds.
    ascii_bytes = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    non_ascii = len(text) - ascii_bytes
    by_bytes = -(-utf8 // 4)
    by_chars = non_ascii + -(-ascii_bytes // 4)
    return max(1, by_bytes, by_chars)


class CountTokens(Change):
    name = "count-tokens"
    apis = frozenset({"messages"})
    summary = (
        "POST /v1/messages/count_tokens is answered by the gateway with a local estimate "
        "(off: 404 as before)"
    )
    evidence = "count-tokens"
    check = "count_tokens"
    agents = ("claude-code",)
    paths = frozenset({COUNT_TOKENS})

    def local(self, edit: RequestEdit) -> LocalAnswer | None:
        count = estimate_input_tokens(edit.original, edit.api.counted)
        return LocalAnswer(b'{"input_tokens": %d}' % count)
