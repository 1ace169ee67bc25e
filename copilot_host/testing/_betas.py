"""The ``anthropic-beta`` values the emulated Messages endpoint serves, and the body fields
each beta governs.

The emulator's own copy, kept apart from the gateway's list on purpose: the emulator models
the service, and a test that passes because both sides import one list proves nothing.
The values are the ones VS Code's Copilot extension sends on its own Messages requests
(microsoft/vscode-copilot-chat ``src/platform/endpoint/node/chatEndpoint.ts``,
``getExtraHeaders``) and the beta of a body field its Claude Code bridge passes through
(``effort``). A value outside the list is refused with 400, as a third-party capability
report of an enterprise account recorded (docs/EMULATOR.md); that refusal is unverified
against the live service.

``FIELD_BETAS`` is the field-to-beta table: a body field is taken only when one of the betas
listed for it is among the request's *served* betas (those it names that the service
serves). A field sent without its beta is refused as the service refuses an unknown field,
``<path>: Extra inputs are not permitted`` (microsoft/vscode #305670, a Copilot Messages
answer to ``context_management``; ericc-ch/copilot-api #217). docs/EMULATOR.md says which
rows are established and which assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["FIELD_BETAS", "SERVED_BETAS", "served_betas", "unserved_betas"]

SERVED_BETAS = frozenset(
    {
        "interleaved-thinking-2025-05-14",
        "context-management-2025-06-27",
        "advanced-tool-use-2025-11-20",
        "effort-2025-11-24",
        # VS Code's newer endpoint sends it with 1-hour cache_control (microsoft/vscode
        # extensions/copilot/src/platform/endpoint/node/chatEndpoint.ts, commit
        # 0466f117212b7a16eb637235f2317ce6736e9ab9, getAnthropicBetaHeader).
        "extended-cache-ttl-2025-04-11",
    }
)

# Body field (as this module names it) -> the betas that make the service take it.
#   thinking.display      the thinking-display betas Claude Code sends (neither is served)
#   context_management    context editing, whose beta is served
#   system_message        a ``role: "system"`` message inside ``messages``, which Claude
#                         Code sends under its per-turn-control beta (not served)
FIELD_BETAS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "thinking.display": frozenset(
            {"thinking-display-updates-2026-08-18", "thinking-token-count-2026-05-13"}
        ),
        "context_management": frozenset({"context-management-2025-06-27"}),
        "system_message": frozenset({"per-turn-control-2026-07-01"}),
    }
)


def _values(header: str) -> list[str]:
    return [value for value in (part.strip() for part in header.split(",")) if value]


def unserved_betas(header: str) -> list[str]:
    """The values of an ``anthropic-beta`` header (comma-separated) the service refuses."""
    return [value for value in _values(header) if value not in SERVED_BETAS]


def served_betas(header: str) -> frozenset[str]:
    """The values of an ``anthropic-beta`` header the service serves for this request."""
    return frozenset(value for value in _values(header) if value in SERVED_BETAS)
