"""The pieces of a gateway socket that are not its state (:mod:`._socket` has that).

* :func:`scope_of`: what the app is told of a handshake, its ASGI ``websocket`` scope (ASGI
  3, websocket spec 2.4), built from the upgrade request as wsproto read it. It offers two
  extensions: ``websocket.http.response`` (a refused handshake is answered as HTTP) and
  ``copilot_host.busy`` (the app says when a request runs on the socket, so the server
  knows when it is idle).
* :func:`text_frame`: a text frame as the server writes the events of an answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wsproto.events import Request

from .._app import BUSY

__all__ = ["scope_of", "text_frame"]


def scope_of(
    request: Request, transport: asyncio.BaseTransport, app_state: dict[str, Any]
) -> dict[str, Any]:
    """The scope for ``request`` (``app_state``: the lifespan's state, copied)."""
    target, _, query = request.target.partition("?")
    headers = [(b"host", request.host.encode("utf-8", "surrogateescape"))]
    headers += [(name.lower(), value) for name, value in request.extra_headers]
    return {
        "type": "websocket",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "scheme": "ws",
        "server": _address(transport.get_extra_info("sockname")),
        "client": _address(transport.get_extra_info("peername")),
        "root_path": "",
        "path": target,
        "raw_path": target.encode("ascii", "replace"),
        "query_string": query.encode("ascii", "replace"),
        "headers": headers,
        "subprotocols": list(request.subprotocols),
        "state": dict(app_state),
        "extensions": {"websocket.http.response": {}, BUSY: {}},
    }


def _address(found: Any) -> tuple[str, int] | None:
    if isinstance(found, tuple) and len(found) >= 2:
        return (str(found[0]), int(found[1]))
    return None


def text_frame(payload: bytes) -> bytes:
    """One unmasked, uncompressed text frame (RFC 6455 §5.2), as wsproto would write it: the
    events a request is answered with, written without its per-frame bookkeeping."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 65536:
        return bytes((0x81, 126)) + size.to_bytes(2, "big") + payload
    return bytes((0x81, 127)) + size.to_bytes(8, "big") + payload
