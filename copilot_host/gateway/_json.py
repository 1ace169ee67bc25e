"""JSON as the gateway reads and writes it: one nesting limit, one encoder.

Bodies are read with the library's one reading of a request body
(:func:`copilot_host._internal.read_json_body`: UTF-8 JSON without a byte-order mark; orjson
on ``[fast]``, the standard library otherwise). The two parsers differ in how deep they
nest before they give up (orjson at 1,024 levels, the standard library when the interpreter's
stack runs out, which depends on where it is called), so neither is relied on: a document
nested deeper than :data:`MAX_DEPTH` is refused the same on both stacks, checked once after
parsing (:func:`too_deep`, a loop). Every walker over a body in the gateway is a loop too,
so no body can make one of them recurse.

:func:`dumps` is the one encoder: UTF-8 where it can be, ``\\u``-escaped where a lone
surrogate (which JSON's escapes can carry and UTF-8 cannot) rules that out.
"""

from __future__ import annotations

import json
from typing import Any

from copilot_host._internal import read_json_body, write_json_body

__all__ = ["MAX_DEPTH", "NotJson", "dumps", "loads", "too_deep"]

# The deepest nesting of arrays and objects read; agents' bodies nest a few tens of levels
# (a tool's JSON schema inside a tool inside the request).
MAX_DEPTH = 256
_OPENERS = (b"[", b"{")


class NotJson(ValueError):
    """Not a JSON text the gateway reads: malformed, not UTF-8, or nested too deep."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def too_deep(value: object, body: bytes | None = None, *, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels deep (the
    top-level container is level 1). With the ``body`` it was parsed from, a body with no
    more openers than ``limit`` is known shallow enough without a walk."""
    if body is not None and sum(body.count(opener) for opener in _OPENERS) <= limit:
        return False
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > limit:
            return True
        deeper = depth + 1
        for child in container.values() if isinstance(container, dict) else container:
            if isinstance(child, dict | list):
                stack.append((child, deeper))
    return False


def loads(body: bytes) -> Any:
    """The JSON value of ``body``; :class:`NotJson` when it is not one the gateway reads."""
    try:
        value = read_json_body(body)
    except RecursionError:
        raise NotJson("nested too deep") from None
    except ValueError as exc:
        # Past its parser's own depth (orjson's 1,024 levels, then ``json``'s stack, which
        # gives out near 1,000) the reader raises ValueError for a RecursionError it met:
        # nested too deep, as the limit below would say, not "not JSON".
        if isinstance(exc.__context__, RecursionError):
            raise NotJson("nested too deep") from None
        raise NotJson("not JSON") from None
    if too_deep(value, body):
        raise NotJson("nested too deep")
    return value


def dumps(value: Any, *, source: bytes | None = None) -> bytes:
    """``value`` as JSON text: UTF-8, or ASCII with ``\\u`` escapes when it holds a lone
    surrogate. Given the ``source`` body it was read from, the library's fast writer may
    be used (:func:`copilot_host._internal.write_json_body`: orjson on ``[fast]``) when the
    source cannot hold a number orjson would write differently."""
    if source is not None:
        # Two searches of a literal: a regular expression of the two is many times slower
        # (find(), as ``in`` on bytes raises and drops a TypeError first on Python 3.11).
        finite = source.find(b"NaN") < 0 and source.find(b"Infinity") < 0
        return write_json_body(value, finite=finite)
    try:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value).encode("ascii")
