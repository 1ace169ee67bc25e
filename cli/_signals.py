"""SIGINT and SIGTERM end every command the same way, wherever they land.

``main`` installs one handler for both signals for the length of the call. The first
signal is raised in the main thread as :class:`Stop` (a ``BaseException``, as
``KeyboardInterrupt`` is, so no ``except Exception`` swallows it): a blocked socket read,
lock wait or sleep returns at once, every ``with`` and ``finally`` on the way out runs, and
the group reports it like any other failure: one stderr line, the JSON error in ``--json``
mode, exit 130 (SIGINT) or 143 (SIGTERM). The login wait asks for a softer landing with
:meth:`Signals.cancelling`: there the handler only sets the event the host's wait watches
(an ``Event.set`` is safe from a handler), so the worker thread stores nothing and the wait
says how it ended.

Once a signal has been taken, or once a failure is being reported, the outcome is decided
and a further signal ends the process at once (``os._exit``) with the first signal's code:
the way out may itself be blocked (a cancelled worker winding down, a full pipe), and the
person insists. Nothing is left half-written even then. The commands' own writes in the
main thread are unlinks and renames (a logout, a damaged record set aside); saving a login
happens in the login worker thread, which signals never interrupt; and every store write
is a temp file renamed over the target, which a killed process leaves either undone (its
temp file is swept by the next writer) or done.

The handler is installed only where it can be undone exactly: in the main thread (Python
delivers signals nowhere else, so an application calling ``main`` from another thread
keeps its own handling), over a disposition Python can put back (``signal.getsignal``
answers None for a handler set outside Python), and not over ``SIG_IGN``: a command started
with a signal ignored (a background job of a script) keeps ignoring it, as Python itself
does for SIGINT.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import FrameType
from typing import Any

from ._failure import exit_code_for_signal

__all__ = ["Signals", "Stop", "command_signals", "current_signals"]

_HANDLED = (signal.SIGINT, signal.SIGTERM)


class Stop(BaseException):
    """The first SIGINT or SIGTERM of a command, raised where the main thread was."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Signals:
    """The signal state of one ``main`` call."""

    def __init__(self, *, exit_now: Callable[[int], Any] = os._exit) -> None:
        # The process exit of the second signal; a parameter so a unit test can watch it.
        self._exit_now = exit_now
        self._previous: dict[int, Any] = {}
        self._cancel: threading.Event | None = None
        self._decided = False
        self.received: int | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None or self._decided:
            first = self.received if self.received is not None else signum
            self._exit_now(exit_code_for_signal(first))
            return
        self.received = signum
        if self._cancel is not None:
            self._cancel.set()
            return
        raise Stop(signum)

    def install(self, signums: tuple[int, ...] = _HANDLED) -> None:
        """Take ``signums`` (by default SIGINT and SIGTERM; a command may take more, as
        ``serve`` takes SIGHUP and SIGQUIT) for the length of the call."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in signums:
            if signum in self._previous:
                continue
            previous = signal.getsignal(signum)
            if previous is None or previous == signal.SIG_IGN:
                continue
            signal.signal(signum, self._handle)
            self._previous[signum] = previous

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    @property
    def installed(self) -> frozenset[int]:
        return frozenset(self._previous)

    @contextmanager
    def cancelling(self, cancel: threading.Event) -> Iterator[None]:
        """Inside the block a first signal sets ``cancel`` instead of raising."""
        self._cancel = cancel
        try:
            yield
        finally:
            self._cancel = None

    def decide(self) -> None:
        """The outcome is settled (a failure is being reported): a signal now exits at once."""
        self._decided = True


# Per thread (each thread starts with its own context): a command running in another
# thread never sees, or changes, the main thread's handler.
_CURRENT: ContextVar[Signals | None] = ContextVar("copilot_host_cli_signals", default=None)


@contextmanager
def command_signals() -> Iterator[Signals]:
    """The handler for one ``main`` call; a nested call shares the outer one's."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    signals = Signals()
    token = _CURRENT.set(signals)
    signals.install()
    try:
        yield signals
    finally:
        # From here on nothing may raise Stop past the caller: the call is over.
        signals.decide()
        signals.restore()
        _CURRENT.reset(token)


def current_signals() -> Signals:
    """The running command's signal state (an inert one outside ``main``)."""
    signals = _CURRENT.get()
    return signals if signals is not None else Signals()
