"""What keeps the gateway answering its own user while other local programs misbehave.

Any local user can open connections to a loopback port, key or no key. Left to the ASGI
server's defaults, connections that send nothing (or drip a request head a byte at a time) are held
for ever, each costs a descriptor, and once the process has none left the user's own
requests wait in the listen queue while asyncio logs a traceback per failed ``accept()``.
This module bounds all of that, on asyncio alone; the server's HTTP protocols reach it
through the server adapter, the one module that names the server's classes:

* :func:`._process.raise_open_file_limit`: the soft ``RLIMIT_NOFILE`` goes up to the hard
  limit at start, so the bounds below are as generous as the account allows.
* ``_serving.hardened_protocol``: the server's h11 or httptools protocol, each connection watched
  by a :class:`Guard`:

  - a deadline for the request head: a connection that has not sent a complete request
    head within :data:`HEAD_TIMEOUT` seconds of opening (or of its previous answer) is
    closed, idle and dripping alike (the server times only the wait between keep-alive
    requests, and forgets that timer at the first byte);
  - a bound on connections held at once, below what the descriptors allow
    (:func:`._process.connection_bound`). A connection whose last answer was a refusal sent before
    its body was read (it lingers, below) is *refused*: it does not stand in anyone's
    way, since it is the first to be closed when room is needed. A quarter of the bound
    (:data:`ANSWERED_SHARE`) is kept for connections that got any other answer, so
    connections nobody has answered yet (keyless ones among them) never push out a key
    holder's kept-alive one. Past the bound, the refused connection that has lingered
    longest goes; then the connection that has waited longest without sending a request
    head; when every connection is busy with a request, the new one is closed instead;
  - a bounded lingering close: when an answer ends a connection whose request body was
    not read (a refusal, sent with ``Connection: close``), the write side is shut so the
    client reads the answer, and what the client still sends is discarded, then the
    connection is closed: after :data:`LINGER_IDLE_SECONDS` when no body byte has
    arrived, after :data:`LINGER_SECONDS` once one has (a client that uploads before it
    reads still reads its refusal), and at once past :data:`LINGER_BYTES`. A client
    that keeps uploading gigabytes is cut off instead of read to the end;
  - on httptools, the bound on a request head that h11 keeps by itself
    (:data:`MAX_HEAD_BYTES`): llhttp has none;
  - a WebSocket (:mod:`._socket`) stays under its guard: counted in the bound, and between
    requests waiting like a kept-alive connection (first to go for room), for at most
    :data:`SOCKET_IDLE_SECONDS`.

* :func:`._process.quiet_accept_errors`: an ``accept()`` that fails for want of descriptors is one
  warning line per episode (until a connection is accepted again), never a traceback per
  attempt. (The gateway runs on asyncio's own loop: uvloop's libuv would instead accept
  and at once close the connections it has no descriptor for, without a word.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

__all__ = [
    "ANSWERED_SHARE",
    "HEAD_TIMEOUT",
    "LINGER_BYTES",
    "LINGER_IDLE_SECONDS",
    "LINGER_SECONDS",
    "MAX_HEAD_BYTES",
    "SOCKET_IDLE_SECONDS",
    "ConnectionBook",
    "Guard",
    "Hardening",
]


# Seconds a connection has to send a whole request head, from when it opened or its
# previous answer ended. Clients send the head at once; only a stalled or hostile peer
# needs longer.
HEAD_TIMEOUT = 10.0
# A lingering close discards at most this much of an unread body (as much as a body the
# gateway accepts, so a client that sends its whole body before reading still reads the
# refusal), for at most this long.
LINGER_BYTES = 32 * 1024 * 1024
LINGER_SECONDS = 2.0
# How long a refused connection lingers while no byte of its body has arrived: long
# enough for the client to read its refusal, short enough that connections refused by
# the thousand do not pile up.
LINGER_IDLE_SECONDS = 0.25
# The part of the connection bound (1 / ANSWERED_SHARE of it) that connections which
# have not been answered yet cannot take: it is kept for those that got an answer other
# than a refusal (a key holder's kept-alive connections).
ANSWERED_SHARE = 4
# The largest request head taken (request line and headers): h11's own default, which
# httptools lacks. The clients' heads are a few KiB.
MAX_HEAD_BYTES = 16 * 1024
# Seconds a WebSocket may go without a request before it is closed.
SOCKET_IDLE_SECONDS = 300.0
# A timer may run this much before its time (the loop's clock resolution and rounding):
# a head this close to its deadline is late.
_TIMER_SLACK = 0.001

_log = logging.getLogger("copilot_host.gateway")


@dataclass(frozen=True)
class Hardening:
    """The bounds a served gateway keeps (the module docstring says what each is for).
    ``max_connections`` None: :func:`connection_bound` of the open-file limit in force
    when serving starts."""

    head_timeout: float = HEAD_TIMEOUT
    max_connections: int | None = None
    linger_seconds: float = LINGER_SECONDS
    linger_bytes: int = LINGER_BYTES
    max_head_bytes: int = MAX_HEAD_BYTES
    linger_idle_seconds: float = LINGER_IDLE_SECONDS
    socket_idle_seconds: float = SOCKET_IDLE_SECONDS


class ConnectionBook:
    """The connections of one server: those held (all but the refused ones), those not
    answered yet, the refused ones and those waiting for a head (both oldest first: the
    first to go when room is needed)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.held: set[Guard] = set()
        # Held, and not answered yet (other than by a refusal): at most the bound less
        # the share kept for the answered ones.
        self.fresh: set[Guard] = set()
        # dict: insertion-ordered, so the first key has waited (or lingered) longest.
        self.waiting: dict[Guard, None] = {}
        self.refused: dict[Guard, None] = {}
        # Called on every accepted connection (ends an out-of-descriptors episode).
        self.accepted: Callable[[], None] = lambda: None

    @property
    def fresh_bound(self) -> int:
        """How many connections not answered yet may be held at once."""
        return max(self.bound - self.bound // ANSWERED_SHARE, 1)

    def make_room(self) -> None:
        """Close the refused connections that have lingered longest while the bound is
        passed (the moment a connection opens)."""
        while len(self.held) + len(self.refused) > self.bound and self.refused:
            next(iter(self.refused))._drop()

    def admit(self, newcomer: Guard) -> bool:
        """Make room for ``newcomer`` (held, settled: it has had its turn to send a head)
        by closing others; whether it may stay."""
        self.make_room()
        if len(self.fresh) > self.fresh_bound:
            # Over the share of connections nobody has answered: one of them goes.
            return self._evict(newcomer, fresh=True)
        if len(self.held) > self.bound:
            # The answered ones are over their share: the longest idle one goes first.
            return self._evict(newcomer, fresh=False) or self._evict(newcomer, fresh=True)
        return True

    def _evict(self, newcomer: Guard, *, fresh: bool) -> bool:
        for oldest in self.waiting:
            if oldest is not newcomer and oldest.settled and (oldest in self.fresh) == fresh:
                oldest._drop()
                return True
        # None to spare: the newcomer goes, unless it is busy with a request already.
        return not newcomer.connection_waiting()


class Connection(Protocol):
    """What a guard asks of the HTTP protocol it watches (the server adapter answers)."""

    def body_unread(self) -> bool:
        """Whether the request being answered has body bytes the server never read."""

    def waiting_for_head(self) -> bool:
        """Whether no request is being served (a head may be arriving, or nothing)."""

    def body_buffered(self) -> bool:
        """Whether body bytes of the request being answered wait, unread, in the server."""

    def feed(self, data: bytes) -> None:
        """Parse ``data`` as the protocol does."""


class _Linger:
    """The transport the protocol holds, whose ``close()`` lingers while a request body is
    still unread (everything else is the real transport's)."""

    def __init__(self, guard: Guard, transport: asyncio.Transport) -> None:
        # Public: a WebSocket protocol the connection is handed to finds its guard here.
        self.guard = guard
        self.real = transport
        self.lingering = False
        # What the protocol calls for every request, bound once rather than looked up
        # through __getattr__ each time.
        self.write = transport.write
        self.get_extra_info = transport.get_extra_info
        self.pause_reading = transport.pause_reading
        self.resume_reading = transport.resume_reading

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def is_closing(self) -> bool:
        return self.lingering or self.real.is_closing()

    def close(self) -> None:
        transport = self.real
        if self.lingering or transport.is_closing():
            return
        if not self.guard.connection.body_unread() or not transport.can_write_eof():
            transport.close()
            return
        # The answer is written (or queued); the client is told nothing more comes,
        # reads it, and what it still sends is thrown away, within bounds.
        try:
            transport.write_eof()
        except OSError:
            # The client is gone already (ENOTCONN once its reset has arrived): nothing
            # to linger for.
            transport.abort()
            return
        self.lingering = True
        transport.resume_reading()
        self.guard.start_linger()


class Guard:
    """One connection's head deadline, place in the book and lingering close. The
    protocol calls :meth:`wrap` and :meth:`opened` when the connection is made,
    :meth:`received` for each chunk, :meth:`answered` once an answer is complete and
    :meth:`lost` when the connection goes."""

    def __init__(self, connection: Connection, book: ConnectionBook, limits: Hardening) -> None:
        self.connection = connection
        self._book = book
        self._limits = limits
        self._loop = asyncio.get_running_loop()
        self._head_timer: asyncio.TimerHandle | None = None
        # When the connection began to wait for its current request head.
        self._waiting_since = 0.0
        self._linger: _Linger | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._linger_began = 0.0
        self._discarded = 0
        # Whether a byte of the current request's body has arrived.
        self._body_seen = False
        # Whether the connection has had its turn to send a request head since it was
        # accepted (until then it is nobody's to close for room).
        self.settled = False
        # How long it may wait for a request head (a WebSocket: for its next request).
        self._wait_limit = limits.head_timeout
        # How it goes when closed for room or lateness (None: aborted).
        self._evict: Callable[[], None] | None = None

    def wrap(self, transport: asyncio.BaseTransport) -> asyncio.Transport:
        """The transport to give the protocol in place of ``transport``."""
        self._book.accepted()
        self._linger = _Linger(self, cast(asyncio.Transport, transport))
        return cast(asyncio.Transport, self._linger)

    def opened(self) -> None:
        book = self._book
        book.held.add(self)
        book.fresh.add(self)
        book.make_room()
        self.sync()
        # Whether the connection may stay is settled once it has had its turn to send a
        # head: asyncio sets up a whole batch of accepted connections before it reads
        # from any, and one that is closed for room before its head was read might be a
        # key holder's. Its reader is added just after this call; its bytes are read in
        # the next iteration of the loop; after that, this one looks.
        self._loop.call_soon(self._loop.call_soon, self._settle)

    def _settle(self) -> None:
        if self.settled or self.closing() or self not in self._book.held:
            return
        self.settled = True
        if not self._book.admit(self):
            self._drop()

    def connection_waiting(self) -> bool:
        """Whether the connection waits for a request head (or is gone)."""
        return self.closing() or self.connection.waiting_for_head()

    def _forget(self) -> None:
        book = self._book
        book.held.discard(self)
        book.fresh.discard(self)
        book.waiting.pop(self, None)
        book.refused.pop(self, None)
        self._cancel_head_timer()

    def _drop(self) -> None:
        self._forget()
        if self._evict is not None:
            self._evict()
        elif self._linger is not None:
            self._linger.real.abort()

    def switch(self, connection: Connection, evict: Callable[[], None]) -> None:
        """The connection speaks another protocol now (a WebSocket, closed its own way by
        ``evict``), held to the head deadline until its handshake is answered."""
        self.connection = connection
        self._evict = evict

    def opened_socket(self, idle_seconds: float) -> None:
        """The WebSocket's handshake was accepted: answered, waiting (first to go for
        room) between its requests, and closed after ``idle_seconds`` of that."""
        self._wait_limit = idle_seconds
        self.answered()

    def lost(self) -> None:
        self._forget()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None

    def received(self, data: bytes) -> None:
        linger = self._linger
        if linger is not None and linger.lingering:
            self._discarded += len(data)
            if self._discarded > self._limits.linger_bytes:
                linger.real.abort()
            elif not self._body_seen:
                # The client does upload: it gets the full linger to read its refusal.
                self._body_seen = True
                self._linger_until(self._linger_began + self._limits.linger_seconds)
            return
        if linger is None or linger.is_closing():
            return  # refused (a 400): nothing more is parsed
        connection = self.connection
        if connection.body_unread():
            self._body_seen = True  # bytes while a body is open are body
        connection.feed(data)
        if not self._body_seen and connection.body_unread() and connection.body_buffered():
            self._body_seen = True  # the head's chunk carried body bytes too
        self.sync()

    def answered(self) -> None:
        if not self.closing():
            # Answered, and not by a refusal (that one lingers, or closed at once).
            self._book.fresh.discard(self)
        self.sync()

    def closing(self) -> bool:
        """Whether the connection is being closed (or lingers)."""
        return self._linger is None or self._linger.is_closing()

    def sync(self) -> None:
        """Waiting for a request head, or busy with a request: the book follows (on each read,
        and when a WebSocket's request begins or ends), and the head timer is armed when
        none is.

        The timer is not moved as a kept-alive connection goes from request to request:
        when it fires it looks at when the connection began to wait, and arms itself again
        if the head is not late yet. So a connection costs one timer per
        :data:`HEAD_TIMEOUT` rather than one per request."""
        if self.closing():
            return
        book = self._book
        if self.connection.waiting_for_head():
            self._body_seen = False
            if self not in book.waiting:
                book.waiting[self] = None
                self._waiting_since = self._loop.time()
            if self._head_timer is None:
                self._head_timer = self._loop.call_at(
                    self._waiting_since + self._wait_limit, self._head_late
                )
        else:
            book.waiting.pop(self, None)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self not in self._book.waiting:
            return  # busy with a request: armed again when it waits for the next head
        due = self._waiting_since + self._wait_limit
        if self._loop.time() + _TIMER_SLACK >= due:
            self._drop()
        else:
            self._head_timer = self._loop.call_at(due, self._head_late)

    def start_linger(self) -> None:
        """The connection is refused: out of the bound's way, first to go, and closed
        after the linger (a short one while no body byte has arrived)."""
        self._forget()
        self._book.refused[self] = None
        self._linger_began = self._loop.time()
        limits = self._limits
        seconds = limits.linger_seconds if self._body_seen else limits.linger_idle_seconds
        self._linger_until(self._linger_began + min(seconds, limits.linger_seconds))
        # Past the bound (a newcomer let in while this one was busy): the refused
        # connection that has lingered longest goes now.
        self._book.make_room()

    def _linger_until(self, when: float) -> None:
        assert self._linger is not None
        if self._linger_timer is not None:
            self._linger_timer.cancel()
        self._linger_timer = self._loop.call_at(when, self._linger.real.close)
