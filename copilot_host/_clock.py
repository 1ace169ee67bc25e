"""Clocks are parameters: the library never reads time through anything else."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SYSTEM_CLOCK", "SystemClock"]


class Clock(Protocol):
    """``monotonic()`` orders deadlines. ``time()`` (the wall clock) is shown to people and
    also bounds a session's life: it keeps counting while a laptop is suspended, when the
    monotonic clock stops (see :mod:`copilot_host._sessions._policy`)."""

    def monotonic(self) -> float: ...

    def time(self) -> float: ...


class SystemClock:
    __slots__ = ()

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK: Clock = SystemClock()
