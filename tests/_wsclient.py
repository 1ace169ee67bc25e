"""A blocking WebSocket client for the tests and the bench: a real socket, wsproto framing.

It speaks to the gateway as Codex does (``GET /v1/responses``, the key as a bearer,
``permessage-deflate`` offered when asked) and can also misbehave on purpose: raw bytes
before the handshake's answer, binary and fragmented messages, ping floods. Every byte it
sends is counted (``sent``), for the bench's figures.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate

__all__ = ["Closed", "Refused", "SocketClient", "handshake_bytes"]

TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})


@dataclass
class Refused(Exception):
    """The handshake was answered with an HTTP status, not 101."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""

    def document(self) -> Any:
        return json.loads(self.body)


@dataclass
class Closed(Exception):
    """The server closed the socket (``code`` None: without a close frame)."""

    code: int | None
    reason: str = ""
    frames: list[Any] = field(default_factory=list)


def handshake_bytes(
    port: int, path: str = "/v1/responses", headers: Sequence[tuple[str, str]] = ()
) -> bytes:
    """An upgrade request as a client writes it (for tests that send it raw)."""
    connection = WSConnection(ConnectionType.CLIENT)
    return connection.send(
        Request(
            host=f"127.0.0.1:{port}",
            target=path,
            extra_headers=[(k.encode(), v.encode()) for k, v in headers],
        )
    )


class SocketClient:
    """One socket to ``127.0.0.1:port``; opened by :meth:`open` (raises :class:`Refused`)."""

    def __init__(
        self,
        port: int,
        key: str | None,
        *,
        path: str = "/v1/responses",
        headers: Iterable[tuple[str, str]] = (),
        deflate: bool = False,
        timeout: float = 15.0,
    ) -> None:
        self.port = port
        self.timeout = timeout
        self.sent = 0
        self._conn = WSConnection(ConnectionType.CLIENT)
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._pending: list[Any] = []
        self._parts: list[str | bytes] = []
        extra = [(b"user-agent", b"codex_exec/0.171.0 (tests)"), (b"originator", b"codex_exec")]
        if key is not None:
            extra.append((b"authorization", f"Bearer {key}".encode()))
        extra += [(k.lower().encode(), v.encode()) for k, v in headers]
        self._request = Request(
            host=f"127.0.0.1:{port}",
            target=path,
            extra_headers=extra,
            extensions=[PerMessageDeflate()] if deflate else [],
        )
        self.accepted: AcceptConnection | None = None
        self.pongs: list[bytes] = []

    # -- the wire ------------------------------------------------------------------------

    def raw(self, data: bytes) -> None:
        self.sent += len(data)
        self._sock.sendall(data)

    def _out(self, event: Any) -> None:
        self.raw(self._conn.send(event))

    def _read(self, deadline: float) -> bool:
        self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            data = self._sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionError:
            data = b""
        self._conn.receive_data(data or None)
        for event in self._conn.events():
            self._pending.append(event)
        if not data:
            self._pending.append(None)
        return True

    def _next(self, timeout: float | None = None) -> Any:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self._pending:
            if time.monotonic() >= deadline or not self._read(deadline):
                raise TimeoutError("nothing from the gateway in time")
        return self._pending.pop(0)

    # -- the handshake ---------------------------------------------------------------------

    def open(self, *, early: bytes = b"") -> SocketClient:
        """Send the upgrade request (and ``early`` bytes with it), wait for the answer."""
        self.raw(self._conn.send(self._request) + early)
        event = self._next()
        if isinstance(event, AcceptConnection):
            self.accepted = event
            return self
        if isinstance(event, RejectConnection):
            status, headers = event.status_code, list(event.headers)
            body = b""
            finished = not event.has_body
            while not finished:
                data = self._next()
                if data is None:
                    break
                if isinstance(data, RejectData):
                    body += data.data
                    finished = data.body_finished
            self.close()
            raise Refused(status, headers, body)
        self.close()
        raise AssertionError(f"unexpected handshake answer {event!r}")

    # -- messages --------------------------------------------------------------------------

    def send_json(self, value: Any) -> None:
        self._out(Message(data=json.dumps(value)))

    def send_text(self, text: str, *, fin: bool = True) -> None:
        self._out(Message(data=text, message_finished=fin))

    def send_bytes(self, data: bytes) -> None:
        self._out(Message(data=data))

    def ping(self, payload: bytes = b"") -> None:
        self._out(Ping(payload=payload))

    def ping_bytes(self, payload: bytes = b"") -> bytes:
        """A ping frame, not sent (a test writes many at once)."""
        return self._conn.send(Ping(payload=payload))

    def receive(self, timeout: float | None = None) -> Any:
        """The next message (parsed JSON for text), answering pings; :class:`Closed` at the
        close."""
        while True:
            event = self._next(timeout)
            if event is None:
                raise Closed(None)
            if isinstance(event, Ping):
                self._out(event.response())
            elif isinstance(event, Pong):
                self.pongs.append(bytes(event.payload))
            elif isinstance(event, CloseConnection):
                if self._conn.state.name == "REMOTE_CLOSING":
                    self._out(event.response())
                raise Closed(event.code, event.reason or "")
            elif isinstance(event, TextMessage | BytesMessage):
                self._parts.append(
                    bytes(event.data) if isinstance(event, BytesMessage) else event.data
                )
                if event.message_finished:
                    parts, self._parts = self._parts, []
                    if isinstance(event, BytesMessage):
                        return b"".join(parts)  # type: ignore[arg-type]
                    return json.loads("".join(parts))  # type: ignore[arg-type]

    def request(self, value: dict[str, Any], timeout: float | None = None) -> list[dict[str, Any]]:
        """Send one ``response.create`` (``type`` added) and read its answer to its end."""
        self.send_json({"type": "response.create", **value})
        return self.answer(timeout)

    def request_text(self, text: str) -> Any:
        """Send ``text`` and read the one message that answers it."""
        self.send_text(text)
        return self.receive()

    def answer(self, timeout: float | None = None) -> list[dict[str, Any]]:
        frames: list[dict[str, Any]] = []
        while True:
            frame = self.receive(timeout)
            frames.append(frame)
            if isinstance(frame, dict) and frame.get("type") in TERMINAL:
                return frames

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> SocketClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def deflated(text: str) -> bytes:
    """``text`` compressed as permessage-deflate frames it (the sync tail left off)."""
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS)
    data = compressor.compress(text.encode()) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return data[:-4]
