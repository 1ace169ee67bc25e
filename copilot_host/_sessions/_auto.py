"""Copilot Auto in the core: the session a host obtains, the model one request goes to, and
one Auto exchange for everyone that needs it.

Copilot's Auto model selection (docs/WIRE.md, "Copilot Auto") works by session: the client
asks the service for an Auto session, then sends each request of it to a *concrete* model,
naming that model in the body and carrying the session's token in the header
``Copilot-Session-Token``. Which calls obtain a session is the host's business
(:class:`ServesAuto`: the GitHub adapter tries the pool call first and the routing call
only when the pool call is refused); the core keeps the sessions, decides which model a
request goes to, and shares one exchange among the requests that need one:

* a session is kept per (API, tier) and reused until :data:`RENEW_BEFORE` seconds before
  its expiry (on the host's monotonic clock); a session whose models the client picks from
  (``chosen`` False) also serves the other APIs it has a model for;
* the model is the first of the session's ``models`` that the inventory lists on the
  request's API (never another API: the request is never translated), preferring one that
  takes images when the request carries any; the model's billing is lowered by the
  session's discount for it (``discounted_costs``);
* concurrent requests that find no usable session share one exchange (a
  :class:`copilot_host._flight.SingleFlight` per key, as the session resolver shares its
  own); a failure is told again for :data:`FAILURE_MEMORY` seconds without another call,
  and a session none of whose models speaks the API is such a failure, never kept.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._api import ApiProtocol
from .._clock import Clock
from .._errors import EntitlementError, SessionError
from .._flight import Flight, SingleFlight
from .._hosts import CopilotSession, LoginIdentity
from .._safety._secret import Secret
from ._core import MAX_ROUNDS, gave_up
from ._inspect import last_user_text
from ._pipeline import AUTO_SESSION

if TYPE_CHECKING:
    from .._catalog._specs import ModelSpec

__all__ = [
    "AUTO_MODEL",
    "FAILURE_MEMORY",
    "PROMPT_LIMIT",
    "RENEW_BEFORE",
    "AutoChooser",
    "AutoPick",
    "AutoProbe",
    "AutoSession",
    "ServesAuto",
    "auto_unavailable",
    "prompt_of",
    "session_entry",
]

# The model id of Auto's route and of the gateway's Auto model (VS Code's picker entry is
# the pseudo model id "auto": AutoChatEndpoint.pseudoModelId).
AUTO_MODEL = "auto"
# A session is renewed this long before it expires (VS Code refreshes 5 minutes early).
RENEW_BEFORE = 300.0
# The most of the person's last text an Auto routing call carries (what VS Code sends).
PROMPT_LIMIT = 2000
# A failed exchange is told to the callers of its key again for this long.
FAILURE_MEMORY = 1.0

_Key = tuple[ApiProtocol, str | None]


@dataclass(frozen=True, slots=True)
class AutoSession:
    """An Auto session as a host obtained it, in memory only.

    ``models`` are the ids it may serve, in the service's order of preference (the pool a
    client picks from; or the one model the service chose, ``chosen`` True);
    ``discounts`` the fraction off each one's price, as ``(id, fraction)`` pairs;
    ``expires_monotonic`` is on the host's monotonic clock, measured from receipt. The
    token goes only in ``Copilot-Session-Token``; its repr shows none."""

    token: Secret = field(repr=False)
    models: tuple[str, ...]
    identity: LoginIdentity
    expires_monotonic: float
    expires_wall: float
    discounts: tuple[tuple[str, float], ...] = ()
    chosen: bool = False

    def usable(self, now: float) -> bool:
        """Whether a request may still go with it at ``now`` (monotonic)."""
        return now < self.expires_monotonic - RENEW_BEFORE

    def discount(self, model_id: str) -> float:
        for listed, fraction in self.discounts:
            if listed == model_id:
                return fraction
        return 0.0


@dataclass(frozen=True, slots=True)
class AutoProbe:
    """What registration learns of Auto (:meth:`ServesAuto.auto_probe`): the session read
    (None when none could be), whether to register Auto's route (``offered``), and whether
    the plan can use only Auto (``only``: its named models are not registered)."""

    session: AutoSession | None
    offered: bool
    only: bool = False


@dataclass(frozen=True, slots=True)
class AutoPick:
    """The concrete model one Auto request goes to (its billing lowered by the session's
    discount) and the session it goes with."""

    model: ModelSpec
    session: AutoSession

    @property
    def model_id(self) -> str:
        return self.model.model_id


@runtime_checkable
class ServesAuto(Protocol):
    """A host that obtains Copilot Auto sessions (both methods are coroutines on an
    asynchronous host).

    ``auto_probe`` is registration's one bounded look: whether the account has Auto, and
    the session it read. ``auto_session`` obtains a session for a request: ``prompt`` is
    the person's last text (at most :data:`PROMPT_LIMIT` characters), for a service that
    chooses the model by it; ``vision`` says the request carries images; ``tier`` the
    routing profile (None: the service's default). A refusal raises
    :class:`~copilot_host.EntitlementError` with code ``auto_unavailable``."""

    def auto_probe(self, session: CopilotSession) -> AutoProbe: ...

    def auto_session(
        self, session: CopilotSession, *, prompt: str, vision: bool = False, tier: str | None = None
    ) -> AutoSession: ...


def auto_unavailable(message: str) -> EntitlementError:
    return EntitlementError(message, code="auto_unavailable")


def prompt_of(protocol: ApiProtocol, value: object) -> str:
    """The text an Auto routing call carries: the request's last user text, cut to
    :data:`PROMPT_LIMIT` characters ("" when it has none)."""
    text = last_user_text(protocol, value) or ""
    return text[:PROMPT_LIMIT]


def _waited_too_long(limit: float) -> SessionError:
    return SessionError(
        f"no Copilot Auto session within {limit:g} s (the call is still running); try again",
        code="timeout",
        retryable=True,
    )


class AutoChooser:
    """The Auto sessions of one registration, and the model each request goes to (see the
    module docstring). Thread-safe; its state is guarded by one lock never held across
    I/O, so it serves threads and event loops alike.

    ``inventory`` is every model of the account (a pick is read from it); ``seed`` the
    session registration read, if any; ``max_wait`` how long a caller waits for a shared
    exchange before it gets ``SessionError`` (``timeout``)."""

    def __init__(
        self,
        host: ServesAuto,
        inventory: Iterable[ModelSpec],
        *,
        clock: Clock,
        max_wait: float,
        seed: AutoSession | None = None,
    ) -> None:
        self._host = host
        self._specs: Mapping[str, ModelSpec] = {spec.model_id: spec for spec in inventory}
        self._clock = clock
        self._max_wait = max_wait
        self._lock = threading.Lock()
        self._sessions: dict[_Key, AutoSession] = {}
        self._flights: dict[_Key, SingleFlight[LoginIdentity, AutoSession]] = {}
        self.exchanges = 0
        if seed is not None:
            self._install(seed, None)

    def __repr__(self) -> str:
        return f"AutoChooser({len(self._sessions)} sessions)"

    # -- which model --------------------------------------------------------------------

    def serving(self, found: AutoSession, protocol: ApiProtocol, vision: bool) -> ModelSpec | None:
        """The model of ``found`` a request on ``protocol`` goes to, or None: the first
        listed on that API, the first that also takes images when ``vision``."""
        first: ModelSpec | None = None
        for model_id in found.models:
            spec = self._specs.get(model_id)
            if spec is None or protocol not in spec.protocols:
                continue
            if not vision or "image" in spec.input_modalities:
                return spec
            if first is None:
                first = spec
        return first

    def _pick(
        self, found: AutoSession, session: CopilotSession, protocol: ApiProtocol, vision: bool
    ) -> AutoPick | None:
        if found.identity != session.identity:
            return None
        spec = self.serving(found, protocol, vision)
        if spec is None:
            return None
        return AutoPick(spec.discounted(found.discount(spec.model_id)), found)

    def _hot(self, session: CopilotSession, key: _Key, vision: bool) -> AutoPick | None:
        found = self._sessions.get(key)
        if found is None or not found.usable(self._clock.monotonic()):
            return None
        return self._pick(found, session, key[0], vision)

    # -- the blocking shell -----------------------------------------------------------------

    def choose(
        self,
        session: CopilotSession,
        protocol: ApiProtocol,
        value: object,
        *,
        vision: bool = False,
        tier: str | None = None,
    ) -> AutoPick:
        """The model a request on ``protocol`` (its parsed body ``value``) goes to, with an
        exchange first when no usable session serves it. Blocking: a blocking host's."""
        key = (protocol, tier)
        for _ in range(MAX_ROUNDS):
            planned = self._plan(session, key, vision)
            if isinstance(planned, AutoPick):
                return planned
            flight, leader = planned
            if leader:
                work = partial(self._ask, session, protocol, value, vision, tier)
                flight.run(work, partial(self._finish, key, flight))
            try:
                found = flight.outcome(timeout=self._max_wait)
            except TimeoutError:
                raise _waited_too_long(self._max_wait) from None
            pick = self._pick(found, session, protocol, vision)
            if pick is not None:
                return pick
        raise gave_up()

    # -- the asyncio shell ------------------------------------------------------------------

    async def achoose(
        self,
        session: CopilotSession,
        protocol: ApiProtocol,
        value: object,
        *,
        vision: bool = False,
        tier: str | None = None,
    ) -> AutoPick:
        """:meth:`choose` on an event loop: a blocking host's exchange runs in a worker
        thread; an asynchronous host's as a task of its own, which a cancelled caller
        leaves running for the others."""
        key = (protocol, tier)
        hot = self._hot(session, key, vision)
        if hot is not None:
            return hot
        if not inspect.iscoroutinefunction(self._host.auto_session):
            return await asyncio.to_thread(
                self.choose, session, protocol, value, vision=vision, tier=tier
            )
        for _ in range(MAX_ROUNDS):
            planned = self._plan(session, key, vision)
            if isinstance(planned, AutoPick):
                return planned
            flight, leader = planned
            if leader:
                flight.launch(
                    partial(self._aask, session, protocol, value, vision, tier),
                    partial(self._finish, key, flight),
                    name="copilot-host auto session",
                )
            try:
                async with asyncio.timeout(self._max_wait):
                    found = await flight.landed()
            except TimeoutError:
                raise _waited_too_long(self._max_wait) from None
            pick = self._pick(found, session, protocol, vision)
            if pick is not None:
                return pick
        raise gave_up()

    # -- one exchange for everyone ----------------------------------------------------------

    def _plan(
        self, session: CopilotSession, key: _Key, vision: bool
    ) -> AutoPick | tuple[Flight[LoginIdentity, AutoSession], bool]:
        """A pick from a usable session, or the flight to wait for (and whether this
        caller runs it). A failure still remembered is raised."""
        with self._lock:
            hot = self._hot(session, key, vision)
            if hot is not None:
                return hot
            flights = self._flights.setdefault(key, SingleFlight())
            failed = flights.recall(session.identity, self._clock.monotonic())
            if failed is not None:
                raise failed
            flight = flights.flying()
            if flight is not None and flight.key == session.identity:
                return flight, False
            return flights.start(session.identity), True

    def _ask(
        self,
        session: CopilotSession,
        protocol: ApiProtocol,
        value: object,
        vision: bool,
        tier: str | None,
    ) -> AutoSession:
        self.exchanges += 1
        return self._host.auto_session(
            session, prompt=prompt_of(protocol, value), vision=vision, tier=tier
        )

    async def _aask(
        self,
        session: CopilotSession,
        protocol: ApiProtocol,
        value: object,
        vision: bool,
        tier: str | None,
    ) -> AutoSession:
        self.exchanges += 1
        asked: Any = self._host.auto_session(
            session, prompt=prompt_of(protocol, value), vision=vision, tier=tier
        )
        found: AutoSession = await asked
        return found

    def _finish(
        self,
        key: _Key,
        flight: Flight[LoginIdentity, AutoSession],
        result: AutoSession | BaseException,
    ) -> AutoSession | BaseException:
        with self._lock:
            flights = self._flights[key]
            flights.retire(flight)
            now = self._clock.monotonic()
            if isinstance(result, AutoSession) and self.serving(result, key[0], False) is None:
                # Kept, it would refuse every request of this API until it expires.
                result = auto_unavailable(
                    "Copilot Auto offered only models not served on "
                    f"{key[0].path} ({', '.join(result.models[:5]) or 'none'}); the request "
                    "is not translated to another API: call Auto on another endpoint"
                )
            if isinstance(result, Exception):
                flights.remember(flight.key, result, until=now + FAILURE_MEMORY)
                return result
            if isinstance(result, BaseException):
                return result
            flights.forget()
            if flights.is_current(flight):
                self._install(result, key)
            return result

    def _install(self, found: AutoSession, key: _Key | None) -> None:
        """Keep ``found`` for ``key``; a session whose models the client picks from also
        for each other API it has a model for and that has no usable session (``key``
        None: registration's, for every such API of the default tier)."""
        if found.chosen and key is not None:
            self._sessions[key] = found
            return
        tier = None if key is None else key[1]
        now = self._clock.monotonic()
        for protocol in ApiProtocol:
            other = (protocol, tier)
            kept = self._sessions.get(other)
            if other != key and kept is not None and kept.usable(now):
                continue
            if self.serving(found, protocol, False) is not None:
                self._sessions[other] = found


def session_entry(pick: AutoPick) -> tuple[bytes, bytes]:
    """The header a request of ``pick``'s session carries."""
    # The adapter admits only printable-ASCII tokens, so this cannot fail.
    return (AUTO_SESSION.encode("ascii"), pick.session.token.reveal().encode("ascii"))
