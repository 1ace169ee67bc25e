"""A socket request's answer: what the pipeline sends as an HTTP answer, sent as frames.

A request that came as a WebSocket message goes through the same stages as an HTTP one;
its flow's ``send`` is a :class:`Frames`, which turns the ASGI HTTP answer the stages
write (the relay's event stream, masked event by event; a JSON document; the gateway's own
answers and refusals) into what a Responses socket client reads:

* each Server-Sent Event's data, one JSON object per text frame (no ``event:`` line), as
  the client would have read it over HTTP;
* an error document (status 400 and up) as the wrapped error frame
  ``{"type": "error", "status": N, "error": {...}}``: Codex acts on an error frame only when
  it carries ``status`` (without it, it waits 300 s: docs/WIRE.md), and ``Retry-After``
  goes in its ``headers``; a stream's own ``error`` event the same way (status 502);
* a whole JSON answer as ``response.completed``.

It tells the socket's :class:`~._chain.Conversation` each output item and the completed
response, as the client was sent them, and whether the answer ended the way a client waits
for (``response.completed``, ``response.failed``, ``response.incomplete`` or an error
frame): if not, the socket session sends an error frame itself. That last frame goes out
with the answer's last piece, after the request's access line is written (as an HTTP
answer's end does), so a client that has its answer finds the line.
"""

from __future__ import annotations

from typing import Any

from .. import _sse
from .._json import NotJson, dumps, loads
from ._chain import Conversation, item_of
from ._flow import Message, Send

__all__ = ["TERMINAL", "Frames", "error_frame"]

# The events after which a socket client stops reading for this request.
TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})
_OUTPUT_DONE = "response.output_item.done"
_COMPLETED = "response.completed"
_EVENT_STREAM = b"text/event-stream"


def error_frame(
    status: int, error: object, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """The wrapped error frame Codex reads (``status`` included)."""
    if not isinstance(error, dict):
        error = {"type": "server_error", "code": "upstream_error", "message": str(error)[:500]}
    frame: dict[str, Any] = {"type": "error", "status": status, "error": error}
    if headers:
        frame["headers"] = headers
    return frame


def _parsed(data: bytes) -> Any:
    try:
        return loads(data)
    except NotJson:
        return None


class Frames:
    """A flow's ``send`` for a socket request (see the module docstring)."""

    __slots__ = (
        "_conversation",
        "_held",
        "_last",
        "_retry_after",
        "_send",
        "_status",
        "_stream",
        "_whole",
        "ended",
    )

    def __init__(self, send: Send, conversation: Conversation) -> None:
        self._send = send
        self._conversation = conversation
        self._status = 0
        self._stream = False
        self._held = bytearray()
        self._whole = bytearray()
        self._retry_after: str | None = None
        self._last: bytes | None = None
        # Whether a frame that ends the request for its client went out.
        self.ended = False

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._status = int(message["status"])
            for name, value in message.get("headers", ()):
                lower = name.lower()
                if lower == b"content-type":
                    media = value.split(b";", 1)[0].strip().lower()
                    self._stream = media == _EVENT_STREAM and self._status < 400
                elif lower == b"retry-after":
                    self._retry_after = value.decode("latin-1")
            return
        body = message.get("body", b"")
        more = bool(message.get("more_body", False))
        if self._stream:
            await self._events(body, more)
        else:
            self._whole += body
            if not more:
                await self._document(bytes(self._whole))

    async def _events(self, body: bytes, more: bool) -> None:
        held = self._held
        fresh = max(len(held) - 1, 0)
        held += body
        cut = len(held) if not more else _sse.cut(held, fresh)
        if cut:
            block = bytes(held[:cut])
            del held[:cut]
            for raw in _sse.split(block):
                event = _sse.Event(raw)
                data = event.data
                if data is not None and data != b"[DONE]":
                    await self._event(event.kind, data)
        if not more and self._last is not None:
            last, self._last = self._last, None
            await self._frame(last)

    async def _event(self, kind: str | None, data: bytes) -> None:
        value: Any = None
        if kind is None:
            value = _parsed(data)
            found = value.get("type") if isinstance(value, dict) else None
            kind = found if isinstance(found, str) else None
        if kind == _OUTPUT_DONE:
            found_item = item_of(data)
            if found_item is not None:
                self._conversation.output(*found_item)
        elif kind in TERMINAL:
            value = value if value is not None else _parsed(data)
            if kind == "error":
                # A stream's own error event: the wrapped frame, with the status Codex needs.
                error = value if isinstance(value, dict) else None
                if error is not None and "status" not in error:
                    inner = {k: v for k, v in error.items() if k not in ("type", "sequence_number")}
                    inner.setdefault("type", "server_error")
                    self.ended = True
                    self._last = dumps(error_frame(502, inner))
                    return
            elif kind == _COMPLETED:
                self._conversation.completed(
                    value.get("response") if isinstance(value, dict) else None
                )
            self.ended = True
            self._last = data
            return
        await self._frame(data)

    async def _document(self, whole: bytes) -> None:
        value = _parsed(whole)
        status = self._status
        if status >= 400:
            error = value.get("error") if isinstance(value, dict) else None
            if isinstance(error, dict):
                # OpenAI's error document carries "param": null; the frame keeps its fields.
                error = {key: item for key, item in error.items() if item is not None}
            headers = {"retry-after": self._retry_after} if self._retry_after else None
            frame = error_frame(status, error or "the gateway's answer was not readable", headers)
        else:
            self._conversation.completed(value)
            frame = {"type": _COMPLETED, "response": value}
        self.ended = True
        await self._frame(dumps(frame))

    async def _frame(self, data: bytes) -> None:
        await self._send({"type": "websocket.send", "text": data.decode("utf-8", "replace")})
