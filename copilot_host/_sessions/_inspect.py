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
from dataclasses import dataclass
from typing import Any

from .. import _accel
from .._api import ApiProtocol

__all__ = [
    "AGENT",
    "INITIATORS",
    "NOT_A_TURN",
    "USER",
    "RequestFacts",
    "facts_of",
    "facts_of_body",
    "inspect_body",
    "last_user_text",
    "read_json_body",
    "request_facts",
    "write_json_body",
]

USER = "user"
AGENT = "agent"
# The only X-Initiator values the service knows; a client's other value is not forwarded.
INITIATORS = frozenset({USER, AGENT})


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What a request is, as far as its headers go: whether its body carries image input,
    who started the turn (None: not an inference turn), and the model it names."""

    vision: bool = False
    initiator: str | None = None
    model: str | None = None


# A request that is not an inference turn: no image, no initiator to set.
NOT_A_TURN = RequestFacts()
_PLAIN_TURN = RequestFacts(False, USER)

# Roles that frame a conversation rather than take a turn in it.
_FRAMING = frozenset({"system", "developer"})
# Chat roles that continue a turn without the person: a tool's result, the model's own.
_CONTINUATIONS = frozenset({"assistant", "tool", "function"})


def read_json_body(body: bytes) -> Any:
    """The JSON value of a request body: UTF-8 without a byte-order mark, else ValueError
    (a JSON nesting too deep for the parser included).

    The one reading of a request body, shared by ``route.auth`` and the gateway so that
    both see the same document: ``json.loads`` given bytes would also take UTF-16, UTF-32
    and a BOM, which the service does not. orjson reads it when installed (see
    :mod:`copilot_host._accel`); what orjson refuses is read again by ``json``, so the
    documents accepted are the same either way. The one difference in what is read: an
    integer beyond 64 bits is a float under orjson (the body is relayed as sent, so only
    what the facts read could see it, and none of them is a number).
    """
    fast = _accel.orjson
    if fast is not None:
        try:
            return fast.loads(body)
        except fast.JSONDecodeError:
            # ``json`` decides: it takes a few documents orjson refuses (NaN, a lone
            # surrogate escape, which JavaScript clients write when they cut text inside
            # an emoji), so both paths accept exactly what ``json`` accepts.
            pass
    try:
        return json.loads(body.decode("utf-8"))  # a leading BOM is a JSONDecodeError
    except RecursionError:
        raise ValueError("the body nests too deeply") from None


def write_json_body(value: Any, *, finite: bool = False) -> bytes:
    """``value`` (a document :func:`read_json_body` read, then edited) as a body again: the
    one writing, as UTF-8 JSON text.

    orjson writes it when installed, an order of magnitude faster than ``json`` (a 400 KB
    agent's turn: 0.1 against 2 ms), except where the two would write different documents,
    which ``json`` then writes: orjson refuses a lone surrogate and an integer beyond 64
    bits (then ``json`` writes the value), and writes NaN and the infinities as null, so it
    is used only when the caller knows the value holds none (``finite``: the body it was
    read from spells neither ``NaN`` nor ``Infinity``). A lone surrogate is written
    ``\\u``-escaped, as JSON allows."""
    fast = _accel.orjson
    if fast is not None and finite:
        try:
            return bytes(fast.dumps(value))
        except (TypeError, fast.JSONEncodeError):
            pass
    try:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value).encode("ascii")


def inspect_body(protocol: ApiProtocol, body: bytes) -> tuple[bool, str]:
    """``(carries image input, initiator)`` of a request body for ``protocol``.

    A body that is not a JSON object, or has no input, is a person's plain turn.
    """
    facts = facts_of_body(protocol, body)
    return facts.vision, facts.initiator or USER


def _unread(protocol: ApiProtocol) -> RequestFacts:
    """The facts of a body that says nothing (not a JSON object): a person's plain turn,
    or on the embeddings path no turn at all."""
    return _PLAIN_TURN if protocol.chat else NOT_A_TURN


def facts_of_body(protocol: ApiProtocol, body: bytes) -> RequestFacts:
    """:func:`facts_of` a body still in bytes (one strict parse; see :func:`read_json`)."""
    # Cheap exit before a parse: no JSON object.
    if not body or (body[0] != 0x7B and body[:64].lstrip()[:1] not in (b"{", b"")):
        return _unread(protocol)
    try:
        value = read_json_body(body)
    except ValueError:
        return _unread(protocol)
    # No image type name anywhere and no escape that could spell one: no image walk.
    return facts_of(protocol, value, maybe_image=_may_name_an_image(body))


def request_facts(
    protocol: ApiProtocol, value: object, *, body: bytes | None = None
) -> RequestFacts:
    """The :class:`RequestFacts` of a request body for ``protocol``, already parsed (by
    :func:`read_json_body`): for a caller that has read the body anyway (the gateway), so
    that ``route.auth`` need not read it again (``route.auth.for_request(facts, ...)``).

    ``body``, the bytes ``value`` was parsed from, lets it skip the walk for image input
    when no image type name and no escape that could spell one appears in them, as
    ``route.auth`` does when it reads a body itself; the result is the same."""
    if body is None:
        return facts_of(protocol, value)
    return facts_of(protocol, value, maybe_image=_may_name_an_image(body))


def _may_name_an_image(body: bytes) -> bool:
    """Whether ``body`` could name an image type: it spells "image", or has an escape that
    could spell one (looked for only when it has a backslash at all: one byte is found
    many times faster than two). Searched with find(), not ``in``: on Python 3.11 ``bytes
    in bytes`` raises and drops a TypeError before each search."""
    return body.find(b"image") >= 0 or (body.find(b"\\") >= 0 and body.find(b"\\u") >= 0)


def facts_of(protocol: ApiProtocol, value: object, *, maybe_image: bool = True) -> RequestFacts:
    """The :class:`RequestFacts` of a parsed request body for ``protocol``."""
    if not isinstance(value, dict):
        return _unread(protocol)
    name = value.get("model")
    model = name if isinstance(name, str) else None
    if not protocol.chat:
        # An embeddings request is no turn of a conversation: VS Code sends it without
        # X-Initiator or a vision header (docs/WIRE.md, "Embeddings").
        return _facts(False, None, model)
    if protocol is ApiProtocol.OPENAI_CHAT:
        messages = _list(value.get("messages"))
        vision = maybe_image and any(_chat_image(m) for m in messages)
        return _facts(vision, _chat_initiator(messages), model)
    if protocol is ApiProtocol.OPENAI_RESPONSES:
        given = value.get("input")
        if isinstance(given, str):
            return _facts(False, USER, model)
        items = _list(given)
        vision = maybe_image and any(_responses_image(item) for item in items)
        return _facts(vision, _responses_initiator(items), model)
    messages = _list(value.get("messages"))
    vision = maybe_image and any(_anthropic_image(m) for m in messages)
    return _facts(vision, _anthropic_initiator(messages), model)


# Facts already made, by (vision, initiator, model): an application uses a handful of
# models, and a frozen dataclass costs more to build than to look up. Bounded, since the
# model names come from the bodies.
_MADE: dict[tuple[bool, str | None, str | None], RequestFacts] = {}
_MADE_MAX = 256


def _facts(vision: bool, initiator: str | None, model: str | None) -> RequestFacts:
    key = (vision, initiator, model)
    made = _MADE.get(key)
    if made is None:
        made = RequestFacts(vision, initiator, model)
        if len(_MADE) < _MADE_MAX:
            _MADE[key] = made
    return made


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


# -- the person's last words ---------------------------------------------------------------

_TEXT_PARTS = frozenset({"text"})
_INPUT_TEXT_PARTS = frozenset({"input_text", "text"})


def _texts(content: object, kinds: frozenset[str]) -> str | None:
    if isinstance(content, str):
        return content
    parts = [
        part["text"]
        for part in _list(content)
        if isinstance(part, dict)
        and part.get("type") in kinds
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(parts) if parts else None


def _last_user(items: object, kinds: frozenset[str]) -> str | None:
    for item in reversed(_list(items)):
        if isinstance(item, dict) and item.get("role") == USER:
            found = _texts(item.get("content"), kinds)
            if found is not None:
                return found
    return None


def last_user_text(protocol: ApiProtocol, value: object) -> str | None:
    """The text of the last user message of a parsed request body for ``protocol`` (its
    text parts joined by newlines; a Responses ``input`` string as it is), None when it has
    none. What Copilot Auto's routing call carries, and what the gateway's token estimate
    and its own answers read."""
    if not isinstance(value, dict) or not protocol.chat:
        return None
    if protocol is ApiProtocol.OPENAI_RESPONSES:
        given = value.get("input")
        return given if isinstance(given, str) else _last_user(given, _INPUT_TEXT_PARTS)
    return _last_user(value.get("messages"), _TEXT_PARTS)
