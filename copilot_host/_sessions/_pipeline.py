"""The request pipeline: one request's headers and what to do with its answer, decided once.

A sans-IO state machine in the manner of httpx's ``Auth.auth_flow``; it never waits and
never does I/O. Its drivers (``route.auth``'s sync and async flows, which the gateway
drives too) take one request through it so:

1. read the resolver's ``installs``, get the session (however the driver waits for it),
   and send the request with the headers of :meth:`Pipeline.first`;
2. when :meth:`Pipeline.settled` says the answer stands, that is all (most requests);
3. otherwise drive :meth:`Pipeline.after`, a generator that yields *steps* and is sent
   their results, doing only what each step asks:

   * :data:`NEED_SESSION` — send back the session to use (the resolver's ``get()``);
   * :class:`Send` — send the request with exactly these headers, then send back the
     answer's status code;
   * :data:`NEED_ERROR_BODY` — read the answer's body (a small error document) and send
     back its bytes.

   When the generator ends, the last answer stands.

The first steps are not a generator of their own because a generator per request was a
fifth of ``route.auth``'s cost. A request is sent at most twice:

1. A 401, or a 403 on a session from the resolver's cache, asks the resolver whether a new
   exchange is worth it (at most one a second however many requests are refused; never
   for a session exchanged for this very request); if so, the request goes once more with
   the new session. This rule comes first. A 403 whose body is an organisation's policy
   refusing the client (:mod:`._refusals`) is the answer: no session would change it.
2. Otherwise, a 400 ``model_not_supported`` for a model the inventory listed, from a host
   that can switch identities (:class:`SwitchesIdentity`), asks the host for its other
   identity's headers; when it has them, the request goes once more with them. The switch
   is kept only when that answer is a success (2xx); otherwise the host is handed the
   other identity's headers as refused in turn, which switches it back, and that answer
   stands. A switch that worked is remembered for the model it worked for: that model's
   later requests go with it first, whatever other models switched to since, so an
   organisation that serves one model only to one identity and another only to the other
   costs one extra send per model, not one per request (the identity would otherwise flip
   with every request that alternates between them).

The headers sent are the client's own, less every header the pipeline owns
(``Authorization``, ``Copilot-Vision-Request``, ``Copilot-Session-Token`` and the host's
headers, whatever their case), plus the bearer, the host's headers,
``Copilot-Vision-Request: true`` exactly when the body carries image input,
``X-Initiator``: the client's value when it is exactly ``user`` or ``agent``, else the one
read from the body, and on a request of a Copilot Auto session its
``Copilot-Session-Token`` (:mod:`._auto`).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from .._errors import OriginError
from .._hosts import CopilotSession
from .._origin import CopilotEndpoint
from .._safety._text import clean
from ._inspect import INITIATORS, RequestFacts
from ._refusals import refusal_of

__all__ = [
    "AUTO_SESSION",
    "INITIATOR",
    "NEED_ERROR_BODY",
    "NEED_SESSION",
    "VISION",
    "HeaderList",
    "Extra",
    "Identity",
    "Pipeline",
    "Rejections",
    "Send",
    "Step",
    "SwitchesIdentity",
    "check_headers",
]

INITIATOR = "X-Initiator"
VISION = "Copilot-Vision-Request"
# An Auto session's token: sent only with the session it belongs to, never the client's.
AUTO_SESSION = "Copilot-Session-Token"
# The answer to an inference request whose model the service does not serve this identity.
MODEL_NOT_SUPPORTED = "model_not_supported"

HeaderList = list[tuple[bytes, bytes]]
# The header an Auto request carries besides the pipeline's own (None: not an Auto one).
Extra = tuple[bytes, bytes] | None

_INITIATOR_KEY = INITIATOR.lower().encode("ascii")
_AUTO_SESSION_KEY = AUTO_SESSION.lower().encode("ascii")
_VISION_ENTRY = (VISION.encode("ascii"), b"true")
_INITIATOR_NAME = INITIATOR.encode("ascii")
# The values the service knows, by name (the body's reading) and as sent (the client's).
_INITIATORS: dict[str | bytes, bytes] = {}
for _value in INITIATORS:
    _INITIATORS[_value] = _INITIATORS[_value.encode("ascii")] = _value.encode("ascii")


@runtime_checkable
class SwitchesIdentity(Protocol):
    """A host with more than one identity to present (an editor identity and a fallback).

    ``switch_identity`` gets the request-header set the service refused and returns the
    other identity's headers, which its ``request_headers()`` returns from then on; or
    None when it has no other. The pipeline calls it a second time, with the headers it
    was given, when the request failed under them too: that hands the first one back.
    """

    def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None: ...


class Rejections(Protocol):
    """What the pipeline asks of a session resolver (both shells offer it)."""

    @property
    def installs(self) -> int: ...

    def rejected(self, session: CopilotSession, asked: int, *, forbidden: bool) -> bool: ...


class _Need:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NEED_SESSION: Final = _Need("NEED_SESSION")
NEED_ERROR_BODY: Final = _Need("NEED_ERROR_BODY")


@dataclass(frozen=True, slots=True)
class Send:
    """Send the request with exactly ``headers`` (the client's, as decided), then send the
    answer's status code back into the flow."""

    headers: HeaderList


Step = _Need | Send


@dataclass(frozen=True, slots=True)
class Identity:
    """The host's headers as given, checked, and encoded once."""

    given: Mapping[str, str]
    entries: tuple[tuple[bytes, bytes], ...]
    # The client headers never sent as the client set them (lower case): those the
    # pipeline owns, and X-Initiator (whose client value is read before it is dropped).
    dropped: frozenset[bytes]


class Pipeline:
    """The request pipeline of one registration's routes (see the module docstring)."""

    __slots__ = (
        "_by_model",
        "_endpoint",
        "_identity",
        "_listed",
        "_prepared",
        "_resolver",
        "_switcher",
    )

    def __init__(
        self,
        resolver: Rejections,
        endpoint: CopilotEndpoint,
        headers: Mapping[str, str],
        *,
        switcher: SwitchesIdentity | None = None,
        listed: Iterable[str] = (),
    ) -> None:
        self._resolver = resolver
        self._endpoint = endpoint
        self._identity = _identity_of(headers)
        self._switcher = switcher
        self._listed = frozenset(listed)
        # The identity a switch found for a model (listed models only, so bounded).
        self._by_model: dict[str, Identity] = {}
        # What the last session adds to a request, built once per session and identity.
        self._prepared: tuple[CopilotSession, Identity, tuple[tuple[bytes, bytes], ...]] | None
        self._prepared = None

    @property
    def endpoint(self) -> CopilotEndpoint:
        return self._endpoint

    @property
    def presented(self) -> Mapping[str, str]:
        """The host's headers requests present now (its current identity)."""
        return self._identity.given

    def first(
        self,
        facts: RequestFacts,
        client: Sequence[tuple[bytes, bytes]],
        session: CopilotSession,
        extra: Extra = None,
    ) -> tuple[HeaderList, Identity]:
        """The headers of a request's first send with ``session``, and the identity they
        present (for :meth:`after`); ``extra`` is an Auto request's session header."""
        identity = self._identity
        by_model = self._by_model
        if by_model and facts.model is not None:
            identity = by_model.get(facts.model, identity)
        return self._compose(client, session, identity, facts, extra), identity

    def settled(self, status: int, facts: RequestFacts) -> bool:
        """Whether the answer to a first send stands with no further step: anything but a
        refusal of the session (401, 403) or, from a host that can switch identities, a
        400 for a model the inventory listed."""
        if status in (401, 403):
            return False
        return status != 400 or self._switcher is None or facts.model not in self._listed

    def after(
        self,
        facts: RequestFacts,
        client: Sequence[tuple[bytes, bytes]],
        *,
        session: CopilotSession,
        identity: Identity,
        asked: int,
        status: int,
        extra: Extra = None,
    ) -> Generator[Step, object, None]:
        """The steps after a first send with ``session`` and ``identity`` (from
        :meth:`first`) was answered with ``status``, ``asked`` being the resolver's
        ``installs`` read before that session was got. ``client`` is the request's headers
        as the client set them (name, value) in bytes, not changed meanwhile (httpx2's
        ``Headers.raw`` is a fresh list)."""
        resolver = self._resolver
        if status in (401, 403):
            if status == 403:
                # An organisation's policy refusing this client is no stale session: a new
                # one would be refused the same way (the body says which it is).
                body = yield NEED_ERROR_BODY
                if isinstance(body, bytes) and refusal_of(status, body) is not None:
                    return
            if resolver.rejected(session, asked, forbidden=status == 403):
                renewed = yield NEED_SESSION
                assert isinstance(renewed, CopilotSession)
                yield Send(self._compose(client, renewed, self._identity, facts, extra))
            return
        switcher = self._switcher
        if status != 400 or switcher is None or facts.model not in self._listed:
            return
        body = yield NEED_ERROR_BODY
        if not isinstance(body, bytes) or error_code_of(body) != MODEL_NOT_SUPPORTED:
            return
        other = switcher.switch_identity(identity.given)
        if other is None:
            return
        before = self._identity
        switched = self._adopt(other)
        resent = yield Send(self._compose(client, session, switched, facts, extra))
        if isinstance(resent, int) and 200 <= resent < 300:
            assert facts.model is not None  # a listed model
            self._by_model[facts.model] = switched
            return
        # The other identity fared no better (refused too, or the organisation refuses it
        # outright): keeping it would send every later request, for every model, as a
        # client this account may not use. The host goes back; this answer stands.
        self._by_model.pop(facts.model or "", None)
        back = switcher.switch_identity(switched.given)
        if back is identity.given:
            self._identity = before if identity is not before else identity
        elif back is not None:
            self._adopt(back)

    def _adopt(self, headers: Mapping[str, str]) -> Identity:
        """Make ``headers`` (from the host's switch) the identity later requests present."""
        current = self._identity
        if headers is not current.given:
            current = self._identity = _identity_of(headers)
        return current

    # -- the headers, once ------------------------------------------------------------------

    def _compose(
        self,
        client: Sequence[tuple[bytes, bytes]],
        session: CopilotSession,
        identity: Identity,
        facts: RequestFacts,
        extra: Extra = None,
    ) -> HeaderList:
        prepared = self._prepared
        if prepared is not None and prepared[0] is session and prepared[1] is identity:
            ours = prepared[2]
        else:
            ours = self._prepare(session, identity)
        dropped = identity.dropped
        sent: HeaderList = []
        initiator: bytes | None = None
        for entry in client:
            lower = entry[0].lower()
            if lower in dropped:
                # Only the two values the service knows are the client's word; anything
                # else is replaced by what the body says.
                if lower == _INITIATOR_KEY and initiator is None and entry[1] in _INITIATORS:
                    initiator = entry[1]
                continue
            sent.append(entry)
        sent += ours
        if facts.vision:
            sent.append(_VISION_ENTRY)
        if initiator is None:
            initiator = _INITIATORS.get(facts.initiator)  # type: ignore[arg-type]
        if initiator is not None:
            sent.append((_INITIATOR_NAME, initiator))
        if extra is not None:
            sent.append(extra)
        return sent

    def _prepare(
        self, session: CopilotSession, identity: Identity
    ) -> tuple[tuple[bytes, bytes], ...]:
        """What ``session`` and ``identity`` add to every request, kept for the next."""
        if session.endpoint != self._endpoint:
            # The one place a session's endpoint meets a route's: the account now lives on
            # another inference host, and these routes point at the old one.
            raise OriginError(
                f"the Copilot session names {session.endpoint.origin}, but these routes were "
                f"registered for {self._endpoint.origin}; register the models again",
                code="origin_mismatch",
            )
        # The resolver admits only printable-ASCII tokens, so this cannot fail.
        bearer = b"Bearer " + session.token.reveal().encode("ascii")
        entries = ((b"Authorization", bearer), *identity.entries)
        self._prepared = (session, identity, entries)
        return entries


def error_code_of(body: bytes) -> str | None:
    """The ``error.code`` of an error answer (the service writes JSON as text/plain)."""
    try:
        value = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    error = value.get("error") if isinstance(value, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


_FORBIDDEN = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "host",
        "cookie",
        "content-length",
        # Decided per request from the body, never fixed by a host.
        VISION.lower(),
        INITIATOR.lower(),
        AUTO_SESSION.lower(),
    }
)


