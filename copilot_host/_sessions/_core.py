"""The resolver's state machine, shared by the thread and asyncio shells.

It decides — never waits, never calls the host. Every decision runs under one
``threading.Lock`` (the *invalidation lock*) that is never held across I/O or an ``await``,
so the same core is safe from many threads and from several event loops at once.

Vocabulary:

* a **flight** is one exchange with the host (:mod:`copilot_host._flight`, the single
  flight the gateway's registration uses too). At most one is current; callers who need a
  new session join it instead of starting their own, from any thread or loop.
* the **generation** counts invalidations (explicit ``refresh()``, ``invalidate()``, a login
  change). A flight remembers the generation it started in and may install its session only
  if nothing was invalidated meanwhile; otherwise its result is discarded unseen.
* a waiter either **must** have a new session (none usable: no session, mandatory window,
  explicit refresh) — a failure raises for it — or **may** take one (the advisory leader,
  who falls back to the still-valid session when the refresh fails).
* a **rejection** is the inference origin refusing a session (401, or 403 on a session
  from the cache): it costs at most one automatic exchange per ``min_refresh_interval``,
  however many requests are refused, so an outage or a proxy answering 401 to everything
  cannot turn into an exchange storm against GitHub.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from .._clock import Clock, SystemClock
from .._errors import (
    LoginChangedError,
    NotLoggedInError,
    ResponseError,
    SessionError,
)
from .._flight import Flight, SingleFlight, for_waiter
from .._hosts import CopilotSession, LoginIdentity
from .._safety._redact import register_secret
from ._policy import RefreshPolicy, SessionState

__all__ = ["MAX_ROUNDS", "Landing", "LandingKind", "Plan", "SessionCore"]

log = logging.getLogger("copilot_host.session")

# How many times one call may go round "plan, wait, find the result discarded" before it
# gives up: each round needs an invalidation or login change racing it, so more than a few
# means something keeps invalidating (a flapping store, a host that returns another login).
MAX_ROUNDS = 8


class LandingKind(enum.Enum):
    INSTALLED = "installed"  # the new session is current
    FAILED = "failed"  # the exchange raised
    STALE = "stale"  # invalidated meanwhile: the result was discarded
    CANCELLED = "cancelled"  # the exchange itself was interrupted


@dataclass(frozen=True, slots=True)
class Landing:
    """How a flight ended, as every waiter sees it."""

    outcome: LandingKind
    session: CopilotSession | None = None
    error: Exception | None = field(default=None, repr=False)


class Plan(NamedTuple):
    """Wait for ``flight`` (after running it, when ``leader``)."""

    flight: Flight[LoginIdentity, Landing]
    leader: bool
    must: bool
    # An explicit refresh(): its failure is not remembered for the automatic ones.
    explicit: bool = False


def error_code(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else type(exc).__name__


class SessionCore:
    """Session, generation and the current flight; all decisions, no waiting."""

    __slots__ = (
        "_clock",
        "_exchanged_at",
        "_flights",
        "_hot",
        "_lock",
        "_logged_out",
        "_policy",
        "_session",
        "_time",
        "installs",
        "monotonic",
    )

    def __init__(self, clock: Clock, policy: RefreshPolicy, *, logged_out: str) -> None:
        self._lock = threading.Lock()
        # What "no login" says: the host's words (see not_logged_in in the resolver).
        self._logged_out = logged_out
        self._clock = clock
        # The hot path reads the clocks on every call: skip two Python-level hops when the
        # clock is the system one.
        self.monotonic: Callable[[], float] = (
            time.monotonic if type(clock) is SystemClock else clock.monotonic
        )
        self._time: Callable[[], float] = time.time if type(clock) is SystemClock else clock.time
        self._policy = policy
        self._session: CopilotSession | None = None
        # (session, identity, fresh until monotonic, fresh until wall): what the lock-free
        # hot path compares against; replaced as a whole, so one read sees one session.
        self._hot: tuple[CopilotSession, LoginIdentity, float, float] | None = None
        # The exchange in flight and the generation; and the last automatic exchange that
        # failed, by login: callers in the next min_refresh_interval get that error again
        # instead of a new exchange.
        self._flights: SingleFlight[LoginIdentity, Landing] = SingleFlight()
        # How many sessions were installed so far (the current one is number ``installs``;
        # read before a request asks for one, it tells whether that request's session was
        # exchanged for it), and when the last exchange ended (installed or failed): what a
        # rejection is judged against.
        self.installs = 0
        self._exchanged_at = float("-inf")

    # -- reading ----------------------------------------------------------------------------

    def hot(self, identity: LoginIdentity | None) -> CopilotSession | None:
        """The current session if it is FRESH for ``identity``; lock-free, the common path."""
        hot = self._hot
        if hot is None or not (self.monotonic() < hot[2] and self._time() < hot[3]):
            return None
        if hot[1] is identity:
            return hot[0]
        if hot[1] != identity:
            return None
        # The same login in another object (the host read its record again): keep this one,
        # so the next calls decide with ``is``. Only if no other thread replaced the session
        # meanwhile.
        with self._lock:
            if self._hot is hot:
                self._hot = (hot[0], identity, hot[2], hot[3])
        return hot[0]

    def describe(self) -> str:
        """A secret-free word on the state, for reprs."""
        session = self._session
        if session is None:
            return "no session"
        clock = self._clock
        return self._policy.state(session, clock.monotonic(), clock.time()).value

    # -- deciding ---------------------------------------------------------------------------

    def plan(
        self, identity: LoginIdentity | None, *, start: bool = True
    ) -> CopilotSession | Plan | None:
        """What a ``get()`` for ``identity`` does now.

        Returns a session to serve, or a :class:`Plan` (lead or join a flight). With
        ``start=False`` it only answers whether a session can be served without waiting
        (``None`` when not) and never starts anything.
        """
        with self._lock:
            if identity is None:
                if self._session is not None or self._flights.out():
                    log.debug("no login is available: dropping the session")
                    self._drop()
                raise NotLoggedInError(self._logged_out)
            session = self._session
            if session is not None and session.identity != identity:
                log.debug("the login changed: dropping the session minted for the old one")
                self._drop()
                session = None
            if session is not None:
                served = self._plan_with(session, identity, start)
                if served is not None:
                    return served
            # No usable session: everyone waits for one flight.
            flight = self._flights.flying()
            if flight is not None:
                if flight.key == identity:
                    return Plan(flight, leader=False, must=True) if start else None
                # A flight for another login is still out: it cannot install (the
                # generation moved on when the login changed) and we need our own.
                self._flights.invalidate()
            if not start:
                return None
            failure = self._flights.recall(identity, self._clock.monotonic())
            if failure is not None:
                # Storm guard for failures: a burst of requests while GitHub is failing
                # costs one exchange per interval, not one per request.
                raise failure
            log.debug("no usable session: exchanging")
            return Plan(self._flights.start(identity), leader=True, must=True)

    def _plan_with(
        self, session: CopilotSession, identity: LoginIdentity, start: bool
    ) -> CopilotSession | Plan | None:
        """The decision while a session for ``identity`` exists; None: no usable session."""
        clock = self._clock
        now, wall = clock.monotonic(), clock.time()
        policy = self._policy
        state = policy.state(session, now, wall)
        if state is SessionState.FRESH:
            return session
        # Storm guard: the server issued this moments ago; asking again at once would not
        # give a better token, only more exchanges (e.g. a host of 1-second tokens).
        lifetime = session.expires_monotonic - session.received_monotonic
        received_wall = session.expires_wall - lifetime
        interval = policy.min_refresh_interval
        if now - session.received_monotonic < interval and wall - received_wall < interval:
            return session
        if state is SessionState.ADVISORY:
            if self._flights.flying() is not None:
                return session  # somebody is refreshing: keep using the valid session
            if self._flights.backing_off(identity, now):
                return session  # the last advisory attempt failed recently: back off
            if not start:
                return None
            log.debug("advisory window: refreshing while the session stays in use")
            return Plan(self._flights.start(identity), leader=True, must=False)
        if state is SessionState.EXPIRED:
            self._session = None
            self._hot = None
        return None

    def begin_refresh(self, identity: LoginIdentity | None) -> Plan:
        """An explicit refresh: discard the session now and lead a new flight."""
        with self._lock:
            self._drop()
            if identity is None:
                raise NotLoggedInError(self._logged_out)
            log.debug("explicit refresh: the old session is discarded")
            return Plan(self._flights.start(identity), leader=True, must=True, explicit=True)

    def invalidate(self, session: CopilotSession | None = None) -> None:
        """Discard the session (only if it is still ``session``, when one is given)."""
        with self._lock:
            if session is not None and self._session is not session:
                return  # already replaced: the request that saw a 401 used an old one
            log.debug("session invalidated")
            self._drop()

    def rejected(self, session: CopilotSession, asked: int, *, forbidden: bool) -> bool:
        """The origin refused ``session`` (401; 403 with ``forbidden``) for a request that
        asked for a session when ``installs`` was ``asked``. Returns whether to send it once
        more with the session a ``get()`` gives next; drops ``session`` when that needs a
        new exchange.

        * A 403 on a session exchanged for this very request is the answer, not an expiry.
        * A new exchange is started at most once per ``min_refresh_interval``: within it,
          the refusal is returned as it is and the session kept.
        * A session already replaced (another request was refused too) is simply retried
          with its replacement, which costs no exchange.
        """
        with self._lock:
            now = self._clock.monotonic()
            current = self._session
            recent = now - self._exchanged_at < self._policy.min_refresh_interval
            if current is session:
                if forbidden and self.installs > asked:
                    return False
                if recent:
                    log.debug("session refused again within the refresh bound: kept")
                    return False
                log.debug("session refused by the origin: exchanging once more")
                self._drop()
                return True
            if current is not None:
                return True
            return self._flights.flying() is not None or not recent

    def is_current(self, flight: Flight[LoginIdentity, Landing]) -> bool:
        return self._flights.is_current(flight)

    # -- finishing --------------------------------------------------------------------------

    def finish(self, plan: Plan, result: CopilotSession | BaseException | None) -> Landing:
        """Record how the flight ``plan`` leads ended: what every waiter gets.

        ``None`` means the flight was skipped because it was invalidated before it began.
        """
        with self._lock:
            landing = self._land(plan, result)
            self._flights.retire(plan.flight)
        return landing

    def _land(self, plan: Plan, result: CopilotSession | BaseException | None) -> Landing:
        flight = plan.flight
        if isinstance(result, BaseException) and not isinstance(result, Exception):
            log.debug("session exchange interrupted (%s)", type(result).__name__)
            return Landing(LandingKind.CANCELLED)
        if result is not None:
            self._exchanged_at = self._clock.monotonic()
        if not self._flights.is_current(flight) or result is None:
            # Invalidated meanwhile: whatever came back belongs to a discarded past.
            log.debug("discarding the result of an exchange that began before an invalidation")
            return Landing(LandingKind.STALE)
        if isinstance(result, Exception):
            if not plan.explicit:
                now = self._clock.monotonic()
                delay = self._policy.advisory_retry_delay
                self._flights.remember(
                    flight.key,
                    result,
                    until=now + self._policy.min_refresh_interval,
                    retry_at=now + delay,
                )
                session = self._session
                clock = self._clock
                if (
                    session is not None
                    and self._policy.state(session, clock.monotonic(), clock.time())
                    is SessionState.ADVISORY
                ):
                    log.warning(
                        "session refresh failed (%s); the current session stays in use "
                        "until its mandatory deadline; next attempt in %.0f s or later",
                        error_code(result),
                        delay,
                    )
                else:
                    log.debug("session exchange failed (%s)", error_code(result))
            else:
                log.debug("session exchange failed (%s)", error_code(result))
            return Landing(LandingKind.FAILED, error=result)
        if result.identity != flight.key:
            return Landing(
                LandingKind.FAILED,
                error=LoginChangedError(
                    "the host returned a session for another login than the one asked for"
                ),
            )
        try:
            _check_token(result)
        except ResponseError as exc:
            return Landing(LandingKind.FAILED, error=exc)
        self._install(result, flight.key)
        # The policy in force says when: the host's times are only what the server asked.
        fresh_until, _ = self._policy.fresh_until(result)
        expires, _ = self._policy.expiry(result)
        log.debug(
            "new session installed; refresh due in %.0f s, expires in %.0f s",
            fresh_until - result.received_monotonic,
            expires - result.received_monotonic,
        )
        return Landing(LandingKind.INSTALLED, session=result)

    # -- internals (lock held) --------------------------------------------------------------

    def _drop(self) -> None:
        self._flights.invalidate()
        self._session = None
        self._hot = None
        self._flights.forget()

    def _install(self, session: CopilotSession, identity: LoginIdentity) -> None:
        register_secret(session.token)
        self.installs += 1
        self._session = session
        self._flights.forget()
        fresh_mono, fresh_wall = self._policy.fresh_until(session)
        # The login as the host gave it when the exchange began (equal to the session's):
        # the host hands the same object back while the login is unchanged, so the hot
        # path's identity check is one ``is``, not a dataclass comparison.
        self._hot = (session, identity, fresh_mono, fresh_wall)


def _check_token(session: CopilotSession) -> None:
    # The token goes into an HTTP header verbatim: printable ASCII only, so it can neither
    # break the header encoding nor inject another header line. Judged in a helper, so that
    # no local of the frame that raises holds the value (tracebacks that show locals).
    if not _header_safe(session.token.reveal()):
        raise ResponseError(
            "the host returned a session token that cannot be sent in an HTTP header"
        )


def _header_safe(token: str) -> bool:
    return bool(token) and token.isascii() and token.isprintable() and " " not in token


def settle(landing: Landing, plan: Plan) -> CopilotSession | None:
    """What one waiter makes of a landing: a session, None (plan again) or a raise."""
    if landing.outcome is LandingKind.INSTALLED:
        return landing.session
    if landing.outcome is LandingKind.FAILED and plan.must:
        assert landing.error is not None
        raise landing.error if plan.leader else for_waiter(landing.error)
    return None


def gave_up() -> SessionError:
    return SessionError(
        "the session was invalidated again and again while it was being obtained; try again",
        code="refresh_failed",
        retryable=True,
    )
