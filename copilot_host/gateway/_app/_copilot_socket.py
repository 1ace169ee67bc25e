"""Copilot's own Responses WebSocket as the upstream of a client's socket.

For a model whose entry lists ``ws:/responses`` (``route.spec.websocket``), a request that
came on a client's socket goes up over one socket to ``wss://{api}/responses`` that the
client's socket owns (:class:`SocketUpstream`, the relay stage's ``flow.upstream``), as VS
Code sends it (docs/WIRE.md, "Copilot's own WebSocket"): the handshake with the session's
headers (:meth:`copilot_host.CopilotAuth.ahandshake_headers`), each request a
``response.create`` message with ``initiator`` in its body, and, when the client chained
on the last response this socket holds, only the new items with ``previous_response_id``
(passed through: the ids the client sees are the service's). The stages before the relay
see the whole request, as for an HTTP upstream (the socket's conversation,
:mod:`._chain`, is still kept, to send a request whole when it must); the answer comes back
through :func:`~._relay.relay_answer`, each frame one Server-Sent Event
(:mod:`._copilot_frames`).

Between requests a socket is opened anew when the session's headers changed (a refreshed
session, another identity), when a request carries images and the socket was opened
without ``Copilot-Vision-Request``, and after :data:`MAX_AGE_SECONDS`; a new socket holds no
chain, so its first request goes whole. Degradations, each as VS Code's
``chatMLFetcher.ts`` handles them:

* a refused handshake (any status, a network failure; a 401 once more with a new session
  first): the request goes over HTTP, and so does every later one of this client socket;
* the socket closed before the answer's first frame: the request is sent whole on a new
  socket (at most three sends), then over HTTP; closed after frames were relayed, the
  client's answer is cut (an error frame; Codex sends its request again);
* ``previous_response_not_found``: the request whole on the same socket;
  ``session_expired``: a new handshake, then whole; a server error: once over HTTP;
* three failures in a row for one model turn its sockets off a while (:mod:`._socket_health`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2

import copilot_host as ch

from .._json import dumps, loads
from ._copilot_frames import (
    FORGOTTEN,
    RECONNECT,
    Refused,
    error_of,
    frame_kind,
    parsed,
    quota_headers,
    sse,
)
from ._flow import Outcome
from ._frames import TERMINAL
from ._relay import MAX_ANSWER_BYTES, Relayed, relay, relay_answer
from ._socket_health import CopilotSockets

__all__ = ["MAX_AGE_SECONDS", "SocketUpstream", "socket_url"]

_log = logging.getLogger("copilot_host.gateway")

# A socket is opened anew between requests after this long (the service's own limit is not
# published; the Copilot CLI has one, COPILOT_CLI_WEBSOCKET_MAX_CONNECTION_AGE_SECS).
MAX_AGE_SECONDS = 50 * 60.0
# Sends of one request over sockets before it goes over HTTP.
_SENDS = 3
_OPTIONS: dict[str, Any] = {
    "max_size": MAX_ANSWER_BYTES,
    "open_timeout": 10.0,
    "close_timeout": 2.0,
}
_INITIATORS = frozenset({"user", "agent"})
_SESSION_CODES = frozenset({"session_expired", "unauthorized"})


class _Rescue(Exception):
    """The socket cannot carry this request (nothing reached the client): HTTP instead."""

    def __init__(self, why: str, *, refused: bool = False) -> None:
        super().__init__(why)
        self.why = why
        self.refused = refused


def _closed(exc: BaseException) -> bool:
    """Whether ``exc`` is a socket that went (``websockets``' ConnectionClosed, the network)."""
    return isinstance(exc, OSError | TimeoutError) or type(exc).__name__.startswith(
        "ConnectionClosed"
    )


def socket_url(origin: str) -> str:
    """The socket URL of a route's origin (``https://`` -> ``wss://``)."""
    scheme, _, rest = origin.partition("://")
    return ("wss" if scheme == "https" else "ws") + "://" + rest + "/responses"


class SocketUpstream:
    """One client socket's upstream (see the module docstring): an ``Upstream`` of
    :mod:`._relay`."""

    def __init__(self, sockets: CopilotSockets) -> None:
        self._sockets = sockets
        self._socket: Any = None
        self._headers: list[tuple[str, str]] | None = None
        self._opened = 0.0
        self._vision = False
        # Refused once: HTTP for the rest of the client's socket.
        self._http = False
        # The last completed response on the socket, and how many items it holds (the
        # input sent for it, whole, and its output).
        self._last: str | None = None
        self._held = 0
        # The client message's previous_response_id (its socket session sets it).
        self.previous: object = None

    async def __call__(self, client: httpx2.AsyncClient, body: bytes, call: Relayed) -> None:
        route = call.edit.route
        copilot = route.auth
        model = route.model_id
        facts = call.facts
        if (
            not self._http
            and route.spec.websocket
            and isinstance(copilot, ch.CopilotAuth)
            and facts is not None
            and self._sockets.usable(model)
        ):
            try:
                response = await self._exchange(copilot, route, body, facts, call.outcome)
            except _Rescue as rescue:
                self._sockets.failed(model, rescue.why)
                self._http = self._http or rescue.refused
            except BaseException:
                # Cancelled (the client went) or failed with a request in flight.
                await self.aclose()
                raise
            else:
                try:
                    await relay_answer(response, call)
                except BaseException:
                    # An answer that did not end leaves the socket's state unknown.
                    await self.aclose()
                    raise
                return
        await relay(client, body, call)

    async def aclose(self) -> None:
        """Close the socket (the client's went, or its state is unknown)."""
        socket, self._socket = self._socket, None
        self._last, self._headers = None, None
        if socket is not None:
            with contextlib.suppress(Exception):
                await socket.close()

    # -- one request ----------------------------------------------------------------------

    def _messages(
        self, value: dict[str, Any], facts: ch.RequestFacts
    ) -> tuple[Callable[[], bytes], bytes | None, int]:
        """The request whole (made when asked for: most go chained), the request chained
        on the socket's last response when the client chained on it (else None), and the
        number of its input items."""
        inputs = value.get("input")
        fields: dict[str, Any] = {"type": "response.create"}
        fields.update((k, v) for k, v in value.items() if k not in ("input", "stream", "type"))
        if facts.initiator in _INITIATORS:
            fields["initiator"] = facts.initiator
        count = len(inputs) if isinstance(inputs, list) else 0

        def whole() -> bytes:
            return dumps({**fields, "input": inputs})

        chained = None
        if (
            self._last is not None
            and self.previous == self._last
            and isinstance(inputs, list)
            and count >= self._held
        ):
            chained = dumps(
                {**fields, "previous_response_id": self._last, "input": inputs[self._held :]}
            )
        return whole, chained, count

    async def _exchange(
        self,
        auth: ch.CopilotAuth,
        route: ch.ModelRoute,
        body: bytes,
        facts: ch.RequestFacts,
        outcome: Outcome,
    ) -> httpx2.Response:
        """The answer's first frame read: its response (a stream, or a refusal)."""
        value = loads(body)
        if not isinstance(value, dict):
            raise _Rescue("not a JSON object")
        make_whole, chained, count = self._messages(value, facts)
        whole = b""
        message = chained
        rejected = False
        for _ in range(_SENDS):
            socket = await self._open(auth, route, facts, rejected)
            rejected = False
            if message is None or self._last is None:
                # A new socket holds no chain.
                message = whole = whole or make_whole()
            try:
                # The bytes as a text frame; the answer's frames as bytes (each is read
                # for its type alone, and goes on as bytes).
                await socket.send(message, text=True)
                text = await socket.recv(decode=False)
            except Exception as exc:
                if not _closed(exc):
                    raise
                await self.aclose()
                message = None
                continue
            kind = frame_kind(text)
            if kind != "error":
                return self._stream(
                    socket, (kind, text), outcome=outcome, count=count, model=route.model_id
                )
            frame = parsed(text)
            frame = frame if isinstance(frame, dict) else {}
            outcome.quota = quota_headers(frame.get("copilot_quota_snapshots"))
            meaning = error_of(frame)
            if isinstance(meaning, Refused):
                # The service's refusal of this request: the client's, as over HTTP.
                return httpx2.Response(
                    meaning.status,
                    headers=[("content-type", "application/json")],
                    content=meaning.body,
                )
            self._last = None
            if meaning == FORGOTTEN and message is not whole:
                message = None
                continue
            if meaning == RECONNECT:
                error = frame.get("error")
                code = error.get("code") if isinstance(error, dict) else None
                rejected = code in _SESSION_CODES
                await self.aclose()
                message = None
                continue
            raise _Rescue(f"an error frame ({meaning})")
        raise _Rescue(f"{_SENDS} sends without an answer")

    async def _open(
        self, auth: ch.CopilotAuth, route: ch.ModelRoute, facts: ch.RequestFacts, rejected: bool
    ) -> Any:
        """The socket to send on: this one, or a new one (see the module docstring)."""
        url = socket_url(route.origin)
        vision = facts.vision or self._vision
        headers = await auth.ahandshake_headers(url, vision=vision, rejected=rejected)
        now = self._sockets.clock.monotonic()
        if (
            self._socket is not None
            and headers == self._headers
            and now - self._opened < MAX_AGE_SECONDS
        ):
            return self._socket
        await self.aclose()
        try:
            socket = await self._sockets.connector(url, headers, **_OPTIONS)
        except Exception as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status == 401 and not rejected:
                return await self._open(auth, route, facts, True)
            shown = f"status {status}" if status else type(exc).__name__
            raise _Rescue(f"the handshake failed ({shown})", refused=True) from None
        self._socket, self._headers, self._opened, self._vision = socket, headers, now, vision
        return socket

    def _stream(
        self,
        socket: Any,
        first: tuple[str | None, bytes],
        *,
        outcome: Outcome,
        count: int,
        model: str,
    ) -> httpx2.Response:
        found = getattr(getattr(socket, "response", None), "headers", None)
        headers = [("content-type", "text/event-stream")]
        for name in ("x-github-request-id", "x-request-id"):
            value = found.get(name) if found is not None else None
            if isinstance(value, str):
                headers.append((name, value))
        frames = _Frames(self, socket, first, outcome=outcome, count=count, model=model)
        return httpx2.Response(200, headers=headers, stream=frames)

    def _completed(self, response: object, held: int) -> None:
        ident = response.get("id") if isinstance(response, dict) else None
        self._last = ident if isinstance(ident, str) else None
        self._held = held


class _Frames(httpx2.AsyncByteStream):
    """An answer's frames as the bytes of the event stream it stands for."""

    def __init__(
        self,
        upstream: SocketUpstream,
        socket: Any,
        first: tuple[str | None, bytes],
        *,
        outcome: Outcome,
        count: int,
        model: str,
    ) -> None:
        self._upstream = upstream
        self._socket = socket
        self._first = first
        self._outcome = outcome
        self._count = count
        self._model = model

    async def __aiter__(self) -> AsyncIterator[bytes]:
        upstream, sockets = self._upstream, self._upstream._sockets
        kind, text = self._first
        outputs = 0
        while True:
            if kind == "response.output_item.done":
                outputs += 1
            elif kind == "error":
                # Mid-answer: the stream's own error event, as HTTP streams carry one.
                upstream._last = None
                yield sse("error", dumps(_flat_error(parsed(text))))
                return
            elif kind in TERMINAL:
                value = parsed(text)
                value = value if isinstance(value, dict) else {}
                if kind == "response.completed":
                    self._outcome.quota = quota_headers(value.get("copilot_quota_snapshots"))
                    upstream._completed(value.get("response"), self._count + outputs)
                else:
                    upstream._last = None
                sockets.succeeded(self._model)
                yield sse(kind, text)
                return
            yield sse(kind, text)
            try:
                text = await self._socket.recv(decode=False)
            except Exception as exc:
                if not _closed(exc):
                    raise
                await upstream.aclose()
                sockets.failed(self._model, "closed before the answer ended")
                raise httpx2.RemoteProtocolError(
                    "Copilot's socket closed before the answer ended"
                ) from None
            kind = frame_kind(text)


def _flat_error(frame: object) -> dict[str, Any]:
    """A nested error frame as the flat ``error`` event of an HTTP Responses stream."""
    error = frame.get("error") if isinstance(frame, dict) else None
    error = error if isinstance(error, dict) else {}
    code = error.get("code")
    message = error.get("message")
    return {
        "type": "error",
        "code": code if isinstance(code, str) else "upstream_error",
        "message": message if isinstance(message, str) else "Copilot's socket reported an error",
    }
