"""Copilot Auto's two session calls (sans-IO): the pool call and the routing call.

docs/WIRE.md ("Copilot Auto") has what GitHub's own clients send and get back:

* the pool call, ``POST {api}/models/session`` with ``{"auto_mode": {"model_hints":
  ["auto"]}}`` and no prompt, answers ``available_models`` (in preference order; the
  client picks), ``expires_at``, ``discounted_costs`` and ``session_token`` (VS Code's
  ``AutoModeAPIResponse``);
* the routing call, ``POST {api}/auto`` with the person's ``prompt`` (and ``has_image``,
  ``tier`` when they apply), answers the one ``selected_model`` the service chose, with the
  same token, expiry and discounts (VS Code's ``AutoV2Response``).

Both are sent with the session bearer and the identity's headers (VS Code's
``@vscode/copilot-api`` mixes the same editor headers into both). A 404 means the call is
gated off for this client (VS Code pins itself to the other generation on a 404); any other
refusal is ``EntitlementError`` ``auto_unavailable`` with the status in its message.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from .._errors import EntitlementError, ResponseError, SessionError
from .._hosts import CopilotSession
from .._safety._redact import register_secret
from .._sessions._auto import PROMPT_LIMIT, AutoSession, auto_unavailable
from ._headers import session_headers
from ._status import client_outdated_error, quota_exceeded_error, server_date, status_error
from ._wire import (
    WireRequest,
    WireResponse,
    json_object,
    opt_object,
    reads_response,
    req_number,
    req_str,
    server_message,
    take_secret,
)

__all__ = [
    "POOL_PATH",
    "PROBE_BUDGET",
    "ROUTE_PATH",
    "both_refused",
    "build_pool_request",
    "build_route_request",
    "parse_pool",
    "parse_route",
]

POOL_PATH = "/models/session"
ROUTE_PATH = "/auto"
POOL = "the Copilot Auto session request"
ROUTE = "the Copilot Auto routing request"
# Registration's look at Auto is bounded to this (seconds): it never holds a start up.
PROBE_BUDGET = 2.0
# VS Code's hint when no experiment names another (automodeService.ts).
_HINTS = ["auto"]
_TOKEN = re.compile(r"[\x21-\x7e]{1,8192}")
# What an id must look like to be kept (the catalog's own rule for model ids).
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+\-]{0,127}")
_MAX_MODELS = 256


def _request(
    session: CopilotSession,
    identity: Mapping[str, str],
    path: str,
    what: str,
    body: dict[str, object],
    *,
    budget: float | None,
) -> WireRequest:
    headers = session_headers(session, identity)
    headers["Content-Type"] = "application/json"
    return WireRequest(
        "POST",
        session.endpoint.url(path),
        what,
        tuple(headers.items()),
        body=json.dumps(body, separators=(",", ":")).encode("ascii"),
        retry=True,
        budget=budget,
    )


def build_pool_request(
    session: CopilotSession, identity: Mapping[str, str], *, budget: float | None = None
) -> WireRequest:
    """The pool call: no prompt leaves the machine."""
    return _request(
        session, identity, POOL_PATH, POOL, {"auto_mode": {"model_hints": _HINTS}}, budget=budget
    )


def build_route_request(
    session: CopilotSession,
    identity: Mapping[str, str],
    prompt: str,
    *,
    vision: bool = False,
    tier: str | None = None,
) -> WireRequest:
    """The routing call: the person's last text (at most :data:`PROMPT_LIMIT` characters),
    as VS Code sends it; ``has_image`` only when true, ``tier`` only when chosen."""
    body: dict[str, object] = {"prompt": prompt[:PROMPT_LIMIT]}
    if vision:
        body["has_image"] = True
    if tier is not None:
        body["tier"] = tier
    return _request(session, identity, ROUTE_PATH, ROUTE, body, budget=None)


def _refusal(response: WireResponse, what: str) -> Exception | None:
    """The error for an answer that grants no session (404 is not one: None)."""
    status = response.status
    if status in (200, 404):
        return None
    if status == 401:
        return SessionError(
            f"{what} was refused (HTTP 401): the Copilot session was not accepted; try again",
            code="session_expired",
            retryable=True,
        )
    known = client_outdated_error(response, what) or quota_exceeded_error(response, what)
    if known is not None:
        return known
    if 400 <= status < 500 and status != 429:
        detail = server_message(response)
        return auto_unavailable(
            f"{what} was refused (HTTP {status})"
            + (f": {detail}" if detail else "")
            + "; Copilot Auto is not available to this login now"
        )
    return status_error(response, what)


def _models(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ResponseError(f"{what} answered without a list of models")
    ids = (item for item in value[:_MAX_MODELS] if isinstance(item, str))
    return tuple(dict.fromkeys(i for i in ids if _MODEL_ID.fullmatch(i)))


def _discounts(value: object) -> tuple[tuple[str, float], ...]:
    """``discounted_costs``: a fraction off per model id; an entry that is not a model id
    and a fraction from 0 to 1 is left out (it only ever lowers a shown price)."""
    if not isinstance(value, dict):
        return ()
    kept: list[tuple[str, float]] = []
    for key, fraction in list(value.items())[:_MAX_MODELS]:
        if (
            isinstance(key, str)
            and _MODEL_ID.fullmatch(key)
            and isinstance(fraction, int | float)
            and not isinstance(fraction, bool)
            and math.isfinite(fraction)
            and 0 <= fraction <= 1
        ):
            kept.append((key, float(fraction)))
    return tuple(kept)


def _session(
    response: WireResponse,
    session: CopilotSession,
    what: str,
    body: dict[str, object],
    models: tuple[str, ...],
    *,
    chosen: bool,
) -> AutoSession:
    token = take_secret(body, "session_token", what, shape=_TOKEN)
    if token is None:
        raise ResponseError(f"{what} answered without a session token")
    expires_at = req_number(body, "expires_at", what)
    # Measured from receipt against the server's Date, as the exchange's expiry is.
    date = server_date(response)
    reference = response.received_wall if date is None else date
    lifetime = max(expires_at - reference, 0.0)
    register_secret(token)
    return AutoSession(
        token=token,
        models=models,
        identity=session.identity,
        expires_monotonic=response.received_monotonic + lifetime,
        expires_wall=response.received_wall + lifetime,
        discounts=_discounts(body.get("discounted_costs")),
        chosen=chosen,
    )


@reads_response
def parse_pool(response: WireResponse, session: CopilotSession) -> AutoSession | None:
    """The pool call's session; None when the call is gated off (404)."""
    refused = _refusal(response, POOL)
    if refused is not None:
        raise refused
    if response.status == 404:
        return None
    body = json_object(response, POOL)
    models = _models(body.get("available_models"), POOL)
    return _session(response, session, POOL, body, models, chosen=False)


@reads_response
def parse_route(response: WireResponse, session: CopilotSession) -> AutoSession | None:
    """The routing call's session (its one chosen model); None when gated off (404)."""
    refused = _refusal(response, ROUTE)
    if refused is not None:
        raise refused
    if response.status == 404:
        return None
    body = json_object(response, ROUTE)
    selected = opt_object(body, "selected_model", ROUTE)
    if selected is None:
        raise ResponseError(f"{ROUTE} answered without a selected model")
    model = req_str(selected, "id", ROUTE, max_len=128)
    if not _MODEL_ID.fullmatch(model):
        raise ResponseError(f"{ROUTE} answered with a malformed model id")
    return _session(response, session, ROUTE, body, (model,), chosen=True)


def both_refused() -> EntitlementError:
    return auto_unavailable(
        f"Copilot Auto is not available to this login: {POOL_PATH} and {ROUTE_PATH} both "
        "answered HTTP 404 (GitHub serves them to its own clients only, or not to this "
        "plan); name a model instead, or see https://github.com/settings/copilot"
    )
