"""The places a gateway feature plugs into the request path, rather than forking it.

* ``request_headers``: a filter over the client headers the gateway forwards upstream
  (lower-case names, bytes values, in order), given the route; it returns the headers to
  send, after the gateway's own changes (:mod:`copilot_host.gateway._changes`).
* ``observe``: called once per relayed request with its route; it returns an
  :class:`AnswerObserver` (or None) that sees the answer as it is relayed. Reading an
  answer's cost is one.

What the gateway itself changes in requests and answers is its table of changes
(:mod:`copilot_host.gateway._changes`), not a hook.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import httpx2

import copilot_host as ch

__all__ = ["AnswerObserver", "GatewayHooks", "HeaderFilter", "ObserverFactory", "both"]

HeaderFilter = Callable[[ch.ModelRoute, list[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]]


class AnswerObserver(Protocol):
    """Sees one relayed answer. Calls come in this order: ``start`` once; then ``whole``
    once (a JSON answer) or ``events`` per piece (an event stream); then ``end`` once.

    A whole answer is shown before it is sent and the last piece of a stream just before
    it goes, so that the access line (written as the answer ends) can carry what was
    read; every other piece is shown after it was sent, so reading never delays an event.
    What is shown is what the client gets (masked). An observer must not raise.
    """

    def start(self, status: int, headers: httpx2.Headers) -> None: ...

    def whole(self, body: bytes) -> None: ...

    def events(self, block: bytes) -> None:
        """``block``: one or more complete Server-Sent Events (the last piece may hold an
        unfinished one, when the stream ended without its blank line)."""
        ...

    def end(self) -> None: ...


ObserverFactory = Callable[[ch.ModelRoute], AnswerObserver | None]


@dataclass(frozen=True, slots=True)
class GatewayHooks:
    """See the module docstring; the default plugs nothing in."""

    request_headers: HeaderFilter | None = None
    observe: ObserverFactory | None = None


class _Both:
    """Two observers as one: each call goes to the first, then the second."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: AnswerObserver, second: AnswerObserver) -> None:
        self._first, self._second = first, second

    def start(self, status: int, headers: httpx2.Headers) -> None:
        self._first.start(status, headers)
        self._second.start(status, headers)

    def whole(self, body: bytes) -> None:
        self._first.whole(body)
        self._second.whole(body)

    def events(self, block: bytes) -> None:
        self._first.events(block)
        self._second.events(block)

    def end(self) -> None:
        self._first.end()
        self._second.end()


def both(first: AnswerObserver, second: AnswerObserver | None) -> AnswerObserver:
    """``first``, and ``second`` after it when there is one (the gateway's own observer
    comes first, an application's hook second)."""
    return first if second is None else _Both(first, second)
