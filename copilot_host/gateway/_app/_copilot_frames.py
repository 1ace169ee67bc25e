"""What Copilot's Responses WebSocket says, in the words the rest of the gateway reads.

Copilot answers a socket request with the events its HTTP ``/responses`` stream carries, one
JSON object per text frame (microsoft/vscode-copilot-chat ``chatWebSocketManager.ts``), so
each frame becomes one Server-Sent Event (:func:`sse`) and the answer goes through the same
relay as an HTTP one: the table's answer changes, masking, the cost reader, the client's
frames. Its errors are a nested frame, ``{"type": "error", "error": {"code", "message"},
"copilot_quota_snapshots": {...}}`` with no status; :func:`error_of` sorts one by its code,
as VS Code's ``chatMLFetcher.ts`` does:

* a refusal the client should see (rate limits, quota, content filter, not found, a request
  too large, a bad request): the HTTP answer the same refusal would have been
  (:class:`Refused`: its status and an OpenAI error document), so a socket client gets the
  wrapped frame with that status, as for an HTTP upstream;
* ``previous_response_not_found``: the service no longer holds the chain (resend whole);
* ``session_expired``, ``unauthorized`` and ``websocket_connection_limit_reached``: this
  socket is done (a new handshake, then the request whole);
* anything else (``internal_error``, ``service_unavailable``, a code never seen): a server
  error, which VS Code rescues over HTTP once.

``copilot_quota_snapshots`` (on ``response.completed`` and on errors) are read into the
quota headers an HTTP answer carries (:func:`quota_headers`), which the spend's warnings and
the ledger read.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any

from .._json import NotJson, dumps, loads

__all__ = [
    "FORGOTTEN",
    "RECONNECT",
    "RESCUE",
    "Refused",
    "error_of",
    "frame_kind",
    "quota_headers",
    "sse",
]

FORGOTTEN = "forgotten"
RECONNECT = "reconnect"
RESCUE = "rescue"

# A code's prefix (the part before any ':', as VS Code reads it) -> the status of the HTTP
# answer a client is given for it.
_REFUSALS = {
    "rate_limited": 429,
    "user_model_rate_limited": 429,
    "user_global_rate_limited": 429,
    "user_weekly_rate_limited": 429,
    "user_session_rate_limited": 429,
    "integration_rate_limited": 429,
    "model_overloaded": 429,
    "agent_mode_limit_exceeded": 429,
    "quota_exceeded": 402,
    "free_quota_exceeded": 402,
    "overage_limit_reached": 402,
    "billing_not_configured": 402,
    "content_filter": 400,
    "not_found": 404,
    "request_too_large": 413,
    "bad_request": 400,
    "invalid_request_body": 400,
    "model_not_supported": 400,
}
_RECONNECTS = frozenset({"session_expired", "unauthorized", "websocket_connection_limit_reached"})
_PREFIX = b'{"type":"'


@dataclass(frozen=True, slots=True)
class Refused:
    """A refusal for the client: the status and body of the HTTP answer it stands for."""

    status: int
    body: bytes
    code: str


def frame_kind(data: bytes) -> str | None:
    """A frame's ``type``, read without parsing when it comes first (as Copilot writes
    it); None when the frame has none."""
    if data.startswith(_PREFIX):
        end = data.find(b'"', len(_PREFIX))
        found = data[len(_PREFIX) : end]
        kind = found.decode("ascii") if end > 0 and found.isascii() else ""
        if kind.isprintable() and kind and "\\" not in kind:
            return kind
    value = parsed(data)
    found_kind = value.get("type") if isinstance(value, dict) else None
    return found_kind if isinstance(found_kind, str) else None


def parsed(data: bytes) -> Any:
    try:
        return loads(data)
    except NotJson:
        return None


def sse(kind: str | None, data: bytes) -> bytes:
    """A frame (its text's bytes) as the Server-Sent Event the HTTP stream would have
    carried; a frame can hold no line break outside its JSON strings, which escape it."""
    if kind is None or not kind.isascii() or not kind.isprintable():
        return b"data: " + data + b"\n\n"
    return b"event: " + kind.encode("ascii") + b"\ndata: " + data + b"\n\n"


def error_of(frame: dict[str, Any]) -> Refused | str:
    """What an error frame means (see the module docstring): a :class:`Refused`, or one of
    :data:`FORGOTTEN`, :data:`RECONNECT`, :data:`RESCUE`."""
    error = frame.get("error")
    if not isinstance(error, dict):
        # Codex's flat shape, or nothing readable: a server error.
        error = frame
    code = error.get("code")
    code = code if isinstance(code, str) else ""
    prefix = code.split(":", 1)[0]
    if prefix == "previous_response_not_found":
        return FORGOTTEN
    if prefix in _RECONNECTS:
        return RECONNECT
    status = _REFUSALS.get(prefix)
    if status is None:
        return RESCUE
    message = error.get("message")
    document = {
        "error": {
            "message": message if isinstance(message, str) else code,
            "type": "rate_limit_error" if status == 429 else "invalid_request_error",
            "code": code,
        }
    }
    return Refused(status, dumps(document), code)


def quota_headers(snapshots: object) -> tuple[tuple[str, str], ...]:
    """``copilot_quota_snapshots`` as the ``x-quota-snapshot-<name>`` headers of an HTTP
    answer (``ent``, ``ov``, ``ovPerm``, ``rem``, ``rst``: what VS Code reads from either)."""
    if not isinstance(snapshots, dict):
        return ()
    found: list[tuple[str, str]] = []
    for name, snapshot in list(snapshots.items())[:8]:
        if not isinstance(name, str) or not name.isascii() or not isinstance(snapshot, dict):
            continue
        fields = {
            "ent": snapshot.get("entitlement"),
            "ov": snapshot.get("overage_count"),
            "ovPerm": snapshot.get("overage_permitted"),
            "rem": snapshot.get("percent_remaining"),
            "rst": snapshot.get("reset_date"),
        }
        kept = {
            key: ("true" if value else "false") if isinstance(value, bool) else str(value)[:64]
            for key, value in fields.items()
            if isinstance(value, str | int | float | bool)
        }
        key = urllib.parse.quote(name[:64], safe="_-")
        found.append((f"x-quota-snapshot-{key}", urllib.parse.urlencode(kept)))
    return tuple(found)
