"""The gateway's WebSocket protocol (``_server/_socket.py``) at its edges, on a real
:class:`copilot_host.gateway.GatewayServer` and real sockets: upgrade requests wsproto cannot
read, apps that refuse or fail a handshake their own way, a refusal written in parts, writes
a client leaves unread (flow control, pongs left out, an idle socket aborted), what an app
may send, a close that waits for the client's answer, and the protocol under uvicorn's own
HTTP protocol, where no guard watches it.

The app is a small ASGI one (:class:`_EdgeApp`); the bounds are in test_socket_bounds.py
and the gateway's own socket requests in test_socket.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn
from wsproto.events import CloseConnection, Message, Pong, RejectConnection, RejectData

from copilot_host.gateway._app import _intake
from copilot_host.gateway._server import Hardening, _serving
from copilot_host.gateway._server._socket import SocketLimits, socket_protocol
from copilot_host.gateway._server._stack import PURE_PYTHON, ServerStack
from tests._extras import require
from tests._wsclient import Closed, Refused, SocketClient
from tests.gateway.test_socket_bounds import BOUND, BUSY, STACK_IDS, STACKS, _close_code, _Running

MIB = 1024 * 1024
# More than the kernel's socket buffers hold on a loopback connection, so most of it waits
# in the server's own write buffer while the client reads nothing.
UNREAD = 16 * MIB


class _EdgeApp:
    """Answers a handshake as its query says: ``close`` (closed before accepting),
    ``raise``, ``return`` (neither answered), ``deny`` (a 401 written in parts, the last
    once :attr:`go` is set); any other, accepted. Then each text message: ``flood N SIZE``
    is answered with N JSON strings of SIZE bytes (busy meanwhile), ``bytes`` with a binary
    message, ``odd`` with a message the server does not know and then 3, ``close`` by
    closing (4000), anything else with its length. Each disconnect's code is noted."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.calls = 0
        self.disconnects: list[int] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return
        self.calls += 1
        await receive()
        query = scope["query_string"]
        if query == b"close":
            await send({"type": "websocket.close", "code": 1000})
            return
        if query == b"raise":
            raise RuntimeError("the handler failed")
        if query == b"return":
            return
        if query == b"deny":
            start = {"status": 401, "headers": [(b"content-length", b"4")]}
            await send({"type": "websocket.http.response.start", **start})
            await send({"type": "websocket.http.response.body", "body": b"no", "more_body": True})
            await asyncio.to_thread(self.go.wait, BOUND)
            await send({"type": "websocket.http.response.body", "body": b"pe", "more_body": True})
            await send({"type": "websocket.http.response.body", "body": b""})
            return
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                self.disconnects.append(message["code"])
                return
            await self._answer(message.get("text") or "", send)

    async def _answer(self, text: str, send: Any) -> None:
        if text.startswith("flood "):
            _, count, size = text.split()
            await send({"type": BUSY, "busy": True})
            for _ in range(int(count)):
                await send({"type": "websocket.send", "text": json.dumps("x" * (int(size) - 2))})
            await send({"type": BUSY, "busy": False})
        elif text == "bytes":
            await send({"type": "websocket.send", "bytes": b"\x00\xff"})
        elif text == "odd":
            await send({"type": "websocket.odd"})
            await send({"type": "websocket.send", "text": "3"})
        elif text == "close":
            await send({"type": "websocket.close", "code": 4000, "reason": "bye"})
        else:
            await send({"type": "websocket.send", "text": json.dumps(len(text))})


@pytest.fixture
def edge_server() -> Iterator[Callable[..., _Running]]:
    """Starts a GatewayServer serving an :class:`_EdgeApp` (on the pure-Python stack, or
    ``stack``); each is stopped when the test ends."""
    made: list[_Running] = []

    def start(stack: ServerStack = PURE_PYTHON, grace: int = 5, **hardening: Any) -> _Running:
        if stack.http == "httptools":
            require("httptools")
        hardening.setdefault("head_timeout", 2.0)
        server = _Running(stack, Hardening(**hardening), grace, app=_EdgeApp())
        made.append(server)
        return server

    yield start
    for server in made:
        server.stop()


def _app(server: _Running) -> _EdgeApp:
    app = server.app
    assert isinstance(app, _EdgeApp)
    return app


def _heard(app: _EdgeApp) -> list[int]:
    """The disconnect codes the app heard, once it heard one (the server's thread tells
    it)."""
    deadline = time.monotonic() + BOUND
    while not app.disconnects and time.monotonic() < deadline:
        time.sleep(0.01)
    return app.disconnects