def check_headers(headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Host headers: printable ASCII (no CR/LF injection), none we or httpx2 must own."""
    checked: dict[str, tuple[str, str]] = {}
    for name, value in headers.items():
        if not (isinstance(name, str) and isinstance(value, str)):
            raise TypeError("request headers are str names and values")
        if not name or not (name.isascii() and name.isprintable()) or ":" in name or " " in name:
            raise ValueError(f"not a valid header name: {clean(name, limit=40)!r}")
        if not (value.isascii() and value.isprintable()):
            raise ValueError(f"the {name} header value must be printable ASCII")
        lower = name.lower()
        if lower in _FORBIDDEN:
            raise ValueError(f"{name} is not a header a host may add to every request")
        if lower in checked:
            raise ValueError(f"the {name} header is given twice")
        checked[lower] = (name, value)
    return tuple(checked.values())


def _identity_of(headers: Mapping[str, str]) -> Identity:
    checked = check_headers(headers)
    entries = tuple((name.encode("ascii"), value.encode("ascii")) for name, value in checked)
    dropped = frozenset(
        {b"authorization", VISION.lower().encode("ascii"), _INITIATOR_KEY, _AUTO_SESSION_KEY}
        | {name.lower() for name, _ in entries}
    )
    return Identity(headers, entries, dropped)
