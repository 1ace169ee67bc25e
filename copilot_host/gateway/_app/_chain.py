"""Stage: socket intake. A WebSocket message made into the HTTP request it stands for.

On a socket, Codex sends each request after the first as ``previous_response_id`` (the
last response on the socket) and only the input items that came since; the server is to
remember the rest (docs/WIRE.md, "Responses over WebSocket"). Copilot's HTTP ``/responses``
remembers nothing (the gateway sends ``store`` as the client does, and Codex sends
``false``), so each socket keeps its conversation in a :class:`Conversation`: the input
of the last completed response, then that response's output items as the client was sent
them. A message is then made into the body a client that sent the whole conversation over
HTTP would have sent (:meth:`Conversation.request`):

* ``input``: the conversation, then the message's own items (its ``input`` string, when
  it is one, as a user message); without ``previous_response_id``, the message's items
  alone (a new conversation, as after any reconnect);
* ``stream`` true; ``type``, ``client_metadata`` and ``previous_response_id`` dropped (they
  mean nothing over HTTP); ``generate`` kept only when false (a warm-up, which the table's
  ``warm-up`` entry answers before anything goes upstream); every other field as sent.

That body then goes through the pipeline as an HTTP request's would, so the table's
changes, the budget and the access line see the whole request. The conversation is kept
as the JSON text of its items (never above the body cap, :data:`._intake.MAX_BODY_BYTES`),
so a turn costs the bytes of its new items, not a parse of the whole history. A
``previous_response_id`` that is not the socket's last response, or a conversation that
would pass the cap, is refused with ``previous_response_not_found``: Codex then sends the
whole conversation on a new socket (measured).
"""

from __future__ import annotations

from typing import Any

from .._json import dumps, loads
from ._access import Refusal
from ._intake import MAX_BODY_BYTES

__all__ = ["Conversation"]

# Fields of a socket message that mean nothing to an HTTP request.
_SOCKET_ONLY = frozenset(
    {"type", "client_metadata", "previous_response_id", "input", "generate", "stream"}
)


def _not_found(ident: object, why: str) -> Refusal:
    shown = ident if isinstance(ident, str) and len(ident) <= 80 else "(that id)"
    return Refusal(
        400,
        "previous_response_not_found",
        f"copilot-host gateway: previous response {shown!r} not found ({why}); send the "
        "whole conversation",
    )


_NOT_ITEMS = Refusal(
    400,
    "invalid_request",
    'copilot-host gateway: a socket message\'s "input" is a list of items or a string',
)


def _items(value: object) -> bytes | None:
    """The JSON text of a message's input items, comma-joined without the brackets (None:
    not items)."""
    if value is None:
        return b""
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    if not isinstance(value, list):
        return None
    return dumps(value)[1:-1]


class Conversation:
    """One socket's conversation (see the module docstring)."""

    __slots__ = ("_items", "_last", "_limit", "_outputs", "_pending")

    def __init__(self, limit: int = MAX_BODY_BYTES) -> None:
        self._limit = limit
        # The last completed response's id, and the conversation up to and with its output.
        self._last: str | None = None
        self._items = b""
        # The input of the request in flight, and the output items it has produced.
        self._pending = b""
        self._outputs: list[tuple[int, bytes]] = []

    def request(self, value: dict[str, Any]) -> bytes | Refusal:
        """The HTTP request body ``value`` (a ``response.create`` message) stands for."""
        previous = value.get("previous_response_id")
        prior = b""
        if previous is not None:
            if self._last is None or previous != self._last:
                return _not_found(previous, "not the last response on this socket")
            prior = self._items
        new = _items(value.get("input"))
        if new is None:
            return _NOT_ITEMS
        rest = {key: item for key, item in value.items() if key not in _SOCKET_ONLY}
        rest["stream"] = True
        if value.get("generate") is False:
            rest["generate"] = False
        joined = prior + b"," + new if prior and new else prior or new
        # The fields, then the input last: spliced as text, so the history is never parsed.
        body = dumps(rest)[:-1] + b',"input":[' + joined + b"]}"
        self._pending = joined
        if len(body) > self._limit:
            self.forget()
            return _not_found(previous, "the conversation is past the gateway's size limit")
        self._outputs = []
        return body

    def output(self, index: object, item: bytes) -> None:
        """An output item of the response in flight, as the client was sent it (the
        ``item`` of a ``response.output_item.done`` event)."""
        self._outputs.append((index if isinstance(index, int) else len(self._outputs), item))

    def completed(self, response: object) -> None:
        """The response in flight completed: the conversation now ends with its output."""
        if not isinstance(response, dict) or not isinstance(response.get("id"), str):
            self.forget()
            return
        outputs = [item for _, item in sorted(self._outputs, key=lambda pair: pair[0])]
        if not outputs and isinstance(response.get("output"), list):
            outputs = [dumps(item) for item in response["output"]]
        items = b",".join(part for part in (self._pending, *outputs) if part)
        if len(items) > self._limit:
            self.forget()
            return
        self._last, self._items = response["id"], items
        self._pending, self._outputs = b"", []

    def forget(self) -> None:
        """Nothing to chain on (a refused or broken-off request leaves the last one)."""
        self._last, self._items, self._pending, self._outputs = None, b"", b"", []


def item_of(data: bytes) -> tuple[object, bytes] | None:
    """The output index and item JSON of a ``response.output_item.done`` event's data."""
    try:
        event = loads(data)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("item"), dict):
        return None
    return event.get("output_index"), dumps(event["item"])
