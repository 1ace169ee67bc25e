"""A gateway request's body, read once: its JSON (strictly), its model, what its headers need.

The body is parsed once, with the library's one reading of a request body
(:func:`copilot_host._internal.read_json_body`: UTF-8 JSON without a byte-order mark, the same
reading ``route.auth`` applies), and what ``route.auth`` would read from it again (image
input, initiator) is taken from that parse (:func:`copilot_host._internal.request_facts`) and handed
to it. A large body is parsed in a worker thread, so the event loop keeps answering other
requests between the parse's steps. The parsed tree is dropped before the request goes
upstream: only the bytes travel.

:func:`rewrite_model` names another model in the body (a route id given for a model id,
an alias): it splices the new name into the bytes where the value of the one top-level
``"model"`` key stands, and re-encodes the document only when the splice cannot be proven
to hit that key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import copilot_host as ch
from copilot_host._internal import read_json_body, request_facts

from ._access import Refusal
from ._messages import system_as_blocks

__all__ = [
    "PARSE_IN_THREAD_ABOVE",
    "Parsed",
    "encode_body",
    "read_request",
    "rewrite_model",
    "system_blocks",
]

# A body larger than this is parsed in a worker thread (a 32 MiB body takes a few hundred
# milliseconds to parse; a small one less than the thread hop costs).
PARSE_IN_THREAD_ABOVE = 1024 * 1024


@dataclass(slots=True)
class Parsed:
    """A request body as the gateway read it: the document, its model, its facts."""

    value: dict[str, Any]
    name: str
    facts: ch.RequestFacts


def parse_request(body: bytes, protocol: ch.ApiProtocol) -> Parsed | Refusal:
    """Read ``body`` once: a Refusal (400) unless it is a JSON object that names a model."""
    try:
        value = read_json_body(body)
    except ValueError:
        return Refusal(
            400,
            "invalid_json",
            "copilot-host gateway: the body is not JSON (UTF-8, without a byte-order mark)",
        )
    if not isinstance(value, dict):
        return Refusal(400, "invalid_json", "copilot-host gateway: the body is not a JSON object")
    name = value.get("model")
    if not isinstance(name, str) or not name:
        return Refusal(
            400,
            "missing_model",
            'copilot-host gateway: the body names no "model" (GET /v1/models lists them)',
        )
    return Parsed(value, name, request_facts(protocol, value, body=body))


async def read_request(body: bytes, protocol: ch.ApiProtocol) -> Parsed | Refusal:
    """:func:`parse_request`, in a worker thread when the body is large."""
    if len(body) > PARSE_IN_THREAD_ABOVE:
        return await asyncio.to_thread(parse_request, body, protocol)
    return parse_request(body, protocol)


# A key "model" as a JSON text spells it literally, followed by its colon; it is a key (not
# the end of a string that merely ends in `"model`) when an object's opening brace, a comma
# or whitespace precedes it (a quote inside a string is escaped, so none of these does).
# The name is found with bytes.find and its quotes and colon checked where it stands: the
# C search skips ahead on a pattern that starts and ends with letters, but not on one with
# a quote, which a JSON body is full of (100 KB: 19 us against 100 us); a regular
# expression is slower still.
_MODEL_KEY = b"model"
_SYSTEM_KEY = b"system"
_COLON = re.compile(rb"\s*:\s*")
_BEFORE_KEY = frozenset(b"{, \t\r\n")
_QUOTE = ord('"')
# An escaped d, e, l, m or o (\u0064-\u006f): a key "model" could be spelled with one, which
# the literal search above would miss. For "system": an escaped e, m, s, t or y. Each is
# looked for only from the first place its prefix appears.
_ESCAPED_LETTER = (b"\\u006", re.compile(rb"\\u006[4-9a-fA-F]"))
_ESCAPED_SYSTEM_LETTER = (b"\\u00", re.compile(rb"\\u00(?:6[5dD]|7[349])"))


def rewrite_model(body: bytes, parsed: Parsed, model: str) -> bytes:
    """``body`` with its top-level ``"model"`` naming ``model`` instead of ``parsed.name``.

    Spliced into the bytes when the body spells exactly one key ``"model"`` literally and
    its value as one of the two usual encodings of the name; otherwise the parsed document
    is encoded again (escaping what UTF-8 cannot carry, such as a lone surrogate).
    """
    spliced = _splice(body, _MODEL_KEY, _ESCAPED_LETTER, parsed.name, _named(model))
    if spliced is not None:
        return spliced
    value = dict(parsed.value)
    value["model"] = model
    return encode_body(value)


def system_blocks(body: bytes, parsed: Parsed, model: str) -> bytes:
    """A Messages ``body`` whose top-level ``"system"`` is a string, with that string as
    one text block instead (:func:`._messages.system_as_blocks`), naming
    ``model``.

    Spliced into the bytes as :func:`rewrite_model` does (the string keeps its own spelling
    inside the block), so a large body is not encoded again; when a splice cannot be
    proven right, the parsed document is edited and encoded again.
    """
    system = parsed.value.get("system")
    assert isinstance(system, str)
    spliced = _splice(body, _SYSTEM_KEY, _ESCAPED_SYSTEM_LETTER, system, _as_block)
    if spliced is not None and parsed.name != model:
        spliced = _splice(spliced, _MODEL_KEY, _ESCAPED_LETTER, parsed.name, _named(model))
    if spliced is not None:
        return spliced
    value = dict(parsed.value)
    system_as_blocks(value)
    value["model"] = model
    return encode_body(value)


def encode_body(value: dict[str, Any]) -> bytes:
    """A body again, from its edited document: the one place the gateway re-encodes one (a
    body it did not edit goes as the client sent it)."""
    try:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: send it \u-escaped, as JSON allows
        return json.dumps(value).encode("ascii")


def _named(name: str) -> Callable[[bytes], bytes]:
    token = json.dumps(name).encode("ascii")
    return lambda _old: token


def _as_block(token: bytes) -> bytes:
    return b'[{"type": "text", "text": ' + token + b"}]"


def _splice(
    body: bytes,
    key: bytes,
    escaped: tuple[bytes, re.Pattern[bytes]],
    old: str,
    new: Callable[[bytes], bytes],
) -> bytes | None:
    """``body`` with the value of its one top-level ``key``, a string spelled as one of the
    usual encodings of ``old``, replaced by ``new(that spelling)``; None unless the body
    spells exactly one such key literally and none with an escape (then that key is the
    top-level one the parse found)."""
    values: list[int] = []
    at = body.find(key)
    while at >= 0:
        end = at + len(key)
        if (
            at > 1
            and body[at - 1] == _QUOTE
            and body[at - 2] in _BEFORE_KEY
            and body[end : end + 1] == b'"'
        ):
            colon = _COLON.match(body, end + 1)
            if colon is not None:
                values.append(colon.end())
                if len(values) > 1:
                    return None
        at = body.find(key, end)
    if len(values) != 1 or _escapes(body, escaped):
        return None
    start = values[0]
    for token in _spellings(old):
        if body.startswith(token, start):
            return b"".join((body[:start], new(token), body[start + len(token) :]))
    return None


def _escapes(body: bytes, escaped: tuple[bytes, re.Pattern[bytes]]) -> bool:
    """Whether ``body`` holds one of the ``escaped`` spellings, looked for from the first
    backslash (most bodies have none, and one byte is found many times faster)."""
    first = body.find(b"\\")
    if first < 0:
        return False
    prefix, pattern = escaped
    first = body.find(prefix, first)
    return first >= 0 and pattern.search(body, first) is not None


def _spellings(name: str) -> list[bytes]:
    spellings = [json.dumps(name).encode("ascii")]
    with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate has no UTF-8 spelling
        spellings.append(json.dumps(name, ensure_ascii=False).encode("utf-8"))
    return spellings
