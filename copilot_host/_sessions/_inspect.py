"""What an inference request's body says about itself: image input, and who started the turn.

The Copilot API refuses image input without ``Copilot-Vision-Request: true``, and bills a
request as a person's premium request unless ``X-Initiator`` says an agent sent it (a
tool result, an assistant continuation). Both are read from the body the application
sends, by the rules in docs/WIRE.md ("X-Initiator" and "Copilot-Vision-Request"), which
follow what the widely used clients do. Pure functions: bytes in, facts out.

Image input is judged by structure (content parts of an image type), never by a
substring: a prompt that merely mentions ``image_url`` carries no image.
"""

from __future__ import annotations

import json
from typing import Any

from .._catalog._specs import ApiProtocol

__all__ = ["AGENT", "USER", "inspect_body", "protocol_of_path"]

USER = "user"
AGENT = "agent"

# Roles that frame a conversation rather than take a turn in it.
_FRAMING = frozenset({"system", "developer"})
# Chat roles that continue a turn without the person: a tool's result, the model's own.
_CONTINUATIONS = frozenset({"assistant", "tool", "function"})


def protocol_of_path(path: str) -> ApiProtocol | None:
    """The protocol a request path speaks on an inference origin, or None."""
    return ApiProtocol.of_path(path)


def inspect_body(protocol: ApiProtocol, body: bytes) -> tuple[bool, str]:
    """``(carries image input, initiator)`` of a request body for ``protocol``.

    A body that is not a JSON object, or has no input, is a person's plain turn.
    """
    # Cheap exits before a parse: no JSON object, or (for the image check only) no image
    # type name anywhere and no escape that could spell one.
    if not body or body[:64].lstrip()[:1] not in (b"{", b""):
        return False, USER
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return False, USER
    if not isinstance(value, dict):
        return False, USER
    maybe_image = b"image" in body or b"\\u" in body
    if protocol is ApiProtocol.OPENAI_CHAT:
        messages = _list(value.get("messages"))
        vision = maybe_image and any(_chat_image(m) for m in messages)
        return vision, _chat_initiator(messages)
    if protocol is ApiProtocol.OPENAI_RESPONSES:
        given = value.get("input")
        if isinstance(given, str):
            return False, USER
        items = _list(given)
        vision = maybe_image and any(_responses_image(item) for item in items)
        return vision, _responses_initiator(items)
    messages = _list(value.get("messages"))
    vision = maybe_image and any(_anthropic_image(m) for m in messages)
    return vision, _anthropic_initiator(messages)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _parts(container: object, key: str) -> list[Any]:
    """The list under ``key`` of a dict (content parts, tool output), else empty."""
    return _list(container.get(key)) if isinstance(container, dict) else []


def _typed(parts: list[Any], kind: str) -> bool:
    return any(isinstance(part, dict) and part.get("type") == kind for part in parts)


# -- Chat Completions ----------------------------------------------------------------------


def _chat_image(message: object) -> bool:
    # Tool messages carry content parts too: an image a tool returned counts.
    return _typed(_parts(message, "content"), "image_url")


def _chat_initiator(messages: list[Any]) -> str:
    for message in reversed(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role in _FRAMING:
            continue
        # An unknown role is not taken for an agent: billing a person's turn as an agent's is
        # the mistake clients treat as abuse.
        return AGENT if role in _CONTINUATIONS else USER
    return USER


# -- Responses -----------------------------------------------------------------------------


def _responses_image(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get("type") == "input_image":
        return True
    # A message's content parts, and what a tool returned (function_call_output.output).
    return _typed(_parts(item, "content"), "input_image") or _typed(
        _parts(item, "output"), "input_image"
    )


def _responses_initiator(items: list[Any]) -> str:
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        if isinstance(role, str) and role in _FRAMING:
            continue
        if role == USER:
            return USER
        # An assistant message, a function_call_output, a function call, reasoning: the
        # turn continues without the person.
        return AGENT
    return USER


# -- Anthropic Messages --------------------------------------------------------------------


def _anthropic_image(message: object) -> bool:
    blocks = _parts(message, "content")
    if _typed(blocks, "image"):
        return True
    # Images a tool returned ride inside its tool_result block.
    return any(
        isinstance(block, dict)
        and block.get("type") == "tool_result"
        and _typed(_parts(block, "content"), "image")
        for block in blocks
    )


def _anthropic_initiator(messages: list[Any]) -> str:
    for message in reversed(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role in _FRAMING:
            continue
        if role != USER:
            return AGENT
        return AGENT if _typed(_parts(message, "content"), "tool_result") else USER
    return USER
