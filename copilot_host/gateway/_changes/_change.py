"""What a change to the wire is: one object, its metadata, and the typed hooks it implements.

Every rewrite the gateway makes to a request, to an answer or to a stream event, and every
answer the gateway gives itself, is one :class:`Change` in one ordered table
(:mod:`copilot_host.gateway._changes`). A change declares its ``name`` (what the access
line's ``rewrote=`` and ``COPILOT_HOST_REWRITES`` say), the APIs it acts on, the
``evidence`` (its row in docs/WIRE.md), the emulator ``check`` that refuses the unchanged
shape (a name of :data:`copilot_host.testing.CHECKS`, or ``"none: "`` and why), the
``agents`` that send the shape, whether it can be switched off, and the ``transports`` it
acts on (``"http"``, ``"ws"``: a request that came as a WebSocket message, both by
default). It implements the hooks of the sides it acts on, as a mitmproxy addon does:

* ``request(edit)``: change the request (:class:`RequestEdit`: copy on write; nothing it
  does is seen unless it calls :meth:`RequestEdit.edit`);
* ``headers(edit, headers)``: change the headers that go upstream;
* ``answer(edit)``: a :class:`AnswerMapper` for this request's answer, or None;
* ``local(edit)``: the gateway's own answer to the request (:class:`LocalAnswer`), or None;
* ``reshape(api, status, body, headers)``: an upstream answer replaced whole.

A hook must not raise for any JSON value in any field (the fuzz tests feed every entry
hostile structure) and must be linear in the body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import copilot_host as ch

from .._protocols import Api

__all__ = [
    "AnswerMapper",
    "Change",
    "LocalAnswer",
    "RequestEdit",
    "Reshaped",
    "Side",
]


class Side:
    """The sides a change acts on (a change may act on more than one)."""

    REQUEST = "request"
    HEADERS = "headers"
    ANSWER = "answer"
    LOCAL = "local"
    RESHAPE = "reshape"


@dataclass(frozen=True, slots=True)
class LocalAnswer:
    """An answer the gateway gives itself instead of sending the request upstream."""

    body: bytes
    stream: bool = False
    status: int = 200


@dataclass(frozen=True, slots=True)
class Reshaped:
    """An upstream answer a change replaced: the new body, ``Retry-After`` seconds (None:
    none), and the one line the gateway logs about it."""

    body: bytes
    retry_after: int | None
    line: str


class AnswerMapper(Protocol):
    """What one change does to one answer's JSON: a whole answer's document, and a stream's
    event data, each returned as it was (the same object) when nothing changed. ``marker``
    is a byte string every document or event it would change contains: others are neither
    parsed nor shown to it."""

    marker: bytes

    def document(self, value: dict[str, Any]) -> dict[str, Any]: ...

    def event(self, data: dict[str, Any]) -> dict[str, Any]: ...


class RequestEdit:
    """One request as the changes see it: the document as the client sent it
    (``original``, never edited), the one being edited (``value``: the original until a
    change calls :meth:`edit`, a shallow copy from then on, so a change copies any nested
    container it edits), the route serving it, and what the changes leave for later ones
    and for the answer."""

    __slots__ = (
        "_edited",
        "api",
        "applied",
        "asked",
        "beta_values",
        "betas",
        "local",
        "original",
        "removed",
        "route",
        "serial",
        "tools",
        "tools_changed",
        "value",
    )

    def __init__(
        self,
        api: Api,
        value: dict[str, Any],
        route: ch.ModelRoute,
        beta_values: list[bytes] | tuple[bytes, ...] = (),
    ) -> None:
        self.api = api
        self.original = value
        self.value = value
        self.route = route
        # The client's anthropic-beta header values, and the served betas among them,
        # which go upstream with the request (._splices.Betas reads them first).
        self.beta_values = beta_values
        self.betas: frozenset[str] = frozenset()
        # The names of the changes applied, in order (the access line's rewrote=).
        self.applied: list[str] = []
        # Names (or, for name-less tools, types) of the tools a change removed.
        self.removed: set[str] = set()
        # The tools that went upstream under another name or shape (._tools), and whether
        # a change removed or reshaped the request's tools (then ._tool_choice looks).
        self.tools: Any = None
        self.tools_changed = False
        self.local: LocalAnswer | None = None
        # The model name as the client gave it (made fit to show), and a number unique
        # among this gateway's own answers: what an answer the gateway writes names.
        self.asked = ""
        self.serial = 0
        self._edited = False

    @property
    def edited(self) -> bool:
        return self._edited

    @property
    def max_output(self) -> int | None:
        return self.route.spec.max_output_tokens

    def edit(self) -> dict[str, Any]:
        """The document to change: a shallow copy of the client's, made once."""
        if not self._edited:
            self.value = dict(self.original)
            self._edited = True
        return self.value

    def did(self, name: str) -> None:
        self.applied.append(name)

    def release(self) -> None:
        """Drop the parsed documents: once the body is encoded only the bytes travel on,
        and a large tree should not live as long as the answer does."""
        self.original = self.value = {}


class Change:
    """One change to the wire (see the module docstring). Subclasses set the metadata
    and override the hooks of the sides they act on; an instance holds no state between
    requests."""

    name: ClassVar[str]
    apis: ClassVar[frozenset[str]]
    summary: ClassVar[str]
    evidence: ClassVar[str]
    check: ClassVar[str]
    agents: ClassVar[tuple[str, ...]] = ()
    # Always-on changes (the model id, the block system, the beta filter) cannot be turned
    # off and are not named in rewrote=.
    switchable: ClassVar[bool] = True
    # Gateway paths the change answers itself (count_tokens), besides the APIs' own.
    paths: ClassVar[frozenset[str]] = frozenset()
    # How the requests it acts on came: over HTTP, or as a WebSocket message.
    transports: ClassVar[frozenset[str]] = frozenset({"http", "ws"})

    @property
    def sides(self) -> frozenset[str]:
        """The sides this change acts on: the hooks it overrides."""
        found = {
            side
            for side, hook in (
                (Side.REQUEST, "request"),
                (Side.HEADERS, "headers"),
                (Side.ANSWER, "answer"),
                (Side.LOCAL, "local"),
                (Side.RESHAPE, "reshape"),
            )
            if getattr(type(self), hook) is not getattr(Change, hook)
        }
        return frozenset(found)

    def acts_on(self, api: Api, transport: str | None = None) -> bool:
        """Whether it acts on ``api``'s requests (that came over ``transport``, when given)."""
        return api.name in self.apis and (transport is None or transport in self.transports)

    def request(self, edit: RequestEdit) -> None:
        """Change the request."""

    def headers(
        self, edit: RequestEdit, headers: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        """The headers to send upstream, given those the gateway forwards."""
        return headers

    def answer(self, edit: RequestEdit) -> AnswerMapper | None:
        """What to do to this request's answer."""
        return None

    def local(self, edit: RequestEdit) -> LocalAnswer | None:
        """The gateway's own answer to this request."""
        return None

    def reshape(
        self, api: Api, status: int, body: bytes, headers: Mapping[str, str]
    ) -> Reshaped | None:
        """An upstream answer (read whole) replaced, or None to relay it as it is."""
        return None

    def __repr__(self) -> str:
        return f"<Change {self.name}>"
