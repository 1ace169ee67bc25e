"""The ``anthropic-beta`` values the emulated Messages endpoint serves.

The emulator's own copy, kept apart from the gateway's list on purpose: the emulator models
the service, and a test that passes because both sides import one list proves nothing.
The values are the ones VS Code's Copilot extension sends on its own Messages requests
(microsoft/vscode-copilot-chat ``src/platform/endpoint/node/chatEndpoint.ts``,
``getExtraHeaders``) and the beta of a body field its Claude Code bridge passes through
(``effort``). A value outside the list is refused with 400, as a third-party capability
report of an enterprise account recorded (docs/EMULATOR.md); that refusal is unverified
against the live service.
"""

from __future__ import annotations

__all__ = ["SERVED_BETAS", "unserved_betas"]

SERVED_BETAS = frozenset(
    {
        "interleaved-thinking-2025-05-14",
        "context-management-2025-06-27",
        "advanced-tool-use-2025-11-20",
        "effort-2025-11-24",
    }
)


def unserved_betas(header: str) -> list[str]:
    """The values of an ``anthropic-beta`` header (comma-separated) the service refuses."""
    values = (value.strip() for value in header.split(","))
    return [value for value in values if value and value not in SERVED_BETAS]
