"""One answer through the answer changes: each JSON document or event parsed once.

The answer changes of a request (:meth:`Change.answer`) each give an
:class:`~._change.AnswerMapper`; :class:`AnswerPass` applies them in the reverse of the
table's order (the last change made to the request is the first undone in its answer), to
a whole answer's document or to each event of a stream. Only a document or an event that
holds one of the mappers' markers is parsed at all; one that nothing changed goes on as the
bytes that came, and a changed one is written again by the one encoder (a lone surrogate in
a name or in the model's output is carried, ``\\u``-escaped).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _sse
from .._json import NotJson, dumps, loads
from ._change import AnswerMapper

__all__ = ["AnswerPass"]


class AnswerPass:
    """The answer changes of one request, as one pass (see the module docstring)."""

    __slots__ = ("_mappers", "_markers")

    def __init__(self, mappers: Sequence[AnswerMapper]) -> None:
        self._mappers = tuple(reversed(mappers))
        self._markers = tuple({mapper.marker for mapper in mappers})

    def _marked(self, data: bytes) -> bool:
        return any(marker in data for marker in self._markers)

    def _parse(self, data: bytes) -> dict[str, Any] | None:
        try:
            value = loads(data)
        except NotJson:
            return None
        return value if isinstance(value, dict) else None

    def whole(self, body: bytes) -> bytes:
        """A whole (JSON) answer with its document mapped."""
        if not self._marked(body):
            return body
        value = self._parse(body)
        if value is None:
            return body
        mapped = value
        for mapper in self._mappers:
            mapped = mapper.document(mapped)
        return body if mapped is value else dumps(mapped)

    def events(self, block: bytes) -> bytes:
        """Complete events (``block`` ends where an event does, or the stream ended) with
        their data mapped."""
        if not self._marked(block):
            return block
        out: list[bytes] = []
        changed = False
        for raw in _sse.split(block):
            if not self._marked(raw):
                out.append(raw)
                continue
            event = _sse.Event(raw)
            data = event.data
            value = self._parse(data) if data is not None else None
            if value is None:
                out.append(raw)
                continue
            mapped = value
            for mapper in self._mappers:
                mapped = mapper.event(mapped)
            if mapped is value:
                out.append(raw)
            else:
                changed = True
                out.append(event.rewritten(mapped))
        return b"".join(out) if changed else block