def _upgrade(port: int, *, host: str | None = None, version: str = "13", key: bool = True) -> bytes:
    """An upgrade request written by hand (wsproto's client writes only valid ones)."""
    lines = [
        "GET /v1/responses HTTP/1.1",
        f"Host: {host or f'127.0.0.1:{port}'}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Authorization: Bearer " + "k" * 20,
    ]
    if version:
        lines.append(f"Sec-WebSocket-Version: {version}")
    if key:
        lines.append("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _http_answer(port: int, request: bytes) -> tuple[bytes, bytes]:
    """The status line and the rest of what the server writes before it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status, _, rest = data.partition(b"\r\n")
    return status, rest


def _rest(client: SocketClient) -> list[Any]:
    """What the client reads until the connection ends (a close's code for a close frame;
    wsproto's 1006 for the end of the connection), answering nothing."""
    seen: list[Any] = []
    while (event := client._next()) is not None:
        seen.append(event.code if isinstance(event, CloseConnection) else event)
    return seen


@pytest.mark.parametrize("stack", STACKS, ids=STACK_IDS)
def test_an_upgrade_wsproto_cannot_read_is_an_http_answer(
    edge_server: Callable[..., _Running], stack: ServerStack
) -> None:
    """RFC 6455 §4.2.2: a handshake the server cannot take is answered over HTTP; a
    version it does not speak with 426 and the one it does. The app never hears of it."""
    server = edge_server(stack)
    port = server.port
    status, rest = _http_answer(port, _upgrade(port, version="8"))
    assert status == b"HTTP/1.1 426 ", status
    assert b"sec-websocket-version: 13\r\n" in rest.lower()
    for request in (
        _upgrade(port, key=False),
        # A Host wsproto cannot read as IDNA (an ACE label that is no punycode).
        _upgrade(port, host="xn--zz"),
    ):
        status, _rest = _http_answer(port, request)
        assert status == b"HTTP/1.1 400 ", status
    assert _app(server).calls == 0


def test_a_handshake_the_app_closes_fails_or_leaves_unanswered(
    edge_server: Callable[..., _Running], caplog: pytest.LogCaptureFixture
) -> None:
    """ASGI: a close before the accept is a 403; an app that raises, or returns without
    answering, leaves the client a 500, and the failure is logged without the request's
    headers."""
    server = edge_server()
    marker = "hdr-" + "y" * 30
    caplog.set_level(logging.DEBUG, logger="copilot_host.gateway")
    for query, status in (("close", 403), ("raise", 500), ("return", 500)):
        with pytest.raises(Refused) as refused:
            server.socket(path=f"/v1/responses?{query}", headers=(("x-marker", marker),)).open()
        assert refused.value.status == status, query
    warned = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("copilot_host")
    ]
    assert warned == ["the gateway's socket handler failed (RuntimeError)"]
    assert not any(marker in r.getMessage() for r in caplog.records)


def test_a_refusal_written_in_parts_arrives_whole_and_bytes_meanwhile_are_ignored(
    edge_server: Callable[..., _Running],
) -> None:
    server = edge_server()
    app = _app(server)
    client = SocketClient(server.port, "k" * 20, path="/v1/responses?deny")
    with client:
        client.raw(client._conn.send(client._request))
        head = client._next()
        assert isinstance(head, RejectConnection) and head.status_code == 401
        # A frame while the refusal is being written: nothing to parse it as.
        client.raw(b"\x81\x85" + b"\x00" * 4 + b"hello")
        app.go.set()
        body = b""
        while True:
            event = client._next()
            assert isinstance(event, RejectData), event
            body += event.data
            if event.body_finished:
                break
        assert body == b"nope"
        assert client._next() is None  # then the connection ends


def test_a_pong_is_left_out_while_the_client_leaves_the_writes_unread(
    edge_server: Callable[..., _Running],
) -> None:
    """A pong is never queued behind megabytes the client has not read (the module's
    rule, against ping floods); once they are read, a ping is answered. A write that
    outgrows the buffer makes the app's next one wait (flow control): an answer never
    overtakes the one before it."""
    server = edge_server()
    with server.socket().open() as client:
        client.send_text(f"flood 1 {UNREAD}")
        assert client._read(time.monotonic() + BOUND)  # the answer has begun: it waits
        client.ping(b"lagging")
        client.send_text("after")
        assert client.receive() == "x" * (UNREAD - 2)
        assert client.receive() == 5
        # An unasked pong is nothing to answer; a ping now, with the writes read, is.
        client.raw(client._conn.send(Pong(payload=b"unasked")))
        client.ping(b"read")
        assert client.request_text("later") == 5
        assert client.pongs == [b"read"]


def test_an_idle_socket_whose_client_reads_nothing_is_aborted(
    edge_server: Callable[..., _Running],
) -> None:
    """Closed for idleness with writes still unread: no close frame could reach the client
    (it reads nothing), so the connection is aborted, not held while it waits."""
    server = edge_server(socket_idle_seconds=0.3)
    app = _app(server)
    with server.socket().open() as client:
        client.send_text(f"flood 1 {UNREAD}")
        assert _heard(app) == [1000]
        with pytest.raises(Closed) as closed:
            client.receive()
        assert closed.value.code == 1006  # the answer cut, no close frame


def test_a_client_closing_mid_answer_gets_its_close_answered_and_no_more(
    edge_server: Callable[..., _Running],
) -> None:
    """The app writing a long answer hears the client's close code; what it still sends
    after the close goes nowhere."""
    server = edge_server()
    app = _app(server)
    with server.socket().open() as client:
        client.send_text(f"flood 4 {UNREAD // 4}")
        assert client._read(time.monotonic() + BOUND)  # the first message has begun
        client.raw(client._conn.send(CloseConnection(code=1000)))
        assert client.receive() == "x" * (UNREAD // 4 - 2)
        assert _rest(client) == [1000, 1006]  # the close answered, then the end
    assert _heard(app) == [1000]


def test_messages_in_one_read_are_answered_in_order(edge_server: Callable[..., _Running]) -> None:
    server = edge_server()
    with server.socket().open() as client:
        client.raw(b"".join(client._conn.send(Message(data=text)) for text in ("ab", "abc", "a")))
        assert [client.receive() for _ in range(3)] == [2, 3, 1]


def test_what_an_app_sends_besides_text(edge_server: Callable[..., _Running]) -> None:
    """Bytes go as a binary message; a message type the server does not know is ignored;
    a close the app starts is sent with its code and reason."""
    server = edge_server()
    with server.socket().open() as client:
        assert client.request_text("bytes") == b"\x00\xff"
        assert client.request_text("odd") == 3
        client.send_text("close")
        with pytest.raises(Closed) as closed:
            client.receive()
        assert (closed.value.code, closed.value.reason) == (4000, "bye")


def test_non_ascii_text_is_bounded_by_its_utf8_length(
    edge_server: Callable[..., _Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_serving, "MAX_BODY_BYTES", 1000)
    server = edge_server()
    with server.socket().open() as client:
        assert client.request_text("é" * 400) == 400  # 800 bytes
        client.send_text("é" * 600)  # 600 characters, 1200 bytes
        assert _close_code(client) == 1009


def test_a_socket_closing_for_size_sends_one_close_frame_whatever_its_deadline_does(
    edge_server: Callable[..., _Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message over the cap is closed with 1009 at once; its deadline, still running,
    neither sends a second close frame (1008) nor keeps the client's answer from ending
    the connection."""
    monkeypatch.setattr(_serving, "MAX_BODY_BYTES", 1000)
    monkeypatch.setattr(_intake, "BODY_SECONDS", 0.2)
    server = edge_server()
    with server.socket().open() as client:
        client.send_text("x" * 900, fin=False)
        client.send_text("x" * 200, fin=False)
        close = client._next()
        assert isinstance(close, CloseConnection) and close.code == 1009
        time.sleep(0.5)  # past the message's deadline, grown by what of it came
        client.raw(client._conn.send(close.response()))
        assert _rest(client) == [1006]  # the end, nothing more


def test_a_stop_ends_a_socket_whose_close_is_unanswered_at_once(
    edge_server: Callable[..., _Running],
) -> None:
    """A close waits ``close_seconds`` (2 s) for the client's answer; a stop does not."""
    server = edge_server()
    with server.socket().open() as client:
        client.send_text("close")
        close = client._next()
        assert isinstance(close, CloseConnection) and close.code == 4000
        began = time.monotonic()
        threading.Thread(target=server.server.stop, daemon=True).start()
        assert _rest(client) == [1006]
        assert time.monotonic() - began < 1.5


def test_the_protocol_serves_under_uvicorns_own_http_protocol() -> None:
    """No guard watches a socket handed over by uvicorn's own h11 protocol: the socket
    still serves, takes the app's word that it is busy with nothing to tell, and closes."""
    app = _EdgeApp()
    limits = SocketLimits(max_message_bytes=1000, message_seconds=lambda _received: BOUND)
    config = uvicorn.Config(
        app,
        http="h11",
        ws=socket_protocol(app, limits),
        lifespan="off",
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        thread = threading.Thread(
            target=asyncio.run, args=(server.serve(sockets=[listener]),), daemon=True
        )
        thread.start()
        try:
            deadline = time.monotonic() + BOUND
            while not server.started:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            port = listener.getsockname()[1]
            with SocketClient(port, "k" * 20).open() as client:
                assert client.request_text("flood 1 10") == "x" * 8
                assert client.request_text("abc") == 3
                client.send_text("close")
                assert _close_code(client) == 4000
            assert _heard(app) == [4000]
        finally:
            server.should_exit = True
            thread.join(BOUND)
