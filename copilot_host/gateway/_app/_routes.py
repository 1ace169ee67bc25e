"""Stage: access, its last checks. What a request's framing, path and method must be.

A request with both ``Content-Length`` and ``Transfer-Encoding`` is refused (400) and its
connection closed, and every answer to a request that carried ``Transfer-Encoding`` closes
the connection (RFC 9112 §6.1): the server's two parsers read malformed framing two ways,
so no two readings of one request's end can disagree on where the next one starts. A path
the gateway does not serve is 404, naming every one it does; a method it does not take on
a served path is 405 with ``Allow``.
"""

from __future__ import annotations

from .._changes import Changes
from .._protocols import BY_ENDPOINT, api_of_path
from ._access import Refusal
from ._flow import Flow
from ._pipeline import MODEL_PREFIX, MODELS
from ._resolve import shown

__all__ = ["framing_refusal", "route_refusal"]

_BOTH = Refusal(
    400,
    "invalid_request",
    "copilot-host gateway: a request may not carry both Content-Length and Transfer-Encoding",
)


def framing_refusal(flow: Flow) -> Refusal | None:
    """The refusal of framing two parsers could read two ways; marks a request that
    carried ``Transfer-Encoding`` to close its connection whatever its answer."""
    headers = flow.headers
    if headers.values.get(b"transfer-encoding") is None:
        return None
    # Whatever the parser made of it, the connection ends with this answer.
    flow.close = True
    return _BOTH if headers.values.get(b"content-length") is not None else None


def _expected_method(path: str, changes: Changes) -> str | None:
    if path == MODELS or path.startswith(MODEL_PREFIX):
        return "GET"
    if api_of_path(path) is not None or path in changes.paths:
        return "POST"
    return None


def _no_such_endpoint(changes: Changes) -> Refusal:
    served = ["GET /v1/models"]
    served += [f"POST {path}" for api in BY_ENDPOINT for path in api.paths]
    served += [f"POST {path}" for path in changes.paths]
    return Refusal(
        404,
        "not_found",
        "copilot-host gateway: no such endpoint; it serves "
        + ", ".join(served[:-1])
        + " and "
        + served[-1],
    )


def route_refusal(path: str, method: str, changes: Changes) -> Refusal | None:
    """The refusal of a path the gateway does not serve, or of a method it does not take
    there; None when it serves the request."""
    expected = _expected_method(path, changes)
    if expected is None:
        return _no_such_endpoint(changes)
    if method != expected:
        return Refusal(
            405,
            "method_not_allowed",
            f"copilot-host gateway: {shown(path, 80)} takes {expected} only",
            ((b"allow", expected.encode("ascii")),),
        )
    return None
