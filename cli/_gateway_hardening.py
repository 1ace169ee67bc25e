"""What keeps the gateway answering its own user while other local programs misbehave.

Any local user can open connections to a loopback port, key or no key. Left to uvicorn's
defaults, connections that send nothing (or drip a request head a byte at a time) are held
for ever, each costs a descriptor, and once the process has none left the user's own
requests wait in the listen queue while asyncio logs a traceback per failed ``accept()``.
This module bounds all of that:

* :func:`raise_open_file_limit`: the soft ``RLIMIT_NOFILE`` goes up to the hard limit at
  start, so the bounds below are as generous as the account allows.
* :func:`hardened_protocol`: uvicorn's h11 or httptools protocol with

  - a deadline for the request head: a connection that has not sent a complete request
    head within :data:`HEAD_TIMEOUT` seconds of opening (or of its previous answer) is
    closed, idle and dripping alike (uvicorn times only the wait between keep-alive
    requests, and forgets that timer at the first byte);
  - a bound on connections held at once, below what the descriptors allow
    (:func:`connection_bound`): past it the connection that has waited longest without
    sending a request head is closed to make room; when every connection is busy with a
    request, the new one is closed instead;
  - a bounded lingering close: when an answer ends a connection whose request body was
    not read (a refusal, sent with ``Connection: close``), the write side is shut so the
    client reads the answer, and what the client still sends is discarded for at most
    :data:`LINGER_SECONDS` and :data:`LINGER_BYTES`, then the connection is closed. A
    client that keeps uploading gigabytes is cut off instead of read to the end;
  - on httptools, the bound on a request head that h11 keeps by itself
    (:data:`MAX_HEAD_BYTES`): llhttp has none.

* :func:`quiet_accept_errors`: an ``accept()`` that fails for want of descriptors is one
  warning line per episode (until a connection is accepted again), never a traceback per
  attempt. (serve runs on asyncio's own loop: uvloop's libuv would instead accept and at
  once close the connections it has no descriptor for, without a word.)
"""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import _GeneratorContextManager, contextmanager
from typing import Any, cast

import uvicorn  # this module is imported only by serve

__all__ = [
    "HEAD_TIMEOUT",
    "LINGER_BYTES",
    "LINGER_SECONDS",
    "MAX_HEAD_BYTES",
    "STOP_SIGNALS",
    "ConnectionBook",
    "HardenedServer",
    "capture_stop_signals",
    "connection_bound",
    "hardened_protocol",
    "quiet_accept_errors",
    "raise_open_file_limit",
]

# The signals that stop serve the orderly way (requests in flight get the grace period,
# the key file is removed): SIGINT and SIGTERM, SIGHUP (the terminal serve runs in was
# closed) and SIGQUIT (Ctrl-\, whose default would also dump core: a file holding the
# process's memory, tokens included).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

# Seconds a connection has to send a whole request head, from when it opened or its
# previous answer ended. Clients send the head at once; only a stalled or hostile peer
# needs longer.
HEAD_TIMEOUT = 10.0
# Descriptors kept out of the connection bound: the listener, the log, the store, the
# event loop's own, the DNS resolver's and the TLS library's.
RESERVED_DESCRIPTORS = 64
# The gateway's upstream pool holds at most this many connections (UPSTREAM_LIMITS).
UPSTREAM_CONNECTIONS = 512
# A lingering close discards at most this much of an unread body (as much as a body the
# gateway accepts, so a client that sends its whole body before reading still reads the
# refusal), for at most this long.
LINGER_BYTES = 32 * 1024 * 1024
LINGER_SECONDS = 2.0
# The largest request head taken (request line and headers): h11's own default, which
# httptools lacks. The clients' heads are a few KiB.
MAX_HEAD_BYTES = 16 * 1024
# A connection set up this long after the last failed accept() was accepted by a retry
# that worked: the episode is over (asyncio retries a failed accept a second later).
_EPISODE_GAP = 0.5
# How a failed accept() is announced by asyncio (selector_events).
_ACCEPT_FAILED = "socket.accept() out of system resource"

_log = logging.getLogger("copilot_host.gateway")


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one; returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        # Some systems refuse an unlimited soft limit; a large finite one is enough.
        target = max(soft, 1 << 20) if soft != resource.RLIM_INFINITY else soft
    if target != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # kept as it was: the bound follows what is in force
    return soft


