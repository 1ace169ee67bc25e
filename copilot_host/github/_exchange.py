"""Step 3: trade the GitHub credential for a short-lived Copilot session (sans-IO).

The answer names the inference origin; it must be on the fixed allowlist before anything
is ever sent there. Deadlines are measured from receipt, against the server's ``Date``.
"""

from __future__ import annotations

import re

from .._errors import (
    CopilotHostError,
    EntitlementError,
    LoginRevokedError,
    ResponseError,
)
from .._origin import default_allowlist
from .._policy import deadlines_from_exchange
from .._redact import register_secret, scrub
from .._seam import CopilotSession, LoginIdentity
from .._secret import Secret
from .._text import clean
from ._headers import EditorIdentity, exchange_headers
from ._status import rate_limit_error, server_date, status_error
from ._urls import COPILOT_TOKEN_URL
from ._wire import (
    WireRequest,
    WireResponse,
    json_object,
    opt_number,
    opt_object,
    opt_str,
    req_number,
    req_str,
)

__all__ = ["KNOWN_NOTIFICATIONS", "build_exchange_request", "entitlement_error", "parse_exchange"]

WHAT = "the Copilot session exchange"
_TOKEN = re.compile(r"[\x21-\x7e]{1,8192}")
_NOTIFICATION_ID = re.compile(r"[a-z][a-z0-9_]{0,63}")
_SETTINGS = "https://github.com/settings/copilot"

# What a person can do about each refusal GitHub explains by id.
KNOWN_NOTIFICATIONS: dict[str, str] = {
    "no_copilot_access": (
        f"this GitHub account has no Copilot access; start a plan or ask your organization "
        f"for a seat at {_SETTINGS}, then log in again"
    ),
    "subscription_ended": (
        f"the Copilot subscription of this GitHub account has ended; renew it at {_SETTINGS}"
    ),
    "feature_flag_blocked": ("GitHub has blocked Copilot for this account; contact GitHub Support"),
    "copilot_disabled": (
        "Copilot is disabled for this account by its organization or enterprise policy; "
        "ask an administrator"
    ),
}


def build_exchange_request(github_token: Secret, editor: EditorIdentity) -> WireRequest:
    headers = exchange_headers(editor)
    headers["Authorization"] = f"token {github_token.reveal()}"
    return WireRequest("GET", COPILOT_TOKEN_URL, WHAT, tuple(headers.items()), retry=True)


def entitlement_error(response: WireResponse) -> CopilotHostError:
    """A 403 that is not a rate limit: a specific message per GitHub notification id."""
    limited = rate_limit_error(response, WHAT)
    if limited is not None:
        return limited
    try:
        body = json_object(response, WHAT)
        details = opt_object(body, "error_details", WHAT) or {}
        notification = opt_str(details, "notification_id", WHAT, max_len=64)
        server_text = opt_str(details, "message", WHAT, max_len=2000) or opt_str(
            body, "message", WHAT, max_len=2000
        )
    except ResponseError:
        notification, server_text = None, None
    detail = scrub(server_text, limit=200) if server_text else ""
    if notification is not None and notification in KNOWN_NOTIFICATIONS:
        return EntitlementError(KNOWN_NOTIFICATIONS[notification], code=notification)
    if notification is not None and _NOTIFICATION_ID.fullmatch(notification):
        return EntitlementError(
            f"GitHub refused a Copilot session ({notification})"
            + (f": {detail}" if detail else f"; see {_SETTINGS}"),
            code=notification,
        )
    return EntitlementError(
        "GitHub refused a Copilot session for this account (HTTP 403)"
        + (f": {detail}" if detail else f"; see {_SETTINGS}")
    )


def parse_exchange(response: WireResponse, identity: LoginIdentity) -> CopilotSession:
    if response.status == 401:
        # Kept on disk: one 401 may be GitHub having a bad minute; the person decides.
        raise LoginRevokedError(
            "GitHub no longer accepts the stored login (revoked or expired); "
            "run `copilot-host login` again"
        )
    if response.status == 403:
        raise entitlement_error(response)
    if response.status != 200:
        raise status_error(response, WHAT)
    body = json_object(response, WHAT)
    token = req_str(body, "token", WHAT, max_len=8192)
    if not _TOKEN.fullmatch(token):
        raise ResponseError(f"{WHAT} answered with a malformed session token")
    expires_at = req_number(body, "expires_at", WHAT)
    refresh_in = opt_number(body, "refresh_in", WHAT)
    endpoints = opt_object(body, "endpoints", WHAT)
    if endpoints is None:
        raise ResponseError(f"{WHAT} answered without the inference endpoint ('endpoints.api')")
    api = req_str(endpoints, "api", WHAT, max_len=2048)
    # Raises OriginError(origin_not_allowed) before the token is even wrapped: nothing is
    # ever sent to an origin that is not on the fixed list.
    endpoint = default_allowlist().vet(api)
    sku = opt_str(body, "sku", WHAT, max_len=200)
    refresh_at, expires_mono, expires_wall = deadlines_from_exchange(
        received_monotonic=response.received_monotonic,
        received_wall=response.received_wall,
        expires_at=expires_at,
        refresh_in=refresh_in,
        server_date=server_date(response),
    )
    secret = Secret(token)
    register_secret(secret)
    return CopilotSession(
        token=secret,
        identity=identity,
        endpoint=endpoint,
        received_at=response.received_monotonic,
        refresh_at=refresh_at,
        expires_at=expires_mono,
        expires_at_wall=expires_wall,
        sku=clean(sku, limit=64) if sku is not None else None,
    )
