"""What a client is told when serving its request failed: a status, a stable code, one line.

The error document takes the shape of the API the client speaks (the flow's
:class:`~copilot_host.gateway._protocols.ErrorShape`); answers that came from upstream are
relayed as they are instead. :func:`failure_of` turns an exception met while serving into a
status and a stable code: a login or session that cannot be had is 503 (a refusal by an
organisation's policy, or Copilot Auto that cannot serve the request, is 403: waiting does
not change it), the network or an unusable answer upstream is 502, anything unexpected
500. Messages come from the library's own error texts (built without secrets), and are
masked once more before they leave.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx2

import copilot_host as ch

from ._flow import Flow
from ._resolve import shown

__all__ = ["Failure", "answer_failure", "failure_of"]

_log = logging.getLogger("copilot_host.gateway")


@dataclass(frozen=True, slots=True)
class Failure:
    """What the client is told about an exception: status, stable code, one line."""

    status: int
    code: str
    message: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


# Refusals that stand until a person changes a setting (README, "Troubleshooting"), or
# until GitHub offers this login Copilot Auto (or a model of it on the endpoint called).
_REFUSED_BY_POLICY = frozenset({"policy_refused", "integrator_refused", "auto_unavailable"})

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
        if exc.code in _REFUSED_BY_POLICY:
            # An organisation's policy or the service's list of integrators: waiting does
            # not change it, so not the 503 SDKs retry (its words say who can change it).
            return Failure(403, exc.code, message)
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


async def answer_failure(flow: Flow, exc: Exception) -> None:
    """Answer ``flow`` for an exception met while serving it (:func:`failure_of`); when
    its answer had started, raise ``TransportError`` ``answer_cut`` instead."""
    if flow.outcome.status:
        # The answer has started, so no error document can follow it: the server
        # cuts the connection when the app raises, and the client sees an answer
        # that did not end. This line says why; the error is typed (answer_cut) so
        # that a server may log it without a traceback (serve does).
        path = shown(flow.path)
        _log.warning("relay of %s ended early: %s", path, type(exc).__name__)
        raise ch.TransportError(
            f"the answer to {path} broke off after it had started "
            f"({type(exc).__name__}); the client's connection was cut",
            code="answer_cut",
        ) from exc
    failure = failure_of(exc)
    _log.debug("request failed: %s (%s)", failure.code, type(exc).__name__, exc_info=exc)
    await flow.answer(
        failure.status,
        flow.errors.body(failure.status, failure.code, failure.message),
        failure.headers,
    )
