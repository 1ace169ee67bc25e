"""uvicorn's HTTP protocols as the gateway serves them: the other module of the uvicorn adapter
(:mod:`._uvicorn` checks, at serve(), that everything named here exists).

Each connection is watched by a guard (:class:`._hardening.Guard`), which sees its bytes
before the protocol parses them and asks the protocol whether a request body is still
unread and whether it waits for a request head. A WebSocket upgrade is taken only for a
``GET`` of one of the gateway's socket paths; any other request that asks to switch
protocols is answered as the HTTP request it is, with no warning logged (uvicorn 0.35 on
logs two per such request). The connection is then handed to the socket protocol
(:mod:`._socket`), told whether bytes came after the upgrade request in the same read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol, cast

__all__ = ["Guard", "Guards", "protocol"]

_log = logging.getLogger("copilot_host.gateway")


class Guard(Protocol):
    """What watches one connection (:class:`._hardening.Guard`), as the protocols call it."""

    def wrap(self, transport: asyncio.BaseTransport) -> asyncio.Transport: ...
    def opened(self) -> None: ...
    def received(self, data: bytes) -> None: ...
    def answered(self) -> None: ...
    def lost(self) -> None: ...


# Makes a connection's guard, given the protocol: its ``body_unread()``,
# ``waiting_for_head()`` and ``feed(data)`` answer the guard's questions.
Guards = Callable[[Any], Guard]


def protocol(
    http: str,
    guard: Guards,
    *,
    max_head_bytes: int,
    socket_paths: frozenset[bytes] = frozenset(),
) -> type[asyncio.Protocol]:
    """uvicorn's protocol ``http`` (``"h11"`` or ``"httptools"``), each connection watched
    by the guard ``guard`` makes for it, taking a WebSocket upgrade only for a ``GET`` of
    one of ``socket_paths`` (any query aside)."""
    if http == "h11":
        return _h11_protocol(guard, socket_paths)
    if http == "httptools":
        return _httptools_protocol(guard, max_head_bytes, socket_paths)
    raise ValueError(f"unknown HTTP protocol {http!r}")


def _guarded(base: type[Any], guard: Guards, socket_paths: frozenset[bytes]) -> type[Any]:
    """``base`` (one of uvicorn's protocols) with its connection events passed through a
    guard, and WebSocket upgrades taken only on ``socket_paths``."""

    class Guarded(base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.guard = guard(self)

        def target(self) -> bytes:
            """The request's path, as sent (no query)."""
            raise NotImplementedError

        def _should_upgrade_to_ws(self, *args: Any) -> bool:
            # Any other request that asks to switch protocols is answered as the HTTP
            # request it is (405, 404, ...), as it was before the gateway took sockets.
            scope = self.scope
            asked = scope is not None and scope.get("method") == "GET"
            return asked and self.target() in socket_paths and super()._should_upgrade_to_ws(*args)

        def _unsupported_upgrade_warning(self) -> None:
            # uvicorn's two warnings per such request (0.35 on) say nothing the answer does
            # not: one DEBUG line, no header.
            _log.debug("a request asked to switch protocols; answered over HTTP")

        def _handed_over(self, early: bool) -> None:
            """After uvicorn handed the connection to the WebSocket protocol: tell it of
            bytes that came after the upgrade request in the same read."""
            socket = self.transport.get_protocol()
            if early and hasattr(socket, "early"):
                socket.early()

        def feed(self, data: bytes) -> None:
            super().data_received(data)

        def body_buffered(self) -> bool:
            # Both protocols gather the body the app has not taken yet in cycle.body.
            cycle = self.cycle
            return cycle is not None and bool(cycle.body)

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(self.guard.wrap(transport))
            self.guard.opened()

        def connection_lost(self, exc: Exception | None) -> None:
            self.guard.lost()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self.guard.received(data)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self.guard.answered()

    return Guarded


def _h11_protocol(guard: Guards, socket_paths: frozenset[bytes]) -> type[asyncio.Protocol]:
    import h11

    from ._uvicorn import http_protocol

    H11Protocol = http_protocol("h11")

    class HardenedH11Protocol(_guarded(H11Protocol, guard, socket_paths)):  # type: ignore[misc]
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

        def target(self) -> bytes:
            return bytes(self.scope.get("raw_path", b""))

        def handle_websocket_upgrade(self, event: Any) -> None:
            # h11 keeps what followed the request head; uvicorn hands over the head alone.
            early = bool(self.conn.trailing_data[0])
            super().handle_websocket_upgrade(event)
            self._handed_over(early)

    return cast(type[asyncio.Protocol], HardenedH11Protocol)


def _httptools_protocol(
    guard: Guards, max_head_bytes: int, socket_paths: frozenset[bytes]
) -> type[asyncio.Protocol]:
    import sys

    from ._uvicorn import http_protocol

    HttpToolsProtocol = http_protocol("httptools")

    base = _guarded(HttpToolsProtocol, guard, socket_paths)

    class HardenedHttpToolsProtocol(base):  # type: ignore[misc,valid-type]
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
            # The chunk being parsed, and whether the connection was handed to a socket.
            self._chunk = b""
            self._upgraded = False

        def target(self) -> bytes:
            return bytes(self.url).partition(b"?")[0]

        def handle_websocket_upgrade(self) -> None:
            # Called while uvicorn handles llhttp's upgrade exception, whose argument is
            # where the request head ended in the chunk parsed.
            raised = sys.exc_info()[1]
            ended = raised.args[0] if raised is not None and raised.args else None
            early = isinstance(ended, int) and len(self._chunk) > ended
            self._upgraded = True
            super().handle_websocket_upgrade()
            self._handed_over(early)

        def body_unread(self) -> bool:
            return self._body_open

        def waiting_for_head(self) -> bool:
            cycle = self.cycle
            return bool((cycle is None or cycle.response_complete) and not self.pipeline)

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
            self._chunk = data
            super().feed(data)
            self._chunk = b""
            if self._upgraded:
                return
            if self.parser.should_upgrade():
                self._no_upgrade()
            if self._head_bytes > max_head_bytes and not self.transport.is_closing():
                message = "Invalid HTTP request received."
                self.logger.warning(message)
                self.send_400_response(message)

        def _no_upgrade(self) -> None:
            # A request that asks to switch protocols: llhttp parses nothing after it (it
            # waits for the switch, which the gateway never makes), so a request
            # pipelined behind it would wait, unanswered, for the head deadline. The
            # connection ends with this request's answer instead, as h11's would not
            # need to: the client learns at once to send the next one elsewhere.
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                cycle.keep_alive = False
            elif not self.transport.is_closing():
                self.transport.close()

    return cast(type[asyncio.Protocol], HardenedHttpToolsProtocol)
