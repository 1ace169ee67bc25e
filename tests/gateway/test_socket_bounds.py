"""The bounds the gateway's server keeps on WebSocket connections (``_server/_socket.py`` under
the connection guard of ``_server/_hardening.py``), on a real
:class:`copilot_host.gateway.GatewayServer` in this process, on both HTTP parsers serve may
use, with real sockets and short limits: the message cap and its deadline, bytes before the
handshake's answer, ping floods, the idle close, the connection bound (idle sockets go first
for room), the head deadline until the handshake is answered, and the stop (1001).

The app is a small one that speaks ASGI's websocket interface as the gateway does (a busy
flag through the ``copilot_host.busy`` extension); the gateway's own socket requests are
tested in test_socket.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from copilot_host.gateway import GatewayServer
from copilot_host.gateway._app import _intake
from copilot_host.gateway._server import Hardening
from copilot_host.gateway._server._stack import PURE_PYTHON, ServerStack
from tests._extras import require
from tests._wsclient import Closed, Refused, SocketClient, handshake_bytes

STACKS = [ServerStack(http="httptools"), PURE_PYTHON]
STACK_IDS = ["httptools", "h11"]
BOUND = 10.0
BUSY = "copilot_host.busy"


class _App:
    """Accepts a keyed socket; answers each text message with its length, ``hold`` after
    ``hold_seconds`` (busy meanwhile); ``?slow`` accepts after 0.3 s, ``?never`` never."""

    def __init__(self) -> None:
        self.hold_seconds = 1.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-length", b"2")],
                }
            )
            await send({"type": "http.response.body", "body": b"ok"})
            return
        if scope["type"] != "websocket":
            return
        await receive()
        query = scope["query_string"]
        if query == b"never":
            await asyncio.sleep(3600)
        if query == b"slow":
            await asyncio.sleep(0.3)
        if b"authorization" not in dict(scope["headers"]):
            await send(
                {
                    "type": "websocket.http.response.start",
                    "status": 401,
                    "headers": [(b"content-length", b"2")],
                }
            )
            await send({"type": "websocket.http.response.body", "body": b"no"})
            return
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text") or ""
            if text == "hold":
                await send({"type": BUSY, "busy": True})
                await asyncio.sleep(self.hold_seconds)
                await send({"type": "websocket.send", "text": json.dumps("held")})
                await send({"type": BUSY, "busy": False})
            else:
                await send({"type": "websocket.send", "text": json.dumps(len(text))})


class _Running:
    """A GatewayServer serving ``app`` (by default an :class:`_App`) on a loopback port, in a
    thread of its own."""

    def __init__(
        self, stack: ServerStack, hardening: Hardening, grace: int, app: Any = None
    ) -> None:
        self.app = app if app is not None else _App()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.server = GatewayServer(
            listener=self.listener, stack=stack, hardening=hardening, lifespan=False, grace=grace
        )
        self.thread = threading.Thread(
            target=asyncio.run, args=(self.server.serve(self.app),), daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + BOUND
        while not self.server.started:
            assert time.monotonic() < deadline
            time.sleep(0.01)

    def socket(self, **options: Any) -> SocketClient:
        return SocketClient(self.port, "k" * 20, **options)

    def stop(self) -> None:
        self.server.stop()
        self.thread.join(BOUND)
        self.listener.close()


@pytest.fixture(params=STACKS, ids=STACK_IDS)
def running(request: pytest.FixtureRequest) -> Iterator[Any]:
    made: list[_Running] = []
    stack: ServerStack = request.param
    if stack.http == "httptools":
        require("httptools")

    def start(grace: int = 5, **hardening: Any) -> _Running:
        hardening.setdefault("head_timeout", 2.0)
        server = _Running(stack, Hardening(**hardening), grace)
        made.append(server)
        return server

    yield start
    for server in made:
        server.stop()


def _close_code(client: SocketClient, within: float = BOUND) -> int | None:
    began = time.monotonic()
    while True:
        try:
            client.receive(timeout=max(within - (time.monotonic() - began), 0.01))
        except Closed as closed:
            return closed.code


def test_a_message_over_the_body_cap_is_closed_with_1009(running: Any) -> None:
    server = running()
    with server.socket().open() as client:
        assert client.request_text("x" * 1000) == 1000
        # The server may close while it is still sending.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            client.send_text("x" * (_intake.MAX_BODY_BYTES + 1))
        assert _close_code(client) in (1009, None)


def test_a_message_fragmented_without_end_is_closed_after_its_deadline(
    running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_intake, "BODY_SECONDS", 0.5)
    server = running()
    with server.socket().open() as client:
        began = time.monotonic()
        client.send_text("{", fin=False)
        for _ in range(5):  # fragments keep coming, the message never ends
            time.sleep(0.1)
            client.send_text("x", fin=False)
        assert _close_code(client) == 1008
        assert 0.4 <= time.monotonic() - began < 5.0


def test_bytes_sent_before_the_handshakes_answer_close_the_socket(running: Any) -> None:
    """RFC 6455 §4.1: a client waits for the 101. Frames in the same write as the upgrade
    request, or sent while the app decides, end the socket with 1002 after the 101."""
    server = running()
    frame = b"\x81\x85" + b"\x00" * 4 + b"hello"  # a masked text frame, all-zero mask
    with server.socket().open(early=frame) as client:
        assert _close_code(client) == 1002
    with server.socket(path="/v1/responses?slow") as client:
        port = server.port
        client.raw(handshake_bytes(port, "/v1/responses?slow", (("authorization", "Bearer x"),)))
        time.sleep(0.05)  # another read: the app has not answered yet
        client.raw(frame)
        data = b""
        client._sock.settimeout(BOUND)
        while b"\r\n\r\n" not in data:
            data += client._sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 101"), data
        rest = data.split(b"\r\n\r\n", 1)[1] or client._sock.recv(65536)
        assert rest[:2] == b"\x88\x02" or rest[0] == 0x88, rest  # a close frame
        assert int.from_bytes(rest[2:4], "big") == 1002


def test_a_ping_flood_gets_one_pong_per_read_and_the_socket_serves_on(running: Any) -> None:
    server = running()
    with server.socket().open() as client:
        client.raw(b"".join(client.ping_bytes(b"p") for _ in range(5000)))
        assert client.request_text("after") == 5
        assert 1 <= len(client.pongs) <= 20, len(client.pongs)


def test_an_idle_socket_is_closed_a_busy_one_is_not(running: Any) -> None:
    server = running(socket_idle_seconds=0.5)
    server.app.hold_seconds = 1.5
    with server.socket().open() as idle, server.socket().open() as busy:
        busy.send_text("hold")
        began = time.monotonic()
        assert _close_code(idle) == 1000
        assert 0.4 <= time.monotonic() - began < 3.0
        assert busy.receive() == "held"  # held past the idle limit: not closed meanwhile
        assert _close_code(busy) == 1000  # then idle in turn


def test_idle_sockets_are_the_first_to_go_for_room_and_count_in_the_bound(running: Any) -> None:
    server = running(max_connections=4)
    server.app.hold_seconds = 3.0
    sockets = [server.socket().open() for _ in range(4)]
    try:
        # The bound is full of sockets: a newcomer takes the longest idle one's place.
        sockets.append(server.socket().open())
        assert _close_code(sockets[0], 3.0) == 1000
        assert sockets[-1].request_text("here") == 4
        for client in sockets[1:]:
            client.send_text("hold")
        time.sleep(0.2)
        # Every socket busy: a newcomer that has sent nothing yet is closed instead (the
        # sockets fill the bound; none of them is evicted).
        with socket.create_connection(("127.0.0.1", server.port), timeout=BOUND) as extra:
            began = time.monotonic()
            assert _closed_unanswered(extra)
            assert time.monotonic() - began < 1.0
        for client in sockets[1:]:
            assert client.receive() == "held"
    finally:
        for client in sockets:
            client.close()


def _closed_unanswered(sock: socket.socket) -> bool:
    sock.settimeout(BOUND)
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True


def test_an_undecided_handshake_is_held_to_the_head_deadline(running: Any) -> None:
    server = running(head_timeout=0.5)
    with socket.create_connection(("127.0.0.1", server.port), timeout=BOUND) as sock:
        sock.sendall(
            handshake_bytes(server.port, "/v1/responses?never", (("authorization", "Bearer x"),))
        )
        began = time.monotonic()
        assert _closed_unanswered(sock)
        assert 0.3 <= time.monotonic() - began < 3.0


def test_a_keyless_handshake_is_an_http_answer(running: Any) -> None:
    server = running()
    with pytest.raises(Refused) as refused:
        SocketClient(server.port, None).open()
    assert refused.value.status == 401 and refused.value.body == b"no"


def test_an_upgrade_elsewhere_is_answered_over_http_without_a_warning(
    running: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = running()
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    with pytest.raises(Refused) as refused:
        server.socket(path="/").open()
    assert refused.value.status == 200 and refused.value.body == b"ok"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_stop_closes_idle_sockets_at_once_and_busy_ones_after_their_request(running: Any) -> None:
    server = running(grace=5)
    server.app.hold_seconds = 1.0
    with server.socket().open() as idle, server.socket().open() as busy:
        busy.send_text("hold")
        time.sleep(0.2)
        began = time.monotonic()
        threading.Thread(target=server.server.stop, daemon=True).start()
        assert _close_code(idle) == 1001
        assert time.monotonic() - began < 1.0
        assert busy.receive() == "held"
        assert _close_code(busy) == 1001


def test_a_stop_closes_a_socket_busy_past_the_grace_period(running: Any) -> None:
    server = running(grace=1)
    server.app.hold_seconds = 30.0
    with server.socket().open() as busy:
        busy.send_text("hold")
        time.sleep(0.2)
        began = time.monotonic()
        threading.Thread(target=server.server.stop, daemon=True).start()
        assert _close_code(busy) == 1001
        assert 0.8 <= time.monotonic() - began < 4.0