def connection_bound(open_files: int) -> int:
    """How many client connections may be held at once with ``open_files`` descriptors:
    each may hold one upstream connection while its request runs (at most the pool's
    size), and some descriptors are the process's own. An unlimited ``open_files``
    (``RLIM_INFINITY``) counts as 2**20."""
    if open_files == resource.RLIM_INFINITY or open_files < 0:
        open_files = 1 << 20
    usable = max(open_files - RESERVED_DESCRIPTORS, 2)
    return max(usable - min(UPSTREAM_CONNECTIONS, usable // 2), 1)


class ConnectionBook:
    """The connections of one server: how many are held, and which wait for a head
    (oldest first: the first to go when room is needed)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.held: set[Any] = set()
        # dict: insertion-ordered, so the first key has waited longest.
        self.waiting: dict[Any, None] = {}
        # Called on every accepted connection (ends an out-of-descriptors episode).
        self.accepted: Callable[[], None] = lambda: None


def hardened_protocol(
    book: ConnectionBook,
    *,
    http: str = "h11",
    head_timeout: float = HEAD_TIMEOUT,
    linger_seconds: float = LINGER_SECONDS,
    linger_bytes: int = LINGER_BYTES,
    max_head_bytes: int = MAX_HEAD_BYTES,
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``http`` (``"h11"`` or ``"httptools"``) with the deadline,
    bound and lingering close above. The two differ only in how they answer two
    questions, "is a request body still unread?" and "is the connection waiting for a
    request head?", and httptools gets the bound on a request head that h11 keeps by
    itself (``max_head_bytes``, given to h11 as its largest incomplete event)."""

    class _Linger:
        """The transport uvicorn holds, whose ``close()`` lingers while a request body is
        still unread (everything else is the real transport's)."""

        lingering: bool

        def __init__(self, protocol: _Hardened, transport: asyncio.Transport) -> None:
            self._protocol = protocol
            self._transport = transport
            self.lingering = False
            # What uvicorn calls for every request, bound once rather than looked up
            # through __getattr__ each time.
            self.write = transport.write
            self.get_extra_info = transport.get_extra_info
            self.pause_reading = transport.pause_reading
            self.resume_reading = transport.resume_reading

        def __getattr__(self, name: str) -> Any:
            return getattr(self._transport, name)

        def is_closing(self) -> bool:
            return self.lingering or self._transport.is_closing()

        def close(self) -> None:
            transport = self._transport
            if self.lingering or transport.is_closing():
                return
            if not self._protocol.body_unread() or not transport.can_write_eof():
                transport.close()
                return
            # The answer is written (or queued); the client is told nothing more comes,
            # reads it, and what it still sends is thrown away, within bounds.
            self.lingering = True
            transport.write_eof()
            transport.resume_reading()
            self._protocol.start_linger(linger_seconds)

    class _Hardened(asyncio.Protocol):
        """What both protocols add; mixed in before uvicorn's class, whose ``loop``,
        ``transport`` and callbacks it uses."""

        # Where the server finds the book (to end an out-of-descriptors episode).
        connections_book = book
        loop: asyncio.AbstractEventLoop
        transport: asyncio.Transport

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._head_timer: asyncio.TimerHandle | None = None
            self._linger: _Linger | None = None
            self._linger_timer: asyncio.TimerHandle | None = None
            self._discarded = 0

        # The two questions each protocol answers.
        def body_unread(self) -> bool:
            """Whether the request being answered has body bytes the server never read."""
            raise NotImplementedError

        def waiting_for_head(self) -> bool:
            """Whether no request is being served (a head may be arriving, or nothing)."""
            raise NotImplementedError

        def feed(self, data: bytes) -> None:
            """uvicorn's own ``data_received``."""
            super().data_received(data)

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            book.accepted()
            self._linger = _Linger(self, cast(asyncio.Transport, transport))
            super().connection_made(cast(asyncio.Transport, self._linger))
            book.held.add(self)
            if len(book.held) > book.bound and not self._make_room():
                self._drop()
                return
            self._sync()

        def _make_room(self) -> bool:
            for oldest in book.waiting:
                if oldest is not self:
                    oldest._drop()
                    return True
            return False

        def _drop(self) -> None:
            book.held.discard(self)
            book.waiting.pop(self, None)
            self._cancel_head_timer()
            if self._linger is not None:
                self._linger._transport.abort()

        def connection_lost(self, exc: Exception | None) -> None:
            book.held.discard(self)
            book.waiting.pop(self, None)
            self._cancel_head_timer()
            if self._linger_timer is not None:
                self._linger_timer.cancel()
                self._linger_timer = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._linger is not None and self._linger.lingering:
                self._discarded += len(data)
                if self._discarded > linger_bytes:
                    self._linger._transport.abort()
                return
            if self.transport.is_closing():
                return  # refused (a 400): nothing more is parsed
            self.feed(data)
            self._sync()

        def on_response_complete(self) -> None:
            super().on_response_complete()  # type: ignore[misc]
            self._sync()

        def _sync(self) -> None:
            """Waiting for a request head, or busy with a request: the timer and the
            book follow."""
            if self._linger is None or self.transport.is_closing():
                return
            if self.waiting_for_head():
                if self not in book.waiting:
                    book.waiting[self] = None
                if self._head_timer is None:
                    self._head_timer = self.loop.call_later(head_timeout, self._head_late)
            else:
                book.waiting.pop(self, None)
                self._cancel_head_timer()

        def _cancel_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if self in book.waiting:
                self._drop()

        def start_linger(self, seconds: float) -> None:
            assert self._linger is not None
            transport = self._linger._transport
            self._linger_timer = self.loop.call_later(seconds, transport.close)

    if http == "h11":
        return _h11_protocol(_Hardened)
    if http == "httptools":
        return _httptools_protocol(_Hardened, max_head_bytes)
    raise ValueError(f"unknown HTTP protocol {http!r}")


def _h11_protocol(hardened: type[Any]) -> type[asyncio.Protocol]:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HardenedH11Protocol(hardened, H11Protocol):  # type: ignore[misc]
        """h11 keeps the connection's state: a body is unread while the client may still
        send one; a head is awaited while the client is idle and no answer is due. h11
        bounds the head itself (the config's ``h11_max_incomplete_event_size``)."""

        def body_unread(self) -> bool:
            return bool(self.conn.their_state is h11.SEND_BODY)

        def waiting_for_head(self) -> bool:
            cycle = self.cycle
            return bool(
                self.conn.their_state is h11.IDLE and (cycle is None or cycle.response_complete)
            )

    return cast(type[asyncio.Protocol], HardenedH11Protocol)


def _httptools_protocol(hardened: type[Any], max_head_bytes: int) -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HardenedHttpToolsProtocol(hardened, HttpToolsProtocol):  # type: ignore[misc]
        """httptools (llhttp) keeps no state to ask, so the parser's callbacks tell: a
        body is open from a head's end to its message's end. A head is awaited while no
        request is being answered or queued behind one (pipelined): a head being dripped
        in does not count as a request until it is complete, and neither does a body
        still arriving for a request already answered. llhttp puts no bound on a head
        (httptools buffers a header until it ends): the bytes received while a head is
        incomplete are counted, and past ``max_head_bytes`` the request is refused as h11
        refuses it (400, then the connection is closed)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._body_open = False
            self._head_bytes = 0

        def body_unread(self) -> bool:
            return self._body_open

        def waiting_for_head(self) -> bool:
            cycle = self.cycle
            return (cycle is None or cycle.response_complete) and not self.pipeline

        def on_headers_complete(self) -> None:
            self._body_open = True
            self._head_bytes = 0
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._body_open = False
            super().on_message_complete()

        def feed(self, data: bytes) -> None:
            # Bytes that arrive while no head is complete count toward the head; a head
            # completed in this chunk starts the count again. What follows a completed
            # message in the same chunk is not counted: at most one read (256 KiB) more.
            if not self._body_open:
                self._head_bytes += len(data)
            super().feed(data)
            if self._head_bytes > max_head_bytes and not self.transport.is_closing():
                message = "Invalid HTTP request received."
                self.logger.warning(message)
                self.send_400_response(message)

    return cast(type[asyncio.Protocol], HardenedHttpToolsProtocol)


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
    """uvicorn's ``capture_signals`` over :data:`STOP_SIGNALS` (uvicorn takes only SIGINT
    and SIGTERM): ``on_signal`` handles each while the server runs; afterwards each
    signal in ``captured`` is raised again, for the command's own handling. A signal
    ignored when serve started (``nohup``) stays ignored."""
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


class HardenedServer(uvicorn.Server):
    """uvicorn's server that stops on :data:`STOP_SIGNALS` and reports a failed
    ``accept()`` once per episode (for the connections book of a
    :func:`hardened_protocol`, when its config uses one)."""

    def capture_signals(self) -> _GeneratorContextManager[None]:
        return capture_stop_signals(self.handle_exit, self._captured_signals)

    async def startup(self, sockets: list[Any] | None = None) -> None:
        book = getattr(self.config.http, "connections_book", None)
        if isinstance(book, ConnectionBook):
            book.accepted = quiet_accept_errors(asyncio.get_running_loop())
        await super().startup(sockets)
