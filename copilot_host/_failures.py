"""A failure remembered for a while: told again instead of tried again.

Both single flights of the library (the session resolver's exchange, the gateway's
registration) share one work among every caller, and both remember the last failure:

* for a moment (``until``), callers who must have the result get that failure again, so
  a burst of callers while the far side fails costs one attempt, not one each;
* for longer (``retry_at``), an optional attempt made while a good old result is still in
  hand (an advisory session refresh, a background re-registration) is not tried again:
  the old result keeps serving.

This is that memory, once: keyed by who the attempt was for (a login), on the caller's
monotonic clock.
"""

from __future__ import annotations

import copy
from typing import Generic, TypeVar

__all__ = ["FailureMemory", "for_waiter"]

K = TypeVar("K")


def for_waiter(exc: Exception) -> Exception:
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


class FailureMemory(Generic[K]):
    """The last failure for one key, until a deadline (not thread-safe: its owner's lock
    or event loop guards it)."""

    __slots__ = ("_error", "_key", "_retry_at", "_until")

    def __init__(self) -> None:
        self._key: K | None = None
        self._error: Exception | None = None
        self._until = float("-inf")
        self._retry_at = float("-inf")

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
