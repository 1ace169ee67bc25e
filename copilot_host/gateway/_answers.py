"""The gateway's own answers: JSON errors in the shape of the API the client speaks.

OpenAI clients read ``{"error": {"message", "type", "code", "param"}}``; Anthropic clients
read ``{"type": "error", "error": {"type", "message"}}``, whose ``error.type`` is fixed by
the status. Every refusal and every failure the gateway reports itself goes through
:func:`error_body`; answers that came from upstream are relayed as they are instead.

:func:`failure_of` turns an exception met while serving into a status and a stable code:
a login or session that cannot be had is 503, the network or an unusable answer upstream
is 502, anything unexpected 500. Messages come from the library's own error texts (built
without secrets), and are masked once more before they leave.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx2

import copilot_host as ch

__all__ = ["Failure", "Shape", "error_body", "failure_of"]


class Shape:
    """Which error shape a path answers in."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


# The Anthropic API's error type for each status it documents; any other status takes the
# type of its class (4xx: invalid_request_error, 5xx: api_error).
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

# OpenAI's error types: request problems (the key included: OpenAI answers a bad key with
# invalid_request_error and code invalid_api_key) and failures on the server's side.
_OPENAI_TYPES = {401: "invalid_request_error", 429: "rate_limit_error"}


def _anthropic_type(status: int) -> str:
    found = _ANTHROPIC_TYPES.get(status)
    if found is not None:
        return found
    return "api_error" if status >= 500 else "invalid_request_error"


def _openai_type(status: int) -> str:
    found = _OPENAI_TYPES.get(status)
    if found is not None:
        return found
    return "server_error" if status >= 500 else "invalid_request_error"


def error_body(shape: str, status: int, code: str, message: str) -> bytes:
    """The JSON error document for ``status`` in ``shape`` (masked of known secrets)."""
    message = ch.mask_secrets(message)
    document: dict[str, object]
    if shape == Shape.ANTHROPIC:
        document = {"type": "error", "error": {"type": _anthropic_type(status), "message": message}}
    else:
        document = {
            "error": {"message": message, "type": _openai_type(status), "code": code, "param": None}
        }
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Failure:
    """What the client is told about an exception: status, stable code, one line."""

    status: int
    code: str
    message: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


# A refused session is usually fixed by the next exchange: clients may come back soon.
_RETRY_SOON = ((b"retry-after", b"1"),)


# Library errors that mean "no usable login or session right now": the client can do
# nothing about them but wait or ask the person to act, so they are 503.
_UNAVAILABLE: tuple[type[ch.CopilotHostError], ...] = (
    ch.LoginError,
    ch.EntitlementError,
    ch.SessionError,
    ch.StoreError,
    ch.ClientOutdatedError,
    ch.OriginError,
    ch.ModelValidationError,
    ch.ServerError,
)


def failure_of(exc: BaseException) -> Failure:
    """The status, code and message a client gets for ``exc``."""
    if isinstance(exc, ch.CopilotHostError):
        message = f"copilot-host: {exc.message}"
        if isinstance(exc, ch.NotLoggedInError):
            return Failure(
                503,
                "not_logged_in",
                "copilot-host: no GitHub login on this machine; run `copilot-host login`, "
                "then retry (the gateway picks the login up without a restart)",
            )
        if isinstance(exc, ch.QuotaExceededError):
            # The account's quota, not the gateway: the service's own status and code.
            return Failure(402, exc.code, message)
        if isinstance(exc, _UNAVAILABLE):
            retry = _RETRY_SOON if exc.code == "session_refused" else ()
            return Failure(503, exc.code, message, retry)
        # TransportError, ResponseError and anything else that came from the network.
        return Failure(502, exc.code, message)
    if isinstance(exc, httpx2.TimeoutException):
        return Failure(502, "timeout", "copilot-host: the Copilot API did not answer in time")
    if isinstance(exc, httpx2.TransportError):
        return Failure(
            502,
            "network_error",
            f"copilot-host: could not reach the Copilot API ({type(exc).__name__})",
        )
    return Failure(
        500,
        "internal_error",
        f"copilot-host: unexpected {type(exc).__name__} in the gateway; see its log",
    )
