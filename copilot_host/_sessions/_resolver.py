"""Session resolvers: the thread and asyncio shells around :mod:`._core`.

Both keep one Copilot session per resolver and hand it out per request:

* ``get()`` asks the host's ``availability()`` first, every time, and never returns a
  session minted for another login (a changed login drops the session and exchanges for
  the new one; no login raises ``NotLoggedInError``);
* a FRESH session is served without a lock; otherwise one exchange runs for everyone. In
  the advisory window only the caller that starts the refresh waits; a failed advisory
  refresh keeps the old session (next attempt no sooner than 30 s later). In the mandatory
  window everyone waits and a failure raises; for the next second (the policy's
  ``min_refresh_interval``) callers get that same error without another exchange, so a
  burst of requests while GitHub fails costs one exchange per second, not one each;
* a caller waits for a shared exchange at most the policy's ``max_wait`` seconds, then
  gets ``SessionError`` (``timeout``, retryable); the exchange itself goes on for the
  others;
* ``refresh()`` discards the session and exchanges; ``invalidate()`` discards it. Both bump
  the generation, so an exchange that started earlier cannot install its result.

A session names its own inference endpoint (vetted by the host when it parsed the
exchange); the resolver does not look at it. Neither shell holds the token anywhere but in
the current :class:`CopilotSession`.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Generic, NoReturn, TypeVar

from .._clock import SYSTEM_CLOCK, Clock
from .._errors import SessionError
from .._flight import Flight
from .._hosts import AsyncCopilotHost, CopilotHost, CopilotSession, LoginIdentity
from ._core import MAX_ROUNDS, Landing, Plan, SessionCore, gave_up, settle
from ._policy import DEFAULT_POLICY, RefreshPolicy

__all__ = ["ASK_HOST", "AsyncSessionResolver", "SessionResolver"]


# peek()'s word for "ask the host who is logged in".
ASK_HOST = object()


def logged_out_message(host: object) -> str:
    """What "no login" says for ``host``: the host's own hint on how to log in (a
    ``login_hint`` string attribute), else the host's class by name."""
    hint = getattr(host, "login_hint", None)
    if isinstance(hint, str) and hint:
        return f"not logged in: {hint}"
    return f"not logged in: {type(host).__name__} has no login"


def _waited_too_long(limit: float) -> SessionError:
    return SessionError(
        f"no Copilot session within {limit:g} s (the exchange with GitHub is still running); "
        "try again",
        code="timeout",
        retryable=True,
    )


_H = TypeVar("_H", CopilotHost, AsyncCopilotHost)


class _ResolverBase(Generic[_H]):
    __slots__ = ("__weakref__", "_core", "_host", "_policy")

    _core: SessionCore
    _policy: RefreshPolicy
    # Both host kinds answer availability() synchronously (a cached stat).
    _host: _H

    def __init__(
        self,
        host: _H,
        *,
        clock: Clock = SYSTEM_CLOCK,
        policy: RefreshPolicy = DEFAULT_POLICY,
    ) -> None:
        self._host = host
        self._policy = policy
        self._core = SessionCore(clock, policy, logged_out=logged_out_message(host))

    def invalidate(self, session: CopilotSession | None = None) -> None:
        """Discard the current session; a refresh already under way cannot install its result.

        With ``session``, discard only if it is still the current one: a request that got a
        401 with a session that has since been replaced must not throw the new one away.
        """
        self._core.invalidate(session)

    @property
    def host(self) -> _H:
        """The host this resolver exchanges with."""
        return self._host

    def peek(self, identity: LoginIdentity | object | None = ASK_HOST) -> CopilotSession | None:
        """The session ``get()`` would return without waiting, or None if it would wait.

        ``identity``: the host's ``availability()`` as the caller read it just now (the
        gateway reads it once per request); left out, the host is asked.
        """
        if identity is ASK_HOST:
            identity = self._host.availability()
        assert identity is None or isinstance(identity, LoginIdentity)
        session = self._core.hot(identity)
        if session is not None:
            return session
        planned = self._core.plan(identity, start=False)
        return planned if isinstance(planned, CopilotSession) else None

    def rejected(self, session: CopilotSession, asked: int, *, forbidden: bool) -> bool:
        """The inference origin refused ``session``: whether to try once more (see
        :meth:`SessionCore.rejected`; ``asked`` is :attr:`installs` when the request asked
        for its session)."""
        return self._core.rejected(session, asked, forbidden=forbidden)

    @property
    def installs(self) -> int:
        """How many sessions this resolver has installed so far."""
        return self._core.installs

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._core.describe()})"

    def __reduce__(self) -> NoReturn:
        raise TypeError("a session resolver holds a live credential and cannot be pickled")

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("a session resolver holds a live credential and cannot be pickled")


