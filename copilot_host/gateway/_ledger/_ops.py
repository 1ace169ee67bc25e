"""What callers queue for the writer thread, and how it answers them (no I/O here).

A :class:`Begin` carries a waiter: a :class:`ThreadWaiter` for a caller in a thread, an
:class:`AsyncWaiter` for one on an event loop (resolved from the writer with one
``call_soon_threadsafe`` per loop per batch). :class:`~._records.End` is queued as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import defaultdict
from dataclasses import dataclass, field

from ._records import Admission, Admitted, End, Start

__all__ = [
    "NOT_RECORDED",
    "Abandon",
    "Answered",
    "AsyncWaiter",
    "Begin",
    "Flush",
    "Op",
    "Query",
    "Stop",
    "ThreadWaiter",
    "answer",
]

NOT_RECORDED = Admitted(None)


class ThreadWaiter:
    """For a caller in a thread: :meth:`wait` until the writer answered."""

    __slots__ = ("_done", "outcome")

    def __init__(self) -> None:
        self._done = threading.Event()
        self.outcome: Admission = NOT_RECORDED

    def settle(self, outcome: Admission) -> None:
        self.outcome = outcome
        self._done.set()

    def wait(self, timeout: float | None) -> Admission:
        self._done.wait(timeout)
        return self.outcome


class AsyncWaiter:
    """For a caller on an event loop: a future of that loop, resolved from the writer
    thread with one ``call_soon_threadsafe`` per loop per batch."""

    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[Admission] = loop.create_future()


Waiter = ThreadWaiter | AsyncWaiter


@dataclass(slots=True)
class Begin:
    """A start to write; its waiter is made only when it is queued (a start written at
    once in the caller's thread needs none)."""

    start: Start
    waiter: Waiter | None = None
    row: int | None = None


@dataclass(slots=True)
class Abandon:
    """The caller stopped waiting for ``begin`` (its task was cancelled before the
    request went upstream): its row, once written, goes again."""

    begin: Begin


@dataclass(slots=True)
class Answered:
    start: Start
    end: End


@dataclass(slots=True)
class Query:
    login: str
    time: float
    done: threading.Event = field(default_factory=threading.Event)
    figures: tuple[float, float, int] = (0.0, 0.0, 0)


@dataclass(slots=True)
class Flush:
    done: threading.Event = field(default_factory=threading.Event)


class Stop:
    pass


Op = Begin | Abandon | End | Answered | Query | Flush | Stop


def _settle_all(pairs: list[tuple[asyncio.Future[Admission], Admission]]) -> None:
    for future, outcome in pairs:
        if not future.done():
            future.set_result(outcome)


def answer(answers: list[tuple[Begin, Admission]]) -> None:
    """Tell each waiter its outcome: thread waiters at once, each loop's futures in one
    callback on that loop."""
    by_loop: defaultdict[
        asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Admission], Admission]]
    ] = defaultdict(list)
    for begin, outcome in answers:
        waiter = begin.waiter
        if isinstance(waiter, AsyncWaiter):
            by_loop[waiter.loop].append((waiter.future, outcome))
        elif waiter is not None:
            waiter.settle(outcome)
    for loop, pairs in by_loop.items():
        # A closed loop has no one waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle_all, pairs)
