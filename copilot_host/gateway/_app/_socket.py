"""Responses over WebSocket, as Codex speaks it: a socket's handshake, then its messages.

The handshake (``GET /v1/responses`` or ``GET /responses`` with ``Upgrade: websocket``) is
checked as an HTTP request is (:mod:`._access`: Host, Origin, the key); a refusal is an
HTTP answer in OpenAI's error shape (ASGI's ``websocket.http.response`` extension; a
server without it is sent ``websocket.close``, which it answers 403), never an upgrade.
Each text message is then one of:

* ``response.create``: a Responses request, made into the HTTP request it stands for by
  the socket's :class:`~._chain.Conversation` (socket intake) and sent through the same
  :class:`~._pipeline.Pipeline` as ``POST /v1/responses``, on a flow whose ``transport``
  is ``"ws"`` and whose answer goes out as frames (:class:`~._frames.Frames`); one at a
  time (a second while one runs is refused);
* ``response.processed``: an acknowledgement some clients send; nothing to do;
* anything else: refused (an error frame).

For a model that lists ``ws:/responses`` the request goes up over Copilot's own socket,
one per client socket (:mod:`._copilot_socket`), else over HTTP.

A binary message is refused and the socket closed (1003). A socket serves for
:data:`MAX_AGE_SECONDS` at most: a request after that, or the end of one running then, is
answered with the error frame Codex reconnects on (429
``websocket_connection_limit_reached``), and the socket closes. Every request, refused or
served, gets its access line (``WS /v1/responses ...``). Nothing is shared between sockets:
a response id from one is unknown on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import copilot_host as ch

from .._json import NotJson, dumps, loads
from .._protocols import RESPONSES
from ._access import Refusal, RequestHeaders, check_access, read_headers
from ._account import writer
from ._chain import Conversation
from ._copilot_socket import SocketUpstream
from ._failures import answer_failure
from ._flow import Flow, Message, Receive, Send
from ._frames import Frames, error_frame
from ._intake import OFF_LOOP_ABOVE
from ._pipeline import Pipeline
from ._socket_health import CopilotSockets

__all__ = ["BUSY", "MAX_AGE_SECONDS", "SOCKET_PATHS", "serve_socket"]

# The paths a socket is taken on (the Responses API's).
SOCKET_PATHS = RESPONSES.paths
# The longest a socket serves (OpenAI's sockets: 60 minutes; Codex reconnects on the error).
MAX_AGE_SECONDS = 3600.0
# The ASGI extension through which the gateway's server learns whether a request runs on a
# socket (a socket is idle, and may be closed for room or idleness, only between requests).
BUSY = "copilot_host.busy"


class _Denial:
    """A handshake's refusal, written as HTTP through ASGI's denial-response extension."""

    def __init__(self, send: Send, extended: bool) -> None:
        self._send = send
        self._extended = extended

    async def __call__(self, message: Message) -> None:
        if not self._extended:
            if message["type"] == "http.response.start":
                await self._send({"type": "websocket.close", "code": 1008})
            return
        kind = message["type"].replace("http.response.", "websocket.http.response.")
        await self._send({**message, "type": kind})


async def serve_socket(
    scope: Message,
    receive: Receive,
    send: Send,
    *,
    pipeline: Pipeline,
    key: bytes,
    hosts: frozenset[bytes] | None,
    clock: ch.Clock,
    access_line: Callable[[str], None] | None,
    sockets: CopilotSockets | None = None,
) -> None:
    """One socket, from its handshake to its end (see the module docstring); ``sockets``
    gives it an upstream of its own on Copilot's socket, for the models that list one."""
    if (await receive())["type"] != "websocket.connect":
        return
    headers = read_headers(scope["headers"])
    path: str = scope["path"]
    refusal = check_access(headers, hosts, key) if path in SOCKET_PATHS else None
    if path not in SOCKET_PATHS:
        refusal = Refusal(
            404,
            "not_found",
            "copilot-host gateway: sockets are served on "
            + " and ".join(f"GET {p}" for p in SOCKET_PATHS),
        )
    extensions = scope.get("extensions") or {}
    if refusal is not None:
        flow = Flow(
            receive,
            _Denial(send, "websocket.http.response" in extensions),
            headers=headers,
            path=path,
            method="WS",
            errors=RESPONSES.errors,
            started=time.perf_counter(),
            transport="ws",
        )
        log = writer(flow, access_line)
        flow.outcome.on_done = log
        await flow.refuse(refusal)
        log()
        return
    # No subprotocol, no headers: nothing Codex reads from the 101 is wanted (a
    # x-codex-websocket-max-message-bytes there would cap its messages).
    await send({"type": "websocket.accept"})
    session = _Session(
        scope,
        receive,
        send,
        headers=headers,
        pipeline=pipeline,
        clock=clock,
        access_line=access_line,
        busy=BUSY in extensions,
        upstream=SocketUpstream(sockets) if sockets is not None else None,
    )
    await session.run()


