"""What the gateway's server does to its process: descriptors, accept errors, stop signals.

* :func:`raise_open_file_limit`: the soft ``RLIMIT_NOFILE`` goes up to the hard limit at
  start (when the hard limit is unlimited and the system refuses a large soft one, as
  macOS does past ``kern.maxfilesperproc``, to the most it allows), and
  :func:`connection_bound` is how many client connections that allows
  (:mod:`._hardening` keeps to it);
* :func:`quiet_accept_errors`: an ``accept()`` that fails for want of descriptors is one
  warning line per episode (until a connection is accepted again), never a traceback per
  attempt. (The gateway runs on asyncio's own loop: uvloop's libuv would instead accept
  and at once close the connections it has no descriptor for, without a word.)
* :func:`capture_stop_signals`: :data:`STOP_SIGNALS` stop the server the orderly way.

Each is a process-wide effect: the serving layer applies it only when asked
(``GatewayServer``'s options, which ``copilot-host serve`` and ``run`` turn on).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "STOP_SIGNALS",
    "capture_stop_signals",
    "connection_bound",
    "quiet_accept_errors",
    "raise_open_file_limit",
]

# The signals that stop a gateway the orderly way (requests in flight get the grace
# period): SIGINT and SIGTERM, SIGHUP (the terminal it runs in was closed) and SIGQUIT
# (Ctrl-\, whose default would also dump core: a file holding the process's memory,
# tokens included).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

# Descriptors kept out of the connection bound: the listener, the log, the store, the
# event loop's own, the DNS resolver's and the TLS library's.
RESERVED_DESCRIPTORS = 64
# The gateway's upstream pool holds at most this many connections (UPSTREAM_LIMITS).
UPSTREAM_CONNECTIONS = 512
# What the soft open-file limit is raised to when the hard one is unlimited, in order:
# a large finite one (some systems refuse an unlimited soft limit), then what macOS
# allows a process by default (kern.maxfilesperproc, read at the time) and OPEN_MAX.
_UNLIMITED_SOFT = 1 << 20
_OPEN_MAX = 10_240
# A connection set up this long after the last failed accept() was accepted by a retry
# that worked: the episode is over (asyncio retries a failed accept a second later).
_EPISODE_GAP = 0.5
# How a failed accept() is announced by asyncio (selector_events).
_ACCEPT_FAILED = "socket.accept() out of system resource"

_log = logging.getLogger("copilot_host.gateway")


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one (or, when the system refuses that,
    to the most it allows); returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return soft
    if hard != resource.RLIM_INFINITY:
        targets = [hard]
    else:
        # Some systems refuse an unlimited soft limit, and macOS refuses one past
        # kern.maxfilesperproc even below an unlimited hard limit.
        targets = [_UNLIMITED_SOFT, *_per_process_files(), _OPEN_MAX]
    for target in sorted({t for t in targets if t > soft}, reverse=True):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            continue  # the next one down
        return target
    return soft  # kept as it was: the bound follows what is in force


def _per_process_files() -> list[int]:
    """macOS's ``kern.maxfilesperproc`` (the most descriptors a process may have), when
    this is macOS and it can be read."""
    import platform

    return _kern_maxfilesperproc() if platform.system() == "Darwin" else []


def _kern_maxfilesperproc() -> list[int]:  # pragma: no cover - macOS only; CI runs Linux
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        value = ctypes.c_int(0)
        size = ctypes.c_size_t(ctypes.sizeof(value))
        if libc.sysctlbyname(
            b"kern.maxfilesperproc", ctypes.byref(value), ctypes.byref(size), None, 0
        ):
            return []
    except (OSError, AttributeError, TypeError):
        return []
    return [value.value] if value.value > 0 else []


def connection_bound(open_files: int) -> int:
    """How many client connections may be held at once with ``open_files`` descriptors:
    each may hold one upstream connection while its request runs (at most the pool's
    size), and some descriptors are the process's own. An unlimited ``open_files``
    (``RLIM_INFINITY``) counts as 2**20."""
    if open_files == resource.RLIM_INFINITY or open_files < 0:
        open_files = 1 << 20
    usable = max(open_files - RESERVED_DESCRIPTORS, 2)
    return max(usable - min(UPSTREAM_CONNECTIONS, usable // 2), 1)


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """Make a failed ``accept()`` (out of descriptors) one warning per episode on
    ``loop``; returns the callback that ends an episode (call it when a connection is
    accepted). Every other exception goes to the handler that was there.

    asyncio accepts in batches and sets each connection up a moment later, so the
    connections of the batch that ran out are set up after its failure: only one set up
    :data:`_EPISODE_GAP` seconds or more after the last failure (asyncio retries a second
    later) ends the episode."""
    previous = loop.get_exception_handler()
    last_failure: float | None = None

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        nonlocal last_failure
        if context.get("message") == _ACCEPT_FAILED:
            if last_failure is None:
                error = context.get("exception")
                reason = getattr(error, "strerror", None) or type(error).__name__
                _log.warning(
                    "cannot accept connections (%s): too many open; new connections wait "
                    "until some close",
                    reason,
                )
            last_failure = loop.time()
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)

    def accepted() -> None:
        nonlocal last_failure
        if last_failure is not None and loop.time() - last_failure >= _EPISODE_GAP:
            last_failure = None

    return accepted


@contextmanager
def capture_stop_signals(
    on_signal: Callable[[int, Any], None], captured: list[int]
) -> Iterator[None]:
    """:data:`STOP_SIGNALS` taken by ``on_signal`` while the server runs; afterwards each
    signal in ``captured`` is raised again, for the caller's own handling. Only in the
    main thread (Python delivers signals nowhere else); a signal ignored at start
    (``nohup``) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [s for s in STOP_SIGNALS if signal.getsignal(s) not in (signal.SIG_IGN, None)]
    previous = {s: signal.signal(s, on_signal) for s in taken}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    for again in reversed(captured):
        signal.raise_signal(again)
