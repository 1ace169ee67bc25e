"""SIGINT and SIGTERM during a wait become a cancellation, not a crash.

While the login waits for the person, the handlers only record the signal and set the
cancel event the host's wait loop watches: the wait ends at its next check, the host
stores nothing, and the command exits 130 (SIGINT) or 143 (SIGTERM) with a clean
message. A second signal gives up waiting for the worker and exits at once (the store's
writes are atomic, so even then nothing is half-written).

The handlers do no locking and no I/O (setting an Event that only a worker thread waits
on is safe from a handler), because a handler runs between two bytecodes of whatever the
main thread was doing.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

from ._failure import exit_code_for_signal

__all__ = ["SignalCancel"]

_HANDLED = (signal.SIGINT, signal.SIGTERM)


class SignalCancel:
    """Context manager: route SIGINT/SIGTERM to ``cancel`` while inside the block."""

    def __init__(self, cancel: threading.Event) -> None:
        self._cancel = cancel
        self._previous: dict[int, Any] = {}
        self.received: int | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
            self._cancel.set()
            return
        # Second signal: the person insists. Leave now with the first signal's code.
        raise SystemExit(exit_code_for_signal(self.received))

    def __enter__(self) -> SignalCancel:
        # Python delivers signals to the main thread only; elsewhere (an embedding app
        # running us in a thread) the caller's own handling stays in charge.
        if threading.current_thread() is threading.main_thread():
            for signum in _HANDLED:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
