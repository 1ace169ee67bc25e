"""The changes every request gets: the served model's id, a block ``system``, the served betas.

They cannot be switched off and are not named in ``rewrote=``: upstream knows a model by
its own id only (a request may name a route id, an alias, Claude Code's spelling), the
service requires ``system`` as blocks (VS Code's agent host converts a string for that
reason: microsoft/vscode ``src/vs/platform/agentHost/node/shared/copilotApiService.ts``),
and only the betas in :data:`._betas.SERVED_BETAS` go upstream.

A request no other change edited goes upstream as the bytes the client sent with the model
id (and a string ``system``) spliced in: :meth:`Change.splice` finds the value of the one
top-level key and replaces it, and says it cannot (None) when the body's spelling leaves
any doubt, and then the edited document is encoded again instead.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable

from .._json import dumps
from ._betas import filter_betas, forwarded_betas
from ._change import Change, RequestEdit

__all__ = ["Betas", "BlockSystem", "ModelId", "Splice"]

ALL_APIS = frozenset({"chat", "responses", "messages", "embeddings"})


class Splice(Change):
    """An always-on change with a way to act on the bytes as sent."""

    switchable = False

    def splice(self, edit: RequestEdit, body: bytes) -> bytes | None:
        """``body`` changed as :meth:`request` would change the document (``body`` itself
        when there is nothing to change), or None when it cannot be done on the bytes."""
        raise NotImplementedError


class Betas(Change):
    name = "betas"
    apis = ALL_APIS
    summary = "anthropic-beta values the Copilot API does not serve are dropped"
    evidence = "anthropic-beta"
    check = "anthropic_beta"
    agents = ("claude-code",)
    switchable = False

    def request(self, edit: RequestEdit) -> None:
        if edit.beta_values:
            edit.betas = forwarded_betas(edit.beta_values)

    def headers(
        self, edit: RequestEdit, headers: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        values = [value for name, value in headers if name == b"anthropic-beta"]
        if not values:
            return headers
        kept = [(name, value) for name, value in headers if name != b"anthropic-beta"]
        joined = filter_betas(values)
        if joined is not None:
            kept.append((b"anthropic-beta", joined))
        return kept


class ModelId(Splice):
    name = "model"
    apis = ALL_APIS
    summary = "the body's model names the served model by its Copilot id"
    evidence = "model names"
    check = (
        "none: the service answers 400 model_not_supported for a name its inventory does "
        "not list (docs/WIRE.md, Model inventory)"
    )

    def request(self, edit: RequestEdit) -> None:
        model = edit.route.model_id
        if edit.value.get("model") != model:
            edit.edit()["model"] = model

    def splice(self, edit: RequestEdit, body: bytes) -> bytes | None:
        asked, model = edit.original.get("model"), edit.route.model_id
        if asked == model:
            return body
        if not isinstance(asked, str):
            return None
        return _splice(body, _MODEL_KEY, _ESCAPED_MODEL_LETTER, asked, _named(model))


class BlockSystem(Splice):
    name = "system"
    apis = frozenset({"messages"})
    summary = "a string system is sent as one text block"
    evidence = "system as blocks"
    check = "system_text"
    agents = ("claude-code",)

    def request(self, edit: RequestEdit) -> None:
        system = edit.value.get("system")
        if isinstance(system, str):
            edit.edit()["system"] = [{"type": "text", "text": system}]

    def splice(self, edit: RequestEdit, body: bytes) -> bytes | None:
        system = edit.original.get("system")
        if not isinstance(system, str):
            return body
        return _splice(body, _SYSTEM_KEY, _ESCAPED_SYSTEM_LETTER, system, _as_block)


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
_ESCAPED_MODEL_LETTER = (b"\\u006", re.compile(rb"\\u006[4-9a-fA-F]"))
_ESCAPED_SYSTEM_LETTER = (b"\\u00", re.compile(rb"\\u00(?:6[5dD]|7[349])"))


@functools.lru_cache(maxsize=256)
def _named(name: str) -> Callable[[bytes], bytes]:
    """The splice writing ``name`` (a request names one of a few models: kept)."""
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


def _spellings(name: str) -> tuple[bytes, ...]:
    """The usual spellings of a string value (escaped to ASCII, and as UTF-8), kept for
    the short names (model names) asked again and again."""
    if len(name) <= 256:
        return _short_spellings(name)
    return _spelled(name)


def _spelled(name: str) -> tuple[bytes, ...]:
    ascii_only = json.dumps(name).encode("ascii")
    try:
        utf8 = json.dumps(name, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8 spelling
        return (ascii_only,)
    return (ascii_only,) if utf8 == ascii_only else (ascii_only, utf8)


_short_spellings = functools.lru_cache(maxsize=256)(_spelled)


def encode(edit: RequestEdit, body: bytes) -> bytes:
    """The edited document as the body that goes upstream (``body``: the client's, which
    says whether the fast writer may write it)."""
    return dumps(edit.value, source=body)