class _Session:
    """One open socket: its messages, its conversation, its request in flight."""

    def __init__(
        self,
        scope: Message,
        receive: Receive,
        send: Send,
        *,
        headers: RequestHeaders,
        pipeline: Pipeline,
        clock: ch.Clock,
        access_line: Callable[[str], None] | None,
        busy: bool,
        upstream: SocketUpstream | None = None,
    ) -> None:
        self._path: str = scope["path"]
        self._receive = receive
        self._send = send
        self._headers = headers
        self._pipeline = pipeline
        self._clock = clock
        self._opened = clock.monotonic()
        self._access_line = access_line
        self._tells_busy = busy
        self._conversation = Conversation()
        self._turn: asyncio.Task[None] | None = None
        self._gone = asyncio.Event()
        self._closed = False
        self._upstream = upstream

    async def run(self) -> None:
        try:
            while not self._closed:
                message = await self._receive()
                if message["type"] == "websocket.disconnect":
                    break
                if message["type"] == "websocket.receive":
                    await self._message(message)
        finally:
            self._gone.set()
            turn = self._turn
            if turn is not None and not turn.done():
                # The request's own watcher sees the socket go (as a client hanging up).
                await asyncio.wait([turn])
            if self._upstream is not None:
                await self._upstream.aclose()

    def _flow(self) -> Flow:
        flow = Flow(
            self._receive,
            Frames(self._send, self._conversation),
            headers=self._headers,
            path=self._path,
            method="WS",
            errors=RESPONSES.errors,
            started=time.perf_counter(),
            transport="ws",
        )
        task = asyncio.current_task()
        assert task is not None
        flow.task = task
        flow.upstream = self._upstream
        return flow

    async def _refuse(self, refusal: Refusal) -> None:
        flow = self._flow()
        log = writer(flow, self._access_line)
        flow.outcome.on_done = log
        flow.body_read = True
        await flow.refuse(refusal)
        log()

    async def _message(self, message: Message) -> None:
        text = message.get("text")
        if text is None:
            await self._refuse(_BINARY)
            await self._close(1003, "text frames only")
            return
        data = text.encode("utf-8", "surrogatepass")
        try:
            value = (
                await asyncio.to_thread(loads, data) if len(data) > OFF_LOOP_ABOVE else loads(data)
            )
        except NotJson:
            value = None
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "response.processed":
            return
        if not isinstance(value, dict) or kind != "response.create":
            await self._refuse(_UNKNOWN if isinstance(value, dict) else _NOT_JSON)
            return
        if self._turn is not None and not self._turn.done():
            await self._refuse(_IN_FLIGHT)
            return
        if self._expired():
            flow = self._flow()
            log = writer(flow, self._access_line)
            flow.outcome.on_done = log
            await flow.answer(_TOO_OLD.status, dumps(_too_old()))
            log()
            await self._close(1000, "socket age limit")
            return
        self._turn = asyncio.get_running_loop().create_task(self._serve(value))

    async def _serve(self, value: dict[str, Any]) -> None:
        flow = self._flow()
        frames = flow.send
        assert isinstance(frames, Frames)
        log = writer(flow, self._access_line)
        flow.outcome.on_done = log
        await self._tell_busy(True)
        try:
            body = self._conversation.request(value)
            if isinstance(body, Refusal):
                flow.body_read = True
                await flow.refuse(body)
                return
            flow.receive = self._body_then_gone(body)
            if self._upstream is not None:
                # What the client chained on: Copilot's socket sends only the new items
                # when it is the response that socket holds.
                self._upstream.previous = value.get("previous_response_id")
            try:
                await self._pipeline.inference(flow, RESPONSES)
            except Exception as exc:
                # Raised again when the answer had started (answer_cut): the frame below.
                with contextlib.suppress(ch.CopilotHostError):
                    await answer_failure(flow, exc)
        finally:
            if not frames.ended and not self._gone.is_set():
                await self._send_frame(error_frame(502, _CUT))
            log()
            await self._tell_busy(False)
        if self._expired() and not self._gone.is_set():
            await self._send_frame(error_frame(_TOO_OLD.status, _too_old()["error"]))
            await self._close(1000, "socket age limit")

    def _body_then_gone(self, body: bytes) -> Receive:
        """The flow's ``receive``: the request's body, then (as a client hanging up) the
        socket's end."""
        given = False

        async def receive() -> Message:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await self._gone.wait()
            return {"type": "http.disconnect"}

        return receive

    def _expired(self) -> bool:
        return self._clock.monotonic() - self._opened >= MAX_AGE_SECONDS

    async def _send_frame(self, frame: dict[str, Any]) -> None:
        await self._send({"type": "websocket.send", "text": dumps(frame).decode("utf-8")})

    async def _close(self, code: int, reason: str) -> None:
        self._closed = True
        await self._send({"type": "websocket.close", "code": code, "reason": reason})

    async def _tell_busy(self, busy: bool) -> None:
        if self._tells_busy:
            await self._send({"type": BUSY, "busy": busy})


_BINARY = Refusal(
    400,
    "binary_frame",
    "copilot-host gateway: the socket takes text frames (JSON), not binary ones",
)
_NOT_JSON = Refusal(
    400, "invalid_json", "copilot-host gateway: a socket message is a JSON object (UTF-8)"
)
_UNKNOWN = Refusal(
    400,
    "unsupported_message_type",
    'copilot-host gateway: a socket message is {"type": "response.create", ...}',
)
_IN_FLIGHT = Refusal(
    400,
    "request_in_progress",
    "copilot-host gateway: one request at a time per socket; wait for the answer to end",
)
_TOO_OLD = Refusal(
    429,
    "websocket_connection_limit_reached",
    f"copilot-host gateway: a socket serves {MAX_AGE_SECONDS / 60:.0f} minutes at most; "
    "open a new one to continue",
)


def _too_old() -> dict[str, Any]:
    # The error's type as OpenAI's sockets send it (docs/WIRE.md): Codex reconnects on it.
    limit = _TOO_OLD
    error = {"type": "invalid_request_error", "code": limit.code, "message": limit.message}
    return {"error": error}


_CUT = {
    "type": "server_error",
    "code": "answer_cut",
    "message": "copilot-host gateway: the answer broke off before it ended; send the request again",
}