class SessionResolver(_ResolverBase[CopilotHost]):
    """Resolves the current session for a blocking :class:`CopilotHost`; thread-safe."""

    __slots__ = ()

    def get(self) -> CopilotSession:
        """The session to use for one request now (see the module docstring)."""
        identity = self._host.availability()
        session = self._core.hot(identity)
        if session is not None:
            return session
        return self._resolve(identity, None)

    def refresh(self) -> CopilotSession:
        """Discard the session and exchange for a new one; a failure leaves no session."""
        identity = self._host.availability()
        return self._resolve(identity, self._core.begin_refresh(identity))

    def _resolve(self, identity: LoginIdentity | None, plan: Plan | None) -> CopilotSession:
        core = self._core
        for _ in range(MAX_ROUNDS):
            if plan is None:
                planned = core.plan(identity)
                if isinstance(planned, CopilotSession):
                    return planned
                assert planned is not None
                plan = planned
            if plan.leader:
                self._fly(plan)
            session = settle(self._wait(plan.flight), plan)
            plan = None
            identity = self._host.availability()
            # The login may have changed while we waited: confirm before handing it out.
            if session is not None and session.identity == identity:
                return session
        raise gave_up()

    def _wait(self, flight: Flight[LoginIdentity, Landing]) -> Landing:
        limit = self._policy.max_wait
        try:
            return flight.outcome(timeout=limit)
        except TimeoutError:
            raise _waited_too_long(limit) from None

    def _fly(self, plan: Plan) -> None:
        flight, core = plan.flight, self._core

        def exchange() -> CopilotSession | None:
            # Invalidated before it began: do not spend an exchange on a dead result.
            return self._host.exchange(flight.key) if core.is_current(flight) else None

        # An interrupt (KeyboardInterrupt) lands as CANCELLED: the waiters plan again.
        flight.run(exchange, partial(core.finish, plan))


class AsyncSessionResolver(_ResolverBase[AsyncCopilotHost]):
    """Resolves the current session for an :class:`AsyncCopilotHost`.

    Several event loops: the state lives behind a thread lock that is never held across an
    ``await``, and waiters wait through thread-safe futures, so one resolver may be used
    from any number of loops (one after another, as repeated ``asyncio.run`` does, or at
    once from several threads). A refresh runs as a task on the loop of the caller that
    started it — cancelling that caller, or any waiter, does not cancel it — so that loop
    must keep running until the refresh ends, and the host's ``exchange`` must work on it.
    """

    __slots__ = ()

    async def get(self) -> CopilotSession:
        """The session to use for one request now (see the module docstring)."""
        identity = self._host.availability()
        session = self._core.hot(identity)
        if session is not None:
            return session
        return await self._resolve(identity, None)

    async def refresh(self) -> CopilotSession:
        """Discard the session and exchange for a new one; a failure leaves no session."""
        identity = self._host.availability()
        return await self._resolve(identity, self._core.begin_refresh(identity))

    async def _resolve(self, identity: LoginIdentity | None, plan: Plan | None) -> CopilotSession:
        core = self._core
        for _ in range(MAX_ROUNDS):
            if plan is None:
                planned = core.plan(identity)
                if isinstance(planned, CopilotSession):
                    return planned
                assert planned is not None
                plan = planned
            if plan.leader:
                self._launch(plan)
            session = settle(await self._wait(plan.flight), plan)
            plan = None
            identity = self._host.availability()
            # The login may have changed while we waited: confirm before handing it out.
            if session is not None and session.identity == identity:
                return session
        raise gave_up()

    async def _wait(self, flight: Flight[LoginIdentity, Landing]) -> Landing:
        limit = self._policy.max_wait
        try:
            # The timeout's cancellation cancels only this wait, never the shared exchange.
            async with asyncio.timeout(limit):
                return await flight.landed()
        except TimeoutError:
            raise _waited_too_long(limit) from None

    def _launch(self, plan: Plan) -> None:
        flight, core = plan.flight, self._core

        async def exchange() -> CopilotSession | None:
            if not core.is_current(flight):
                return None  # invalidated before it began
            return await self._host.exchange(flight.key)

        # Its own task: the refresh outlives any caller that is cancelled.
        flight.launch(exchange, partial(core.finish, plan))
