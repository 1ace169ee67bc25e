"""One flight however many callers, and the memory of its last failure.

Both single flights of the library — the session resolver's exchange and the gateway's
registration — are this one mechanism:

* a **flight** is one piece of work whose result everyone who needs it shares: the first
  caller starts it, the others join it. At most one is current; a new one starts only after
  the one before it has ended, so the far side never sees two at once.
* its result is published through a ``concurrent.futures.Future`` that is RUNNING from the
  start, so a waiter on any thread or event loop can wait for it, and a waiter that gives up
  (a timeout, a cancelled task, a client that hung up) can never cancel the work itself;
* the **generation** counts invalidations: a flight started before one is no longer
  current, and its owner discards what it brings;
* the **failure memory**: for a moment (``until``) callers who must have the result get the
  last failure again, so a burst of callers while the far side fails costs one attempt, not
  one each; for longer (``retry_at``) an optional attempt made while a good old result is
  still in hand (an advisory session refresh, a background re-registration) is held back.

The state (:class:`SingleFlight`) only decides; it is not thread-safe by itself: its
owner's lock or event loop guards it. Running and waiting (:class:`Flight`) are safe from
any thread or loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Generic, TypeVar

__all__ = ["Flight", "SingleFlight", "for_waiter"]

K = TypeVar("K")
R = TypeVar("R")
T = TypeVar("T")
E = TypeVar("E", bound=BaseException)


def for_waiter(exc: E) -> E:
    """A copy of a shared failure for one more waiter.

    Raising the very same exception object in several threads at once tangles their
    tracebacks; each waiter raises its own copy, chained to the original.
    """
    try:
        twin = copy.copy(exc)
    except Exception:  # an exotic exception type: share the original
        return exc
    if type(twin) is not type(exc) or twin is exc:
        return exc
    twin.__cause__ = exc
    return twin


class Flight(Generic[K, R]):
    """One piece of work for ``key``, shared by everyone who needs its result.

    Made by :meth:`SingleFlight.start`. It lands once, with a result or an exception;
    every waiter gets that result, or raises its own copy of that exception.
    """

    __slots__ = ("_future", "generation", "key", "previous", "task")

    def __init__(self, key: K, generation: int, previous: Flight[K, R] | None) -> None:
        self.key = key
        self.generation = generation
        # The flight still running from before: this one's work starts after it ends.
        self.previous = previous
        # The asyncio task running the work (launch()): the event loop holds tasks only
        # weakly, and an owner that closes cancels it.
        self.task: asyncio.Task[None] | None = None
        self._future: concurrent.futures.Future[R | BaseException] = concurrent.futures.Future()
        # RUNNING futures cannot be cancelled: a waiter that is cancelled (asyncio's
        # wrap_future passes cancellation on) cannot cancel the shared work.
        self._future.set_running_or_notify_cancel()

    def __repr__(self) -> str:
        state = "landed" if self._future.done() else "flying"
        return f"Flight({state}, generation {self.generation})"

    def done(self) -> bool:
        return self._future.done()

    # -- running ----------------------------------------------------------------------------

    def run(
        self, work: Callable[[], T], finish: Callable[[T | BaseException], R | BaseException]
    ) -> None:
        """Do the work in this thread (after the previous flight ended) and land it.

        ``finish`` turns what ``work`` returned or raised into the flight's result (it
        may return an exception to land: the waiters raise it); it must retire the flight
        from its :class:`SingleFlight`. An interrupt (``KeyboardInterrupt``) is landed too,
        then raised on.
        """
        with _Finishing(self, finish) as land:
            if self.previous is not None:
                self.previous._future.result()
            land(work())

    def launch(
        self,
        work: Callable[[], Awaitable[T]],
        finish: Callable[[T | BaseException], R | BaseException],
        *,
        name: str | None = None,
    ) -> None:
        """:meth:`run` as a task of its own on the running loop: the work outlives any
        waiter that is cancelled, so that loop must keep running until it lands."""
        self.task = asyncio.get_running_loop().create_task(self._fly(work, finish), name=name)

    async def _fly(
        self,
        work: Callable[[], Awaitable[T]],
        finish: Callable[[T | BaseException], R | BaseException],
    ) -> None:
        with _Finishing(self, finish) as land:
            if self.previous is not None:
                await asyncio.wrap_future(self.previous._future)
            land(await work())

    # -- waiting ----------------------------------------------------------------------------

    def outcome(self, timeout: float | None = None) -> R:
        """Block this thread until the flight lands (``TimeoutError`` after ``timeout``
        seconds; the flight goes on)."""
        return _told(self._future.result(timeout))

    async def landed(self) -> R:
        """Wait on the running loop until the flight lands; cancelling this wait leaves the
        flight running."""
        return _told(await asyncio.wrap_future(self._future))


def _told(result: R | BaseException) -> R:
    if isinstance(result, BaseException):
        raise for_waiter(result)
    return result


class _Finishing(Generic[T, R]):
    """The one way a flight ends, for both shells: what the work returned or raised goes
    through ``finish`` to every waiter; an interrupt goes on after the waiters are told."""

    __slots__ = ("_finish", "_flight")

    def __init__(
        self, flight: Flight[Any, R], finish: Callable[[T | BaseException], R | BaseException]
    ) -> None:
        self._flight: Flight[Any, R] = flight
        self._finish = finish

    def __enter__(self) -> Callable[[T], None]:
        return self._land

    def _land(self, result: T | BaseException) -> None:
        self._flight._future.set_result(self._finish(result))

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if exc is None or self._flight.done():
            return False
        self._land(exc)
        return isinstance(exc, Exception)


class SingleFlight(Generic[K, R]):
    """The current flight, the generation and the last failure (see the module docstring).

    Not thread-safe: its owner's lock or event loop guards it.
    """

    __slots__ = ("_error", "_flight", "_key", "_retry_at", "_until", "generation")

    def __init__(self) -> None:
        self.generation = 0
        self._flight: Flight[K, R] | None = None
        self._key: K | None = None
        self._error: Exception | None = None
        self._until = float("-inf")
        self._retry_at = float("-inf")

    # -- flights ----------------------------------------------------------------------------

    def flying(self) -> Flight[K, R] | None:
        """The current flight (started in this generation, not yet retired), if any."""
        flight = self._flight
        if flight is not None and flight.generation == self.generation:
            return flight
        return None

    def out(self) -> bool:
        """Whether any flight, current or invalidated, is still to be retired."""
        return self._flight is not None

    def start(self, key: K) -> Flight[K, R]:
        """A new current flight for ``key``; it runs after the one still out, if any."""
        previous = self._flight
        if previous is not None and previous.done():
            previous = None
        flight: Flight[K, R] = Flight(key, self.generation, previous)
        self._flight = flight
        return flight

    def is_current(self, flight: Flight[K, R]) -> bool:
        """Whether nothing was invalidated since ``flight`` started."""
        return flight.generation == self.generation

    def invalidate(self) -> None:
        """The flight out, if any, is no longer current: its result is for nobody."""
        self.generation += 1

    def retire(self, flight: Flight[K, R]) -> None:
        """``flight`` is landing: a later caller starts a new one."""
        if self._flight is flight:
            self._flight = None
        flight.previous = None  # do not keep a chain of old flights alive
        flight.task = None

    # -- the last failure -------------------------------------------------------------------

    def remember(
        self, key: K, error: Exception, *, until: float, retry_at: float | None = None
    ) -> None:
        """Tell ``error`` again to ``key``'s callers until ``until``; hold optional
        attempts back until ``retry_at`` (no later than ``until`` when not given)."""
        self._key, self._error, self._until = key, error, until
        self._retry_at = until if retry_at is None else retry_at

    def backing_off(self, key: K, now: float) -> bool:
        """Whether an optional attempt for ``key`` should wait (a recent one failed)."""
        return self._error is not None and now < self._retry_at and self._key == key

    def recall(self, key: K, now: float) -> Exception | None:
        """A copy of the failure to raise for ``key`` now, or None (nothing remembered for
        it, or its time is over)."""
        error = self._error
        if error is None or now >= self._until or self._key != key:
            return None
        return for_waiter(error)

    def forget(self) -> None:
        self._key, self._error = None, None
        self._until = self._retry_at = float("-inf")
