"""A WebSocket connection the gateway's HTTP protocol handed over: wsproto (sans-IO, like h11)
driven on asyncio, speaking ASGI's ``websocket`` interface to the app (:mod:`._socket_parts`).

The gateway's own rather than uvicorn's wsproto protocol, which differs across the releases
it runs on (no message bound at 0.30; keepalive pings and close 1012 on shutdown later) and
bounds nothing the gateway needs bounded. Here, on every release: the connection's guard
(:class:`._hardening.Guard`) goes on watching it (the bound; the head deadline until the
handshake is answered; between requests, as the app says through ``copilot_host.busy``,
idle: first to go for room, closed after :attr:`SocketLimits.idle_seconds`); a message is
at most :attr:`SocketLimits.max_message_bytes`, inflated included (:mod:`._deflate`; 1009),
and arrives whole in the time a request body has (1008); bytes sent before the handshake's
answer (RFC 6455 §4.1) end the socket with 1002 after it; pings get one pong per read
(RFC 6455 §5.5.3), none while the client leaves the gateway's writes unread; a refused
handshake is an HTTP answer; told to stop, an idle socket closes with 1001 at once, a busy
one when its request ends or the grace period does. Nothing here logs a header or a message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.extensions import Extension
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from .._app import BUSY
from ._deflate import BoundedDeflate
from ._socket_parts import scope_of, text_frame

__all__ = ["SocketLimits", "SocketProtocol", "socket_protocol"]

_log = logging.getLogger("copilot_host.gateway")


@dataclass(frozen=True)
class SocketLimits:
    """What one socket may do (the module docstring says why each)."""

    max_message_bytes: int
    # Seconds a message has from its first frame, given the bytes of it so far.
    message_seconds: Callable[[int], float]
    idle_seconds: float = 300.0
    # Pongs are left out while this much of the gateway's writes waits unread.
    unread_bytes: int = 1024 * 1024
    # How long a close the gateway starts waits for the client's.
    close_seconds: float = 2.0


class SocketProtocol(asyncio.Protocol):
    """One socket (see the module docstring); :func:`socket_protocol` binds its limits."""

    limits: ClassVar[SocketLimits]
    # The ASGI application (the gateway's, as given to the server: no middleware).
    app: ClassVar[Any]

    def __init__(self, config: Any, server_state: Any, app_state: dict[str, Any], **_: Any) -> None:
        self._app = self.app
        self._connections: set[Any] = server_state.connections
        self._tasks: set[asyncio.Task[None]] = server_state.tasks
        self._app_state = app_state
        self._loop = asyncio.get_running_loop()
        self._conn = WSConnection(ConnectionType.SERVER)
        self._transport: asyncio.Transport | None = None
        self.guard: Any = None
        # head, handshake (the app decides), open or denying, closing (close frame sent), closed.
        self._state = "head"
        self._request: Request | None = None
        self._early = False
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._paused = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._parts: list[Any] = []
        self._size = 0
        self._message_timer: asyncio.TimerHandle | None = None
        self._message_began = 0.0
        self._close_timer: asyncio.TimerHandle | None = None
        self._busy = False
        self._stopping = False

    # -- what the guard asks (._hardening.Connection) ----------------------------------------

    def body_unread(self) -> bool:
        return False

    def body_buffered(self) -> bool:
        return False

    def waiting_for_head(self) -> bool:
        """Held to the head deadline while the handshake is undecided; once open, idle
        while no request runs and no message is arriving or waiting."""
        if self._state == "handshake":
            return True
        return self._state == "open" and not self._busy and not self._parts and self._queue.empty()

    def evict(self) -> None:
        """Closed for room or for idleness (the guard's call)."""
        self._close(1000, "idle")
        if self._transport is not None and self._transport.get_write_buffer_size():
            self._transport.abort()

    # -- asyncio -----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # The guard's transport (._hardening), which closes as the guard says.
        self._transport = cast(asyncio.Transport, transport)
        self._connections.add(self)
        guard = getattr(transport, "guard", None)
        if guard is not None:
            self.guard = guard
            guard.switch(self, self.evict)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.guard is not None:
            self.guard.lost()
        self._connections.discard(self)
        self._writable.set()
        for timer in (self._message_timer, self._close_timer):
            timer.cancel() if timer is not None else None
        if self._state not in ("closing", "closed"):
            self._queue.put_nowait({"type": "websocket.disconnect", "code": 1006})
        self._state = "closed"

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def data_received(self, data: bytes) -> None:
        if self.guard is not None:
            self.guard.received(data)
        else:
            self.feed(data)

    def early(self) -> None:
        """Bytes came after the upgrade request in its read (before the handshake's answer)."""
        self._early = True

    def feed(self, data: bytes) -> None:
        state = self._state
        if state == "handshake":
            self._early = True
            self._pause()
            return
        if state not in ("head", "open", "closing"):
            return
        try:
            self._conn.receive_data(data)
            events = list(self._conn.events())
        except (RemoteProtocolError, UnicodeError) as exc:
            # Only the handshake raises these (a bad frame is a close event): an HTTP
            # answer, wsproto's (400, 426), or 400 (a Host that is not IDNA).
            hint = getattr(exc, "event_hint", None) or RejectConnection(status_code=400)
            self._write(self._conn.send(hint))
            self._end(1002)
            return
        except LocalProtocolError:
            self._end(1002)
            return
        pong: Ping | None = None
        for event in events:
            if isinstance(event, Request):
                self._start(event)
            elif isinstance(event, TextMessage | BytesMessage):
                if self._state == "open":
                    self._message(event)
            elif isinstance(event, Ping):
                pong = event
            elif isinstance(event, CloseConnection):
                self._closed_by_client(event)
            if self._state == "closed":
                return
        if pong is not None and self._state == "open":
            transport = self._transport
            if (
                transport is not None
                and transport.get_write_buffer_size() < self.limits.unread_bytes
            ):
                self._write(self._conn.send(pong.response()))

    # -- reading -----------------------------------------------------------------------------

    def _start(self, request: Request) -> None:
        self._request = request
        self._state = "handshake"
        if self.guard is not None:
            self.guard.sync()
        transport = self._transport
        assert transport is not None
        scope = scope_of(request, transport, self._app_state)
        self._queue.put_nowait({"type": "websocket.connect"})
        task = self._loop.create_task(self._run(scope))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _message(self, event: TextMessage | BytesMessage) -> None:
        data = event.data
        if not self._parts:
            self._message_began = self._loop.time()
            self._message_timer = self._loop.call_later(self.limits.message_seconds(0), self._late)
        self._parts.append(data)
        if isinstance(data, str) and not data.isascii():  # else its length is its UTF-8 one
            data = data.encode("utf-8", "surrogatepass")
        self._size += len(data)
        limit = self.limits.max_message_bytes
        if self._size > limit:
            self._close(1009, f"a message may be at most {limit} bytes")
            return
        if not event.message_finished:
            return
        if self._message_timer is not None:
            self._message_timer.cancel()
            self._message_timer = None
        parts, self._parts, self._size = self._parts, [], 0
        if isinstance(event, TextMessage):
            self._queue.put_nowait({"type": "websocket.receive", "text": "".join(parts)})
        else:
            self._queue.put_nowait({"type": "websocket.receive", "bytes": b"".join(parts)})
        self._pause()

    def _late(self) -> None:
        # The time a message has grows with what of it has come (as a request body's does);
        # one timer, armed again when the message has earned more.
        due = self._message_began + self.limits.message_seconds(self._size)
        if self._loop.time() < due:
            self._message_timer = self._loop.call_at(due, self._late)
            return
        self._message_timer = None
        self._close(1008, "a message did not arrive in time")

    def _closed_by_client(self, event: CloseConnection) -> None:
        if self._state == "open":
            self._write(self._conn.send(event.response()))
        self._end(event.code)

    def _pause(self) -> None:
        if not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()

    async def receive(self) -> dict[str, Any]:
        message = await self._queue.get()
        if self._paused and self._queue.empty() and self._state not in ("handshake", "closed"):
            self._paused = False
            if self._transport is not None:
                self._transport.resume_reading()
        return message

    # -- writing -----------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        transport = self._transport
        if data and transport is not None and not transport.is_closing():
            transport.write(data)

    def _close(self, code: int, reason: str) -> None:
        """Start a close the gateway decides on: the close frame, then the connection once
        the client answers it (or after ``close_seconds``)."""
        if self._state != "open":
            if self._state in ("handshake", "head"):
                self._end(code)
            return
        self._write(self._conn.send(CloseConnection(code=code, reason=reason)))
        self._state = "closing"
        self._queue.put_nowait({"type": "websocket.disconnect", "code": code})
        if self.guard is not None:
            self.guard.sync()
        transport = self._transport
        if transport is None:
            return
        if self._stopping:
            # The server is going: the close frame is flushed, no answer awaited (the
            # loop may end before a timer would fire).
            transport.close()
            return
        transport.resume_reading()
        self._close_timer = self._loop.call_later(self.limits.close_seconds, transport.close)

    def _end(self, code: int) -> None:
        if self._state not in ("closing", "closed"):
            self._queue.put_nowait({"type": "websocket.disconnect", "code": code})
        self._state = "closed"
        if self._transport is not None:
            self._transport.close()

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        state = self._state
        if kind == BUSY:
            self._busy = bool(message.get("busy"))
            if self._stopping and not self._busy:
                self._close(1001, "the gateway is stopping")
            elif self.guard is not None:
                self.guard.sync()
            return
        if state == "handshake":
            self._answer(message)
            return
        if state == "denying" and kind == "websocket.http.response.body":
            finished = not message.get("more_body", False)
            body = message.get("body", b"")
            self._write(self._conn.send(RejectData(data=body, body_finished=finished)))
            if finished:
                self._end(1006)
            return
        if state != "open":
            return  # the socket is going or gone: the app hears so from receive()
        if kind == "websocket.send":
            await self._writable.wait()
            text = message.get("text")
            if text is None:
                self._write(self._conn.send(Message(data=message.get("bytes", b""))))
            else:
                self._write(text_frame(text.encode()))
        elif kind == "websocket.close":
            self._close(int(message.get("code", 1000)), str(message.get("reason") or ""))

    def _answer(self, message: dict[str, Any]) -> None:
        """The app's answer to the handshake."""
        kind = message["type"]
        if kind == "websocket.accept":
            request = self._request
            assert request is not None
            extensions: list[Extension] = []
            if any(str(offer).startswith("permessage-deflate") for offer in request.extensions):
                extensions.append(BoundedDeflate(self.limits.max_message_bytes))
            headers = list(message.get("headers") or ())
            self._write(
                self._conn.send(AcceptConnection(extensions=extensions, extra_headers=headers))
            )
            self._state = "open"
            if self.guard is not None:
                self.guard.opened_socket(self.limits.idle_seconds)
            if self._early:
                reason = "frames came before the handshake's answer"
                self._write(self._conn.send(CloseConnection(code=1002, reason=reason)))
                self._end(1002)
            # (Reading is paused in the handshake only by early bytes: nothing to resume.)
            return
        if kind == "websocket.http.response.start":
            headers = list(message.get("headers") or ())
            status = int(message["status"])
            self._write(self._conn.send(RejectConnection(status, headers, has_body=True)))
            self._state = "denying"
            return
        # websocket.close before accepting: refused, as ASGI says, with a 403.
        self._write(self._conn.send(RejectConnection(status_code=403)))
        self._end(1006)

    async def _run(self, scope: dict[str, Any]) -> None:
        try:
            await self._app(scope, self.receive, self.send)
        except asyncio.CancelledError:
            pass  # the server's grace period is over: the socket closes below
        except Exception as exc:
            _log.warning("the gateway's socket handler failed (%s)", type(exc).__name__)
            _log.debug("socket handler failure", exc_info=exc)
        if self._state in ("handshake", "head"):
            headers = [(b"content-length", b"0"), (b"connection", b"close")]
            self._write(self._conn.send(RejectConnection(500, headers, has_body=False)))
            self._end(1006)
        elif self._state == "open":
            self._close(1001 if self._stopping else 1000, "")

    def shutdown(self) -> None:
        """The server stops (uvicorn calls this on each connection it holds)."""
        self._stopping = True
        if self._state == "open" and not self._busy:
            self._close(1001, "the gateway is stopping")
        elif self._state == "closing" and self._transport is not None:
            self._transport.close()


def socket_protocol(app: Any, limits: SocketLimits) -> type[SocketProtocol]:
    """The protocol class uvicorn's config names for WebSocket connections: ``app``'s, with
    ``limits``."""

    class BoundSocketProtocol(SocketProtocol):
        pass

    BoundSocketProtocol.app = app
    BoundSocketProtocol.limits = limits
    return BoundSocketProtocol
