"""The Messages betas the Copilot API serves, and the body fields each beta governs.

Claude Code opts into many betas (``claude-code-20250219``, ``afk-mode-...``, ...) through
``anthropic-beta``. Of those only the values in :data:`SERVED_BETAS` are forwarded, each
with the source that shows the service takes it; the others are dropped (named once at
DEBUG), and a request whose betas are all dropped goes without the header. The evidence
that the service refuses others (docs/WIRE.md, "Agents through the gateway") is second-hand
and unverified against the live service; VS Code's own bridge from Claude Code to Copilot
likewise sends its endpoint's own set rather than Claude Code's.

"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from copilot_host._internal import clean

__all__ = ["FIELD_BETAS", "SERVED_BETAS", "filter_betas", "forwarded_betas"]

_log = logging.getLogger("copilot_host.gateway")

_CHAT_ENDPOINT = (
    "microsoft/vscode-copilot-chat src/platform/endpoint/node/chatEndpoint.ts "
    "(commit b70015e5d654d7f71fdda127a3418faef9c610d2), ChatEndpoint.getExtraHeaders"
)
# value -> where it is seen sent to the Copilot Messages endpoint.
SERVED_BETAS: Mapping[str, str] = {
    "interleaved-thinking-2025-05-14": _CHAT_ENDPOINT + ": models without adaptive thinking",
    "context-management-2025-06-27": _CHAT_ENDPOINT + ": context editing and the memory tool",
    "advanced-tool-use-2025-11-20": _CHAT_ENDPOINT + ": tool search",
    "extended-cache-ttl-2025-04-11": "microsoft/vscode extensions/copilot/src/platform/"
    "endpoint/node/chatEndpoint.ts (commit 0466f117212b7a16eb637235f2317ce6736e9ab9), "
    "getAnthropicBetaHeader: with 1-hour cache_control (the cache-control change keeps ttl "
    "only with it)",
    "effort-2025-11-24": "the beta of the body's effort setting, which VS Code's Claude Code "
    "bridge passes through as Claude Code sent it (microsoft/vscode-copilot-chat "
    "src/extension/agents/claude/node/claudeLanguageModelServer.ts, commit "
    "63a46e73851fa1c91dbdaacb11e05ce062202b05, createRequestBody)",
}
# Documentation to read, not a setting: read-only, so changing it cannot look as if it did.
SERVED_BETAS = MappingProxyType(dict(SERVED_BETAS))
_SERVED = frozenset(value.encode("ascii") for value in SERVED_BETAS)

# Body field -> the betas that govern it, with where the pairing is seen
# (``system_message``: a ``role: "system"`` message inside ``messages``). A field goes
# upstream only when one of its betas is among those forwarded with the request
# (:mod:`._messages` removes or folds it otherwise): a field sent without its beta is what
# ericc-ch/copilot-api #217 records the service refusing ("Extra inputs are not
# permitted"; reported). The emulator keeps its own copy (copilot_host.testing).
FIELD_BETAS: Mapping[str, tuple[frozenset[str], str]] = MappingProxyType(
    {
        "thinking.display": (
            frozenset({"thinking-display-updates-2026-08-18", "thinking-token-count-2026-05-13"}),
            "Claude Code 2.1.332 sends the field with these betas (captured at the gateway, "
            "issue 24); neither is served, so the field never goes upstream",
        ),
        "context_management": (
            frozenset({"context-management-2025-06-27"}),
            _CHAT_ENDPOINT + ": VS Code sends context_management with this beta "
            "(src/platform/endpoint/node/messagesApi.ts, commit "
            "31acd00a86424e2ee6e980e54919cf31fbf88030, createMessagesRequestBody)",
        ),
        "system_message": (
            frozenset({"per-turn-control-2026-07-01"}),
            "Claude Code 2.1.332 sends an '# Environment' system message inside messages "
            "with this beta (captured, issue 24); not served, so the message is folded "
            "into a user turn instead (._messages)",
        ),
    }
)


def filter_betas(values: Iterable[bytes]) -> bytes | None:
    """One ``anthropic-beta`` value holding the served betas of every value the client
    sent (each a comma-separated list), in their order; None when none is left."""
    # Dicts as ordered sets: each value kept once, in the order first sent, in time linear
    # in the header (a list's membership test made it quadratic: 36 ms for a 12 KB value).
    kept: dict[bytes, None] = {}
    dropped: dict[bytes, None] = {}
    for value in values:
        for item in value.split(b","):
            beta = item.strip()
            if beta:
                (kept if beta in _SERVED else dropped)[beta] = None
    if dropped and _log.isEnabledFor(logging.DEBUG):
        shown = ", ".join(clean(beta.decode("latin-1"), limit=80) for beta in dropped)
        _log.debug("anthropic-beta not served by the Copilot API, dropped: %s", shown)
    return b",".join(kept) if kept else None


def forwarded_betas(values: Iterable[bytes]) -> frozenset[str]:
    """The served betas among the client's ``anthropic-beta`` values: what goes upstream
    with the request (as :func:`filter_betas` joins them), without the DEBUG line."""
    found: set[str] = set()
    for value in values:
        for item in value.split(b","):
            beta = item.strip()
            if beta in _SERVED:
                found.add(beta.decode("ascii"))
    return frozenset(found)
